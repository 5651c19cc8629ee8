"""The judge client: plan → requests → (cache | budget → limiter → provider with retries) → parsed answers.

Small separate steps, so batched multi-item judging and provider batch APIs
can reuse them:

- `build_request(plan, questions, cfg, omit)` — one provider-neutral request;
- `key_components(...)` / `cache_key` — the content address;
- `Judge.call(request)` — send one request with admission, budget and
  tenacity retries (429, 5xx, timeouts, connection errors; jittered
  exponential backoff, or the provider's `retry-after`; a cap on attempts
  and on total sleep; a `retry-after` beyond `max_retry_after_s` fails at
  once as `rate_limited`);
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
attempt that timed out or lost its connection after sending is billed at
its estimated input tokens (the provider may have processed it); refused
attempts (429, 5xx) and attempts that never connected cost nothing.
Cache hits cost nothing; what they would have cost is counted as saved.

Failures (`Outcome.kind`, copied to the result's `ErrorInfo.kind` and the
score's `details.error_kind`): `parse_error` (no usable verdict after the
repair request), `truncated` (cut at `max_tokens` twice), `timeout`,
`rate_limited`, `auth_error` (401/403), `request_error` (the server refused
the request itself: a 4xx, or a 5xx naming the request's fields; never
retried), `unreachable` (no connection, and no request of the run was ever
answered: never retried) — these three stop the run (`STOPS`) — and
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

import contextvars
import hashlib
import itertools
import math
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from tracejudge.core.config import JudgeConfig
from tracejudge.core.errors import TracejudgeError
from tracejudge.core.log import get_logger
from tracejudge.core.records import JudgeInfo, Score
from tracejudge.llm.budget import Budget
from tracejudge.llm.cache import JudgeCache, canonical
from tracejudge.llm.prices import Price
from tracejudge.llm.providers import (
    JudgeRequest,
    ProviderError,
    Reply,
    auth_headers,
    build_payload,
    public_url,
    rate_info,
    read_reply,
    send,
)
from tracejudge.llm.ratelimit import Limiter
from tracejudge.llm.redact import redact
from tracejudge.llm.replies import request_fix
from tracejudge.llm.spend_journal import SpendJournal
from tracejudge.llm.judge_tokenizer import Spec, prompt_counter, spec_of
from tracejudge.stages.judge.base import ANSWERS_SCHEMA, ANSWERS_SCHEMA_NAME, Plan, Question
from tracejudge.stages.judge.parse import ParseError, parse_parts, parse_scale, parse_yes_no

if TYPE_CHECKING:
    import aiohttp
    from tenacity import RetryCallState

    from tracejudge.stages.judge.batch_runner import BatchRunner
    from tracejudge.stages.judge.fit import Fitted
    from tracejudge.stages.judge.prepare import Prepared, Preparer

__all__ = ["STOPS", "Judge", "JudgeAuthError", "JudgeRequestError", "JudgeStats", "JudgeUnreachable", "Outcome", "build_request", "error_kind", "finish", "key_components", "parse_answers", "question_groups", "request_tokens"]

log = get_logger("tracejudge.judge")

# Why the current task is about to sleep before a retry (set by tenacity's before_sleep, read by `Judge._sleep`).
_retry_reason: contextvars.ContextVar[str] = contextvars.ContextVar("retry_reason", default="a failure")

REPAIR = ("Your previous reply could not be used ({problem}). Reply again with only the JSON object the schema describes "
          "— every question id, nothing else — and keep each reason under 20 words.")


@dataclass
class JudgeStats:
    """Counters of one run segment. Tokens are counts, money US dollars, times seconds."""

    requests: int = 0
    answered: int = 0
    cache_hits: int = 0
    retries: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    timeouts: int = 0
    connection_errors: int = 0
    repairs: int = 0
    judge_errors: int = 0
    skipped_budget: int = 0
    too_long: int = 0
    truncated_prompts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    cost_usd: float = 0.0
    saved_usd: float = 0.0
    saved_tokens: int = 0
    queued_s: float = 0.0
    slept_s: float = 0.0
    sync_equivalent_usd: float = 0.0
    multi_requests: int = 0
    items_batched: int = 0
    items_reasked_alone: int = 0
    items_from_cache: int = 0
    single_flight_shared: int = 0
    requests_split: int = 0
    grouped_requests: int = 0
    parts_reasked_alone: int = 0
    cache_errors: int = 0
    parse_failures: int = 0
    request_errors: int = 0
    truncated_replies: int = 0
    repair_input_tokens: int = 0
    repair_output_tokens: int = 0
    repair_cost_usd: float = 0.0
    latencies: list[float] = field(default_factory=list)
    cache_misses_explained: dict[str, int] = field(default_factory=dict)
    error_kinds: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The summary's `judge` block."""
        lat = sorted(self.latencies)

        def pct(p: float) -> float | None:
            return round(lat[min(len(lat) - 1, int(p * len(lat)))], 4) if lat else None

        rounded = ("latencies", "cost_usd", "saved_usd", "queued_s", "slept_s", "sync_equivalent_usd", "repair_cost_usd", "error_kinds")
        out = {k: v for k, v in self.__dict__.items() if k not in rounded}
        out.update(cost_usd=round(self.cost_usd, 6), saved_usd=round(self.saved_usd, 6), sync_equivalent_usd=round(self.sync_equivalent_usd, 6),
                   repair_cost_usd=round(self.repair_cost_usd, 6), error_kinds=dict(sorted(self.error_kinds.items())),
                   queued_s=round(self.queued_s, 3),
                   slept_s=round(self.slept_s, 3), latency_p50_s=pct(0.5), latency_p95_s=pct(0.95))
        return out


@dataclass
class Outcome:
    """A metric's result on one case: the score and how it ended.

    `status` is the result status it asks for (`ok`, `judge_error`,
    `rate_limited`, `skipped_budget`); `kind` the error kind of a failure
    (see the module doc; empty when `ok`).
    """

    score: Score
    status: str = "ok"
    message: str = ""
    kind: str = ""


class JudgeAuthError(TracejudgeError):
    """The provider refused the credentials (HTTP 401/403): no later request can succeed, so the run stops (exit 2)."""


class JudgeRequestError(TracejudgeError):
    """The judge server refused the request itself (its format, its size): every request would be refused the same way,
    so the run stops (exit 2) naming the server's message and the setting to change."""


class JudgeUnreachable(TracejudgeError):
    """No connection to the judge, and nothing of the run was ever answered: the run stops naming the URL (exit 3)."""

    exit_status = 3


# Error kinds after which no later request can succeed: the stage stops the run at the first.
STOPS = {"auth_error": JudgeAuthError, "request_error": JudgeRequestError, "unreachable": JudgeUnreachable}


def error_kind(exc: ProviderError, reached: bool = True) -> str:
    """The result's error kind for a provider failure: rate_limited, timeout, auth_error, request_error, unreachable
    (never connected while nothing was ever `reached`) or provider_error."""
    if exc.kind in ("rate_limited", "quota"):
        return "rate_limited"
    if exc.kind == "timeout":
        return "timeout"
    if exc.status in (401, 403):
        return "auth_error"
    if exc.kind == "request":
        return "request_error"
    if exc.kind == "unreachable" and not reached:
        return "unreachable"
    return "provider_error"


class _GuardedCache:
    """A `JudgeCache` whose failures (disk full, a corrupt database) are warnings, not failed cases.

    A read that fails is a miss; a write that fails loses only the saving
    on a later run. Each failure counts in `stats.cache_errors`; the first
    is logged.
    """

    def __init__(self, cache: JudgeCache, stats: JudgeStats) -> None:
        self._cache = cache
        self._stats = stats

    @property
    def raw(self) -> JudgeCache:
        """The cache itself, unguarded (its faults raise): for reads whose faults the caller counts (`_failed`)."""
        return self._cache

    def _failed(self, what: str, exc: Exception) -> None:
        self._stats.cache_errors += 1
        if self._stats.cache_errors == 1:
            log.warning("judge cache unusable; judging goes on without it", operation=what, error=f"{type(exc).__name__}: {str(exc)[:200]}")

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return self._cache.get(key)
        except Exception as exc:  # any storage fault: sqlite3, OSError, diskcache's own
            self._failed("read", exc)
            return None

    def put(self, key: str, value: dict[str, Any], components: dict[str, Any], slot: str) -> None:
        try:
            self._cache.put(key, value, components, slot)
        except Exception as exc:
            self._failed("write", exc)

    def explain(self, components: dict[str, Any], slot: str) -> str:
        try:
            return self._cache.explain(components, slot)
        except Exception as exc:
            self._failed("read", exc)
            return "the cache could not be read"


class JudgeStopped(Exception):
    """The run is stopping: a request still waiting for admission is not sent (nothing more is spent)."""


class _BudgetRefused(Exception):
    pass


@dataclass
class _Flight:
    """One request in flight (single flight): waiters get `answers` when `done` is set (`None` if it failed)."""

    done: anyio.Event = field(default_factory=anyio.Event)
    answers: dict[str, Any] | None = None
    usage: dict[str, int] = field(default_factory=dict)


def build_request(plan: Plan, questions: list[Question], cfg: JudgeConfig, omit: int = 0) -> JudgeRequest:
    """The request asking `questions` of `plan` (its case text with `omit` middle steps left out).

    Its schema names exactly the asked question ids (`TC1`…) as required properties.
    """
    metric = plan.metric
    trace = plan.render(omit)
    ask = plan.ask_text(questions)
    return JudgeRequest(
        model=cfg.model,
        messages=({"role": "system", "content": metric.system_prompt(plan.kind)}, {"role": "user", "content": f"{trace}\n\n{ask}"}),
        # Anthropic keeps the shared list schema: its tools come first in its prompt, and one tool for every metric keeps a
        # case's trace in the prefix its metrics share (Anthropic does not decode under the schema, so nothing is lost).
        schema=ANSWERS_SCHEMA if cfg.provider == "anthropic" and plan.kind == "yes_no" else metric.verdict_schema(plan, [plan.full_id(q) for q in questions]),
        schema_name=ANSWERS_SCHEMA_NAME if plan.kind == "yes_no" else "verdict",
        max_tokens=cfg.max_tokens * max(1, len(plan.parts)),  # a grouped plan answers for each of its metrics
        temperature=cfg.temperature,
        cache_prefix=len(trace) if cfg.cache_hints and plan.extra.get("cache_hint", True) else 0,
    )


def request_tokens(req: JudgeRequest, tokenizer: Spec = None) -> int:
    """Estimated prompt tokens of `req` (messages + schema), counted by tiktoken or the `judge.tokenizer` spec (`spec_of`)."""
    return prompt_counter(req.model, tokenizer).messages(list(req.messages), canonical(req.schema))


def key_components(provider: str, base_url: str, req: JudgeRequest, prompt_version: str, rubric: Any, trial: int,
                   structured: str = "json_schema") -> dict[str, Any]:
    """Exactly the cache key components (see `tracejudge.llm.cache`); `structured` enters them only when not `json_schema`,
    so the keys of earlier runs stay valid."""
    return {
        "provider": provider,
        "base_url": base_url,
        "model": req.model,
        "messages": list(req.messages),
        "sampling": {"temperature": req.temperature, "max_tokens": req.max_tokens},
        "response_format": {"name": req.schema_name, "schema": req.schema, **({"mode": structured} if structured != "json_schema" else {})},
        "prompt_version": prompt_version,
        "rubric": rubric,
        "trial": trial,
    }


def parse_answers(plan: Plan, questions: list[Question], text: str) -> dict[str, dict[str, Any]]:
    """Answers by question id (`q1`…; a grouped plan's `TC1`…); raises `ParseError`.

    For a grouped plan only the metrics whose every answer is usable are
    returned (the caller re-asks the others alone); none usable is an error.
    """
    if plan.kind == "scale":
        return {questions[0].id: parse_scale(text, *plan.scale)}
    if plan.parts:
        wanted = {q.id for q in questions}
        parts = [[q for q in (p.full_id(x) for x in p.questions) if q in wanted] for p in plan.parts]
        got, _ = parse_parts(text, [ids for ids in parts if ids])
        return {k: v for answers in got if answers is not None for k, v in answers.items()}
    got = parse_yes_no(text, [plan.full_id(q) for q in questions])
    return {q.id: got[plan.full_id(q)] for q in questions}


def finish(plan: Plan, answers: dict[str, Any]) -> Score:
    """The metric's score from `answers`; for a grouped plan a carrier whose `details.answers` holds the answers
    by prompt id (`TC1`…), which `tracejudge.stages.judge.grouped.split` turns into each metric's score."""
    if plan.parts:
        return Score(value=None, passed=None, reason="grouped answers", details={"answers": answers})
    return plan.metric.finalize(plan, answers)


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
        self.protocol = "anthropic" if cfg.provider == "anthropic" else "openai"
        # Anthropic always gets the schema as a forced tool's input schema, whatever the setting.
        self.structured = cfg.structured_output if self.protocol == "openai" else "json_schema"
        self.tokenizer = spec_of(cfg)
        self.reached = False  # some request of the run got an HTTP reply: the endpoint exists
        self._headers = auth_headers(self.protocol, api_key)
        self.limiter = limiter
        self.budget = budget
        self.stats = JudgeStats()
        self.cache: JudgeCache | None = _GuardedCache(cache, self.stats) if cache is not None else None
        self.price = price
        self.cache_base_url = cache_base_url
        self.explain = explain
        self._secrets = (api_key,)
        self.batches = batches
        self._ratio = 1.0  # provider prompt tokens / our estimate, never below 1
        self._flights: dict[str, _Flight] = {}  # cache key → the identical request in flight
        self.stop: anyio.Event | None = None  # set by the stage: once set, requests still queued are not sent
        self.spend: SpendJournal | None = None  # set by the stage: each paid attempt, on disk before it is used
        # What requests are doing now, for `activity()`: serial → since when (sending) / until when and why (back-off).
        self._serials = itertools.count()
        self._sending: dict[int, float] = {}
        self._backoff: dict[int, tuple[float, str]] = {}
        self._queued = 0
        self._in_batches = 0
        self._prep: Preparer | None = None
        # Set by the stage when `session` is None: connects (and sets `session`, `url`) before the first request is sent.
        self.connect: Callable[[], Awaitable[None]] | None = None

    def _preparer(self) -> Preparer:
        """The `Preparer` of this judge's asks, made on first use."""
        if self._prep is None:
            from tracejudge.stages.judge.prepare import Preparer

            def components(plan: Plan, req: JudgeRequest, trial: int) -> dict[str, Any]:
                return key_components(self.cfg.provider, self.cache_base_url, req, plan.prompt_version, plan.metric.rubric, trial, self.structured)

            def read_failed(exc: Exception, keys: int) -> None:
                for _ in range(keys):  # each ask's read failed, as when read one by one
                    self.cache._failed("read", exc)  # type: ignore[union-attr]

            self._prep = Preparer(self.cfg, components, self.cache.raw if self.cache is not None else None, read_failed)
        return self._prep

    async def prepare_many(self, asks: list[tuple[Plan, list[Question], int]]) -> list[Prepared | Exception]:
        """Each `(plan, questions, trial)` made ready in one trip (`tracejudge.stages.judge.prepare.Preparer.prepare_many`)."""
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

        E.g. `"judge: 3 replies pending (slowest 25 s), 2 in back-off after 429 (next retry in 4 s)"`.
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
        if self._queued:
            pause = getattr(self.limiter, "paused_until", 0.0) - now
            parts.append(f"{self._queued} queued at the rate limit" + (f" (paused {pause:.0f} s by the provider)" if pause >= 0.5 else ""))
        if self._in_batches:
            parts.append(f"{self._in_batches} in provider batches")
        return "judge: " + ", ".join(parts) if parts else None

    # ------------------------------------------------------------------ money

    def _cost(self, input_tokens: int, output_tokens: int, cached: int = 0, written: int = 0) -> float:
        return self.price.cost(input_tokens, output_tokens, cached, written) if self.price else 0.0

    def _count(self, reply: Reply, cost: float) -> None:
        """Count an answered request's usage in the stats and price it on the reply."""
        reply.cost_usd = cost
        self.stats.answered += 1
        self.stats.input_tokens += reply.input_tokens
        self.stats.output_tokens += reply.output_tokens
        self.stats.cached_input_tokens += reply.cached_input_tokens
        self.stats.cache_write_input_tokens += reply.cache_write_input_tokens
        self.stats.cost_usd += cost
        if self.spend is not None:
            self.spend.add(reply.input_tokens, reply.output_tokens, cost)

    # ------------------------------------------------------------------ one request, retried

    async def _sleep(self, seconds: float) -> None:
        self.stats.slept_s += seconds
        serial = next(self._serials)
        self._backoff[serial] = (time.monotonic() + seconds, _retry_reason.get())
        try:
            await anyio.sleep(seconds)
        finally:
            del self._backoff[serial]

    def _before_sleep(self, state: RetryCallState) -> None:
        self.stats.retries += 1
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ProviderError):
            _retry_reason.set(str(exc.status) if exc.status else exc.kind.replace("_", " "))

    def _wait(self, state: RetryCallState) -> float:
        from tenacity import wait_random_exponential

        exc = state.outcome.exception() if state.outcome else None
        backoff = wait_random_exponential(multiplier=0.25, max=20)(state)
        if isinstance(exc, ProviderError) and exc.retry_after_s is not None:
            # What the server asked, plus a little jitter so retries do not arrive together.
            return exc.retry_after_s + random.uniform(0, 0.05 + 0.1 * exc.retry_after_s)
        return backoff

    def _stop(self, state: RetryCallState) -> bool:
        from tenacity import stop_after_attempt

        return stop_after_attempt(self.cfg.max_attempts)(state) or state.idle_for + (state.upcoming_sleep or 0) > self.cfg.max_retry_wait_s

    async def _attempt(self, payload: dict[str, Any], estimate: int) -> Reply:
        # The provider's count of a prompt differs from ours (its tokenizer, its framing);
        # reserving our estimate scaled by the ratio `usage` has shown keeps the
        # admission gate from running ahead of the provider's own bucket.
        prompt_tokens = math.ceil(estimate * self._ratio)
        max_out = int(payload.get("max_tokens") or self.cfg.max_tokens)  # a multi-item request allows more output
        reserve = prompt_tokens + max_out
        held = self.budget.reserve(reserve, self._cost(prompt_tokens, max_out))
        if held is None:
            raise _BudgetRefused()
        self._queued += 1
        try:
            permit = await self.limiter.acquire(reserve)
        finally:
            self._queued -= 1
        if self.stop is not None and self.stop.is_set():
            # Stopping: a request that waited for admission is dropped unsent, so a stop
            # ends spending at once instead of draining the queue during the grace period.
            self.limiter.settle(permit, "ok", 0)
            self.budget.settle(held, 0, 0.0)
            raise JudgeStopped()
        self.stats.queued_s += permit.queued_s
        self.stats.requests += 1
        serial = next(self._serials)
        self._sending[serial] = time.monotonic()
        try:
            http = await send(self.session, self.url, self._headers, payload, self.cfg.timeout_s, self.cfg.max_response_bytes)
            self.reached = True
            permit.flight_s = http.flight_s
            self.stats.latencies.append(http.latency_s)
            reply = read_reply(self.protocol, http, self.cfg.max_retry_after_s, self._secrets)
        except ProviderError as exc:
            self.limiter.settle(permit, exc.kind, None, exc.rate)
            billed = prompt_tokens if exc.kind in ("timeout", "connection") else 0
            self.budget.settle(held, billed, self._cost(billed, 0))
            self.stats.input_tokens += billed
            self.stats.cost_usd += self._cost(billed, 0)
            if self.spend is not None:
                self.spend.add(billed, 0, self._cost(billed, 0))
            if exc.kind in ("rate_limited", "quota"):
                self.stats.rate_limited += 1
            elif exc.kind == "server":
                self.stats.server_errors += 1
            elif exc.kind == "timeout":
                self.stats.timeouts += 1
            elif exc.kind in ("connection", "unreachable"):
                self.stats.connection_errors += 1
            elif exc.kind == "request":
                self.stats.request_errors += 1
            if exc.kind != "unreachable":
                self.reached = True  # something answered (or dropped a sent request): the endpoint exists
            raise
        except BaseException:
            self.limiter.settle(permit, "timeout")
            self.budget.settle(held, prompt_tokens, self._cost(prompt_tokens, 0))
            raise
        finally:
            del self._sending[serial]
        used = reply.input_tokens + reply.output_tokens
        if reply.input_tokens > 0:
            self._ratio = max(1.0, 0.8 * self._ratio + 0.2 * reply.input_tokens / max(1, estimate))
        self.limiter.settle(permit, "ok", used, rate_info(http.headers))
        cost = self._cost(reply.input_tokens, reply.output_tokens, reply.cached_input_tokens, reply.cache_write_input_tokens)
        self.budget.settle(held, used, cost)
        self._count(reply, cost)
        self.stats.sync_equivalent_usd += cost
        return reply

    async def _batch_call(self, payload: dict[str, Any], estimate: int, custom_id: str) -> Reply:
        # Batch mode: no rate limiter (the provider queues the batch); the budget holds the
        # worst case at the batch price until the batch's answer settles it.
        assert self.batches is not None
        prompt_tokens = math.ceil(estimate * self._ratio)
        batch_cost = self.price.batch_cost if self.price else (lambda i, o, c=0, w=0: 0.0)
        max_out = int(payload.get("max_tokens") or self.cfg.max_tokens)
        held = self.budget.reserve(prompt_tokens + max_out, batch_cost(prompt_tokens, max_out))
        if held is None:
            raise _BudgetRefused()
        self.stats.requests += 1
        self._in_batches += 1
        try:
            reply = await self.batches.submit(custom_id, payload)
        except BaseException:
            self.budget.settle(held, 0, 0.0)
            raise
        finally:
            self._in_batches -= 1
        usage = (reply.input_tokens, reply.output_tokens, reply.cached_input_tokens, reply.cache_write_input_tokens)
        cost = batch_cost(*usage)
        self.budget.settle(held, reply.input_tokens + reply.output_tokens, cost)
        self._count(reply, cost)
        self.stats.sync_equivalent_usd += self._cost(*usage)
        return reply

    async def call(self, req: JudgeRequest, key: str | None = None) -> Reply:
        """Send `req` with admission, budget and retries (or, in batch mode, in a provider batch as `key`).

        Raises `ProviderError` (kind `quota` for a daily quota, or the last
        retryable failure once attempts or wait are exhausted, or `fatal`), or
        `_BudgetRefused` when an attempt could cross the budget.
        """
        try:
            reply = await self._call(req, key)
        except ProviderError as exc:
            # The provider's text may echo the request's headers: nothing of it leaves unredacted.
            exc.args = (self.redact(str(exc)),)
            raise
        reply.text = self.redact(reply.text)
        return reply

    def redact(self, text: str) -> str:
        """`text` (copied from a reply) without the configured key or anything shaped like a credential."""
        return redact(text, self._secrets)

    async def _call(self, req: JudgeRequest, key: str | None) -> Reply:
        from tracejudge.stages.judge.fit import count_prompt

        if self.session is None and self.connect is not None:
            await self.connect()
        payload = build_payload(self.protocol, req, self.structured)
        prompt_tokens = await count_prompt(req, self.tokenizer)
        if self.batches is not None:
            custom_id = key or hashlib.sha256(canonical({"protocol": self.protocol, "payload": payload}).encode()).hexdigest()
            return await self._batch_call(payload, prompt_tokens, custom_id)
        from tenacity import AsyncRetrying, retry_if_exception  # here: a run the cache answers whole never retries

        retrying = AsyncRetrying(
            stop=self._stop, wait=self._wait, sleep=self._sleep, reraise=True,
            # A connection refused before anything of the run was ever answered is a wrong URL or a server that is
            # not running: retrying every request of the run only hides that.
            retry=retry_if_exception(lambda e: isinstance(e, ProviderError) and e.retryable and (self.reached or e.kind != "unreachable")),
            before_sleep=self._before_sleep,
        )
        async for attempt in retrying:
            with attempt:
                reply = await self._attempt(payload, prompt_tokens)
        return reply

    def failure(self, exc: ProviderError) -> Outcome:
        """The `Outcome` of a request that got no answer (`exc` already redacted); counts it."""
        kind = error_kind(exc, self.reached)
        self.stats.judge_errors += 1
        self.stats.error_kinds[kind] = self.stats.error_kinds.get(kind, 0) + 1
        details: dict[str, Any] = {"error_kind": kind}
        if exc.status is not None:
            details["http_status"] = exc.status
        if exc.kind == "quota":
            wait = f"the provider asked to wait {exc.retry_after_s:g} s, over max_retry_after_s {self.cfg.max_retry_after_s:g}" \
                if exc.retry_after_s is not None else "the provider reports its quota exhausted"
            msg = f"rate_limited: {wait} (daily quota?): {exc}"
            return Outcome(Score(value=None, passed=None, reason=msg, details=details), "rate_limited", msg, kind)
        msg = f"{kind}: {exc}"
        if kind == "request_error":
            msg += f"; {request_fix(str(exc))}"
        elif kind == "unreachable":
            msg = f"unreachable: cannot reach the judge at {public_url(self.url)} ({exc}); nothing of the run was answered"
        return Outcome(Score(value=None, passed=None, reason=msg, details=details), "judge_error", msg, kind)

    def _note_truncation(self, plan: Plan, fitted: Fitted) -> None:
        """Count a request that was truncated to fit and say on `plan` what was left out or cut."""
        from tracejudge.stages.judge.conversation import omitted_note

        self.stats.truncated_prompts += 1
        notes = [omitted_note(plan.steps, fitted.omit)] if fitted.omit else []
        if fitted.cut:
            notes.append(f"{', '.join(dict.fromkeys(fitted.cut))} cut to {fitted.cap:,} characters to fit the judge's context (too_long: truncate)")
        plan.note = "; ".join([plan.note, *notes] if plan.note else notes)

    def _hit(self, hit: dict[str, Any], info: JudgeInfo) -> dict[str, Any]:
        """The answers of a cached entry `hit`, counted as a hit (in `info` and the stats, with what it saved)."""
        info.requests += 1
        self.stats.cache_hits += 1
        u = hit.get("usage", {})
        self.stats.saved_tokens += u.get("input_tokens", 0) + u.get("output_tokens", 0)
        self.stats.saved_usd += self._cost(u.get("input_tokens", 0), u.get("output_tokens", 0))
        info.cached_requests += 1
        answers: dict[str, Any] = hit["answers"]
        return answers

    # ------------------------------------------------------------------ one question group

    async def ask(self, plan: Plan, questions: list[Question], trial: int, slot: str, info: JudgeInfo,
                  repair: bool = True, ready: Prepared | Exception | None = None) -> tuple[dict[str, Any] | None, Outcome | None]:
        """Answers for `questions`, or an `Outcome` saying why there are none (`repair`: one repair request when unusable;
        `ready`: this request already made ready by `prepare_many`, or what that raised for it)."""
        # Rendering, counting, truncating, keying and the cache read run in a worker thread, shared with the asks
        # ready at the same time (`tracejudge.stages.judge.prepare`): a long trace never holds the loop.
        if ready is None:
            ready = await self._preparer().prepare(plan, questions, trial)
        elif isinstance(ready, Exception):
            raise ready
        fitted = ready.fitted
        req, tokens, limit = fitted.req, fitted.tokens, self.cfg.context_tokens - fitted.req.max_tokens
        if not fitted.fits:
            self.stats.too_long += 1
            score = Score(value=None, passed=None, reason=f"too_long: the judge prompt has {tokens} tokens, over the {limit} that fit "
                          f"(context_tokens {self.cfg.context_tokens} − max_tokens {fitted.req.max_tokens}; too_long: {self.cfg.too_long})",
                          details={"too_long_tokens": tokens})
            return None, Outcome(score, "ok")
        if fitted.truncated:
            self._note_truncation(plan, fitted)

        comps, key = ready.components, ready.key
        assert comps is not None and key is not None  # (a request that fits is keyed)
        if self.cache is not None:
            hit = ready.hit
            if hit is not None:
                return self._hit(hit, info), None
            if self.explain:
                why = self.cache.explain(comps, slot)
                info.cache_miss = why if info.cache_miss is None else f"{info.cache_miss}; {why}"
                self.stats.cache_misses_explained[why] = self.stats.cache_misses_explained.get(why, 0) + 1
        # Single flight: an identical request already in flight is not sent again; this
        # ask waits for its answer. A flight that failed shares nothing: each waiter then
        # asks on its own (and gets its own error), all at once rather than one by one.
        flight = self._flights.get(key)
        if flight is not None:
            await flight.done.wait()
            if flight.answers is not None:
                info.requests += 1
                info.cached_requests += 1
                self.stats.cache_hits += 1
                self.stats.single_flight_shared += 1
                u = flight.usage
                self.stats.saved_tokens += u["input_tokens"] + u["output_tokens"]
                self.stats.saved_usd += self._cost(u["input_tokens"], u["output_tokens"], u.get("cached_input_tokens", 0))
                return flight.answers, None
            return await self._ask_uncached(plan, questions, req, key, comps, slot, info, repair=repair)
        flight = self._flights[key] = _Flight()
        try:
            answers, bad = await self._ask_uncached(plan, questions, req, key, comps, slot, info, flight.usage, repair)
            flight.answers = answers
            return answers, bad
        finally:
            del self._flights[key]
            flight.done.set()

    async def _ask_uncached(self, plan: Plan, questions: list[Question], req: JudgeRequest, key: str, comps: dict[str, Any], slot: str,
                            info: JudgeInfo, used: dict[str, int] | None = None, repair: bool = True) -> tuple[dict[str, Any] | None, Outcome | None]:
        """`ask` past the cache: the request, at most one repair request (none unless `repair`), parsing and the cache write."""
        used = used if used is not None else {}
        used.update(input_tokens=0, output_tokens=0)
        raw = ""
        problem, kind = "", "parse_error"
        may_repair = repair
        for repair in ((False, True) if may_repair else (False,)):
            if repair:
                self.stats.repairs += 1
                req = JudgeRequest(req.model, (*req.messages, {"role": "assistant", "content": raw or "(empty)"},
                                               {"role": "user", "content": REPAIR.format(problem=problem)}),
                                   req.schema, req.schema_name, req.max_tokens, req.temperature, req.cache_prefix)
            try:
                info.requests += 1  # repair requests count: they are paid for like any other
                reply = await self.call(req, key=None if repair else key)
            except _BudgetRefused:
                self.stats.skipped_budget += 1
                return None, Outcome(Score(value=None, passed=None, reason="skipped_budget: this request could cross the judge budget"), "skipped_budget",
                                     "a judge request could cross the token or dollar budget; resume with a larger budget to finish it", "skipped_budget")
            except ProviderError as exc:
                return None, self.failure(exc)
            info.input_tokens += reply.input_tokens
            info.output_tokens += reply.output_tokens
            info.cached_input_tokens += reply.cached_input_tokens
            info.cost_usd += reply.cost_usd
            used["input_tokens"] += reply.input_tokens
            used["output_tokens"] += reply.output_tokens
            if repair:
                self.stats.repair_input_tokens += reply.input_tokens
                self.stats.repair_output_tokens += reply.output_tokens
                self.stats.repair_cost_usd += reply.cost_usd
            raw = reply.text
            if reply.truncated:
                self.stats.truncated_replies += 1
                problem, kind = f"it was cut off at max_tokens={req.max_tokens}", "truncated"
                continue
            try:
                answers = parse_answers(plan, questions, raw)
            except ParseError as exc:
                self.stats.parse_failures += 1
                problem, kind = str(exc), "parse_error"
                continue
            if self.cache is not None:
                self.cache.put(key, {"answers": answers, "text": raw, "usage": used}, comps, slot)
            return answers, None
        self.stats.judge_errors += 1
        self.stats.error_kinds[kind] = self.stats.error_kinds.get(kind, 0) + 1
        msg = f"{kind}: unusable verdict" + (" after one repair request" if may_repair else "") + f" ({problem})"
        return None, Outcome(Score(value=None, passed=None, reason=msg, details={"raw": raw[:8000], "error_kind": kind}), "judge_error",
                             f"{msg}; raw reply: {raw[:2000]}", kind)

    # ------------------------------------------------------------------ one metric, one case

    async def judge(self, plan: Plan, trial: int, slot: str, one_per_request: bool, repair: bool = True,
                    ready: list[Prepared | Exception] | None = None) -> Outcome:
        """All requests of `plan`; the metric's score, or the first failure (`repair`: see `ask`; `ready`: each request
        of `question_groups(plan, one_per_request)` already made ready by `prepare_many`, in that order)."""
        groups = question_groups(plan, one_per_request)
        info = JudgeInfo(model=self.cfg.model)
        answers: dict[str, Any] = {}
        failure: Outcome | None = None
        t0 = time.perf_counter()

        async def one(i: int, group: list[Question]) -> None:
            nonlocal failure
            got, bad = await self.ask(plan, group, trial, f"{slot}#{i}" if len(groups) > 1 else slot, info, repair, ready[i] if ready else None)
            if bad is not None:
                failure = failure or bad
            else:
                answers.update(got or {})

        if len(groups) == 1:
            await one(0, groups[0])
        else:
            async with anyio.create_task_group() as tg:
                for i, group in enumerate(groups):
                    tg.start_soon(one, i, group)
        return self._judged(plan, info, answers, failure, len(groups), t0)

    def is_hit(self, ready: Prepared | Exception) -> bool:
        """Whether `ask` would answer this request (made ready by `prepare_many`) from the cache, sending nothing."""
        return self.cache is not None and not isinstance(ready, Exception) and ready.fitted.fits and ready.hit is not None

    def from_cache(self, plan: Plan, ready: list[Prepared | Exception]) -> Outcome:
        """What `judge` gives for `plan` when the cache answers every one of its requests, without a task or a wait:
        `ready` holds each request of `question_groups(plan, …)` made ready (`prepare_many`), in that order, each a hit
        (`is_hit`; raises `ValueError` otherwise, with nothing counted)."""
        if not all(self.is_hit(r) for r in ready):
            raise ValueError("from_cache: a request that is not a cache hit")
        t0 = time.perf_counter()
        info = JudgeInfo(model=self.cfg.model)
        answers: dict[str, Any] = {}
        for r in ready:  # in the order `judge`'s asks resume in: each hit's notes and answers as `ask` adds them
            assert not isinstance(r, Exception) and r.hit is not None
            if r.fitted.truncated:
                self._note_truncation(plan, r.fitted)
            answers.update(self._hit(r.hit, info))
        return self._judged(plan, info, answers, None, len(ready), t0)

    def _judged(self, plan: Plan, info: JudgeInfo, answers: dict[str, Any], failure: Outcome | None, requests: int, t0: float) -> Outcome:
        """The outcome of `plan` once its `requests` requests were asked (`t0`: when asking began, `perf_counter`)."""
        info.cached = info.cached_requests == requests
        info.latency_s = round(time.perf_counter() - t0, 4)
        info.cost_usd = round(info.cost_usd, 8)
        if failure is not None:
            failure.score.judge = info
            return failure
        score = finish(plan, answers)
        score.judge = info
        return Outcome(score)


def question_groups(plan: Plan, one_per_request: bool) -> list[list[Question]]:
    """The questions of `plan` as `Judge.judge` asks them, one request per group: each alone (`one_per_request`, yes/no) or all together."""
    return [[q] for q in plan.questions] if one_per_request and plan.kind == "yes_no" else [plan.questions]
