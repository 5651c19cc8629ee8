"""The judge client: plan → requests → (cache | budget → limiter → provider with retries) → parsed answers.

Small separate steps, so batched multi-item judging and provider batch APIs
can reuse them:

- `build_request(plan, questions, cfg, omit)` — one provider-neutral request;
- `key_components(...)` / `cache_key` — the content address (with, for a
  self-hosted server, the weights it says it serves: `calls.served`, learnt
  before the first cache read and again after each outage of the server);
- `Judge.call(request)` — send one request with admission, budget and
  retries (`calls.sending`: a 429, a 500, a malformed reply or a dropped
  connection retried with jittered exponential backoff, or the provider's
  `retry-after`, up to `max_attempts`; a timeout sent again once, or, while
  no request of the run was answered, waited out at the gate; a server
  down — 502, 503, 504, 529, a connection refused — waited out at the judge's
  shared gate, `calls.gate`, for `max_retry_wait_s`, and a server that gives no
  reply at all given up after as long; a `retry-after` beyond
  `max_retry_after_s` fails at once as `rate_limited`);
- `parse_answers(plan, questions, text)` — strict parsing;
- `Judge.ask(...)` — the above for one request, plus at most one repair
  request when the answer does not parse or was truncated;
- single flight: an `ask` whose cache key is already in flight waits for
  that request's answers instead of sending its own (a failed flight shares
  nothing; each waiter then asks alone);
- `Judge.judge(plan, trial, slot)` — all requests of one metric on one case.

Multi-item requests (`tracejudge.stages.judge.multi.judge_items`) and batch mode
(`judge.mode: batch`: `Judge.call` hands the payload to a
`tracejudge.stages.judge.batch_runner.BatchRunner` under the request's cache key as
`custom_id`, billed at the batch price, with `sync_equivalent_usd`
counting what the same answers would have cost synchronously) build on
these steps.

Billing: every attempt that got an answer is billed at its `usage`; an
answer without usage at its estimated tokens, its dollars unknown (None); an
attempt that timed out or lost its connection after sending is billed at
its estimated input tokens (the provider may have processed it), in the
summary and in the judge block of the score it was sent for; refused
attempts (429, 5xx) and attempts that never connected cost nothing.
Cache hits cost nothing; what they would have cost is counted as saved.

Failures (`Outcome.kind`, copied to the result's `ErrorInfo.kind` and the
score's `details.error_kind`): `parse_error` (no usable verdict after the
repair request), `truncated` (cut at `max_tokens` twice), `timeout`,
`rate_limited`, `auth_error` (401/403), `request_error` (the server refused
the request itself: a 4xx, or a 5xx naming the request's fields; never
retried), `context_exceeded` (the server refused this request's prompt as longer than its context; never retried,
that case's error alone), `body_too_large` (a 413: the request's body is larger than the server, or a proxy before it,
accepts; the same), `unreachable` (no connection, or connections accepted and never
replied to, and no request of the run was ever answered: never retried) — `auth_error`, `request_error` and `unreachable` stop the run (`STOPS`) — and
`provider_error` (any other refusal, `details.http_status` set when there
was one; a 200 reply with an error body, a malformed reply or one over
`judge.max_response_bytes` carries what was wrong).

How the verdict schema is sent follows `judge.structured_output`
(`tracejudge.llm.providers.build_payload`); a mode other than `json_schema`
enters the cache key. Prompt tokens are counted with `judge.tokenizer`
(`tracejudge.llm.judge_tokenizer`).
Text copied from a reply — verdict text, reasons, error messages — is
passed through `tracejudge.llm.redact.redact` with the configured key first.
The cache is an optimisation: a cache that cannot be read or written is
skipped with a warning (`cache_errors` in the summary), never a failed case.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from tracejudge.core.config import JudgeConfig
from tracejudge.core.extra_body import secrets
from tracejudge.llm.budget import Budget
from tracejudge.llm.cache import JudgeCache
from tracejudge.llm.prices import Price
from tracejudge.llm.providers import JudgeRequest, Reply, auth_headers, protocol_of
from tracejudge.llm.ratelimit import Limiter
from tracejudge.llm.redact import redact
from tracejudge.llm.spend_journal import MemberSpend, SpendJournal
from tracejudge.llm.judge_tokenizer import spec_of
from tracejudge.stages.judge.base import Plan, Question
from tracejudge.stages.judge.calls import asking, sending, served
from tracejudge.stages.judge.calls.failure import failure as failure_outcome
from tracejudge.stages.judge.calls.answers import finish, parse_answers, question_groups
from tracejudge.stages.judge.calls.asking import _Flight
from tracejudge.stages.judge.calls.guarded_cache import GuardedCache
from tracejudge.stages.judge.calls.outcome import (
    STOPS,
    JudgeAuthError,
    JudgeRequestError,
    JudgeStopped,
    JudgeUnreachable,
    Outcome,
    _BudgetRefused,
    error_kind,
)
from tracejudge.stages.judge.calls.request import Wire, build_request, key_components, request_tokens, wire_of
from tracejudge.stages.judge.calls.prompt_cut import Ceiling
from tracejudge.stages.judge.calls.stats import JudgeStats

if TYPE_CHECKING:
    import aiohttp

    from tracejudge.stages.judge.batch_runner import BatchRunner
    from tracejudge.stages.judge.prepare import Prepared, Preparer

# The client's parts live in `tracejudge.stages.judge.calls`; every name this module held is importable from here as before.
__all__ = ["STOPS", "Judge", "JudgeAuthError", "JudgeRequestError", "JudgeStats", "JudgeUnreachable", "Outcome", "build_request", "error_kind", "finish", "key_components", "parse_answers", "question_groups", "request_tokens"]


class Judge:
    """Sends judge requests for one run: one shared session, limiter, budget, cache and stats.

    `cache_base_url` is the base URL as it enters cache keys (the simulator's
    changes every start, so its key uses a fixed name).
    """

    def __init__(self, cfg: JudgeConfig, *, session: aiohttp.ClientSession | None, url: str, api_key: str | None, limiter: Limiter,
                 budget: Budget, cache: JudgeCache | None, price: Price | None, cache_base_url: str, explain: bool = False,
                 batches: BatchRunner | None = None) -> None:
        self.cfg = cfg
        self.session = session
        self.url = url
        self.protocol, self.structured = protocol_of(cfg)  # (Anthropic gets the schema as a forced tool's, whatever the setting)
        self.tokenizer = spec_of(cfg)
        self.reached = False  # some request of the run got an HTTP reply: the endpoint exists
        self._headers = auth_headers(self.protocol, api_key)
        self.limiter = limiter
        self.budget = budget
        self.stats = JudgeStats()
        self.cache: JudgeCache | None = GuardedCache(cache, self.stats) if cache is not None else None
        self.price = price
        self.cache_base_url = cache_base_url
        self.explain = explain
        self._secrets = (api_key, *secrets(cfg.extra_body))  # (a server may echo the request it refused)
        self.batches = batches
        self._ratio = 1.0  # provider prompt tokens / our estimate, never below 1
        self._flights: dict[str, _Flight] = {}  # cache key → the identical request in flight
        self._landed: OrderedDict[str, _Flight] = OrderedDict()  # cache key → the last answered flight (`asking.LANDED` at most)
        self.stop: anyio.Event | None = None  # set by the stage: once set, requests still queued are not sent
        self.spend: SpendJournal | MemberSpend | None = None  # set by the stage: each paid attempt, on disk before it is used
        # What requests are doing now, for `activity()`: serial → since when (sending) / until when and why (back-off).
        self._serials = itertools.count()
        self._sending: dict[int, float] = {}
        self._backoff: dict[int, tuple[float, str]] = {}
        self._at_gate = 0  # requests waiting at the server's gate (`calls.gate`): down or too slow
        # The server's slots when it says how many requests it computes at once (`calls.served`): none sent beyond them.
        self.slots: anyio.Semaphore | None = None
        self.slot_count = 0
        self._slot_waiting = 0
        self._queued = 0
        self.usage_problem_told = False  # (`calls.sending.estimate_usage`: implausible usage is warned about once a judge)
        self.prompt_cut_told = False  # (`calls.prompt_cut`: a server cutting prompts is warned about once a judge)
        self.prompt_ceiling = Ceiling()  # (`calls.prompt_cut`: the count a server cutting to its context reports for long prompts)
        self._in_batches = 0
        self._prep: Preparer | None = None
        # Set by the stage when `session` is None: connects (and sets `session`, `url`) before the first request is sent.
        self.connect: Callable[[], Awaitable[None]] | None = None
        # What a self-hosted server says of its weights, in every cache key of the run (`calls.served`, before the first read).
        self.served_model: dict[str, Any] | None = None
        self.served_said: dict[str, Any] | None = None  # (what it said last, with or without a cache: what results record)
        self.served_learnt = False
        self._served_lock: anyio.Lock | None = None
        # Asked again after each outage of the server (`calls.gate`'s `reopened`): what it said after each, by outage.
        self.served_epoch = 0
        self.served_at: dict[int, dict[str, Any] | None] = {}

    def _preparer(self) -> Preparer:
        """The `Preparer` of this judge's asks, made on first use."""
        if self._prep is None:
            from tracejudge.stages.judge.prepare import Preparer

            def components(plan: Plan, req: JudgeRequest, trial: int) -> dict[str, Any]:
                return key_components(self.cfg.provider, self.cache_base_url, req, plan.prompt_version, plan.metric.rubric, trial, self.structured,
                                      self.served_model)

            def read_failed(exc: Exception, keys: int) -> None:
                for _ in range(keys):  # each ask's read failed, as when read one by one
                    self.cache._failed("read", exc)  # type: ignore[union-attr]

            def wire(req: JudgeRequest, tokens: int) -> Wire:
                return wire_of(req, self.protocol, self.structured, tokens)

            self._prep = Preparer(self.cfg, components, self.cache.raw if self.cache is not None else None, read_failed, wire)
        return self._prep

    async def prepare_many(self, asks: list[tuple[Plan, list[Question], int]]) -> list[Prepared | Exception]:
        """Each `(plan, questions, trial)` made ready in one trip (`tracejudge.stages.judge.prepare.Preparer.prepare_many`)."""
        await self.learn_served()
        return await self._preparer().prepare_many(asks)

    def pace(self, cases: int) -> float | None:
        """Cases per second the rate limiter admits at most, from the requests and tokens `cases` judged cases took; `None` until one was answered (or for a limiter that cannot say)."""
        admitted = getattr(self.limiter, "admitted_rps", None)
        if admitted is None or cases <= 0 or self.stats.answered <= 0:
            return None
        per_request = (self.stats.input_tokens + self.stats.output_tokens) / self.stats.answered
        return float(admitted(per_request)) * cases / self.stats.answered

    def activity(self) -> str | None:
        """What the judge waits on right now, in a few words, or `None` when nothing is outstanding.

        E.g. `"judge: 3 replies pending (slowest 25 s), 2 in back-off after 429 (next retry in 4 s)"`, or
        `"judge: 128 held: connection refused for 12 s, next try in 2 s, gives up in 288 s
        (judge.max_retry_wait_s 300 s)"` (`calls.gate.Gate.activity`).
        """
        now = time.monotonic()
        parts = []
        if self._sending:
            n = len(self._sending)
            parts.append(f"{n} {'reply' if n == 1 else 'replies'} pending (slowest {now - min(self._sending.values()):.0f} s)")
        if self._backoff:
            why = Counter(reason for _, reason in self._backoff.values())
            wake = max(0.0, min(until for until, _ in self._backoff.values()) - now)
            parts.append(f"{len(self._backoff)} in back-off after {' / '.join(k for k, _ in why.most_common())}"
                         f" (next retry in {wake:.0f} s)")
        if self._slot_waiting and self.slots is not None:
            parts.append(f"{self._slot_waiting} waiting for a free slot of the server ({self.slot_count} computed at a time)")
        gate = getattr(self, "_gate", None)
        if self._at_gate and gate is not None:
            parts.append(gate.activity(self._at_gate, now))
        if self._queued:
            pause = getattr(self.limiter, "paused_until", 0.0) - now
            in_flight, cap = getattr(self.limiter, "in_flight", None), getattr(self.limiter, "cap", None)
            # What holds them: the in-flight cap (max_in_flight, or less while it grows back after a 429) or RPM/TPM.
            held = (f"behind the in-flight cap ({int(cap)} sent at a time)" if in_flight is not None and cap is not None
                    and in_flight >= max(1, int(cap)) and pause < 0.5 else "at the rate limit")
            parts.append(f"{self._queued} queued {held}" + (f" (paused {pause:.0f} s by the provider)" if pause >= 0.5 else ""))
        if self._in_batches:
            parts.append(f"{self._in_batches} in provider batches")
        return "judge: " + ", ".join(parts) if parts else None

    # ------------------------------------------------------------------ money

    def _cost(self, input_tokens: int, output_tokens: int, cached: int = 0, written: int = 0) -> float:
        return self.price.cost(input_tokens, output_tokens, cached, written) if self.price else 0.0

    def _count(self, reply: Reply, cost: float) -> None:
        """Count an answered request's usage in the stats and price it on the reply.

        The reply's price is None (unknown) when it billed tokens of a model without a price, or when it reported no
        usage (`Reply.usage_known` False: its tokens are estimates): the scores it answers say so, rather than $0. The
        stats, the budget and the spend journal count such dollars as 0 for an unpriced model and at the estimate for
        a reply without usage (the summary reports them as unknown, `stage_summary`).
        """
        unknown = (self.price is None and reply.input_tokens + reply.output_tokens > 0) or not reply.usage_known
        reply.cost_usd = None if unknown else cost
        self.stats.answered += 1
        self.stats.input_tokens += reply.input_tokens
        self.stats.output_tokens += reply.output_tokens
        self.stats.cached_input_tokens += reply.cached_input_tokens
        self.stats.cache_write_input_tokens += reply.cache_write_input_tokens
        self.stats.cost_usd += cost
        if self.spend is not None:
            self.spend.add(reply.input_tokens, reply.output_tokens, cost, answered=True)

    def redact(self, text: str, quoted: tuple[str, ...] = ()) -> str:
        """`text` (copied from a reply) without the configured key, the `quoted` values (credentials the request's
        prompt held, `reply_secrets.prompt_secrets`) or anything shaped like a credential."""
        return redact(text, (*self._secrets, *quoted))

    # ------------------------------------------------------------------ one request, retried (`calls.sending`)

    _sleep = sending.sleep
    _before_sleep = sending.before_sleep
    _wait = sending.wait
    _stop = sending.stop
    _attempt = sending.attempt_in_slot
    _batch_call = sending.batch_call
    _estimate_usage = sending.estimate_usage
    call = sending.call
    _call = sending.call_retried
    failure = failure_outcome

    learn_served = served.learn_served
    recorded_served = served.recorded_served
    answered_by = served.answered_by
    keyed_as_answered = served.keyed_as_answered

    # ------------------------------------------------------------------ asking: one question group, one metric on one case (`calls.asking`)

    _note_truncation = asking.note_truncation
    _hit = asking.hit
    ask = asking.ask
    _ask_uncached = asking.ask_uncached
    judge = asking.judge
    is_hit = asking.is_hit
    from_cache = asking.from_cache
    _judged = asking.judged
