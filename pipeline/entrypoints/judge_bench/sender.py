"""Sending: one request at a time, admitted by the limiter and the cost cap, recorded as an `Attempt`."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from tracejudge.entrypoints.judge_bench.requests import BenchRequest
from tracejudge.llm.budget import InProcessBudget
from tracejudge.llm.prices import Price
from tracejudge.llm.providers import ProviderError, RateInfo, Reply, build_payload, rate_info, read_reply, send
from tracejudge.llm.ratelimit import AdaptiveLimiter
from tracejudge.llm.redact import redact
from tracejudge.llm.reply_secrets import prompt_secrets
from tracejudge.stages.judge.calls.reply_notes import server_cut

__all__ = ["PROMPT_MARGIN", "Attempt", "Bench"]

# The provider counts a prompt its own way (its tokenizer, its framing): the worst case held
# against the cost cap allows it 10 % more than tiktoken says.
PROMPT_MARGIN = 1.1


@dataclass
class Attempt:
    """One request sent: when (seconds since the bench started), how it ended, usage, the provider's rate headers."""

    phase: str
    level: int
    metric: str
    start_s: float
    latency_s: float
    outcome: str
    estimate: int
    questions: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    rate: RateInfo | None = None
    message: str = ""
    usage_estimated: bool = False  # the reply reported no (or no plausible) usage: its tokens are estimates
    # An answered reply the run could not use: "truncated" (cut at max_tokens), "unparseable" (no verdict read from
    # it) or "refused" (a 2xx whose reply is the model's refusal: OpenAI `message.refusal`, `finish_reason:
    # content_filter`, Anthropic `stop_reason: refusal`; billed at its usage, as a run bills it); "" for a usable one.
    # The outcome stays "ok": the server answered, which is what the rates and latency measure.
    reply_problem: str = ""
    # Where a reply whose content was empty had its text (`message.reasoning_content`, `reasoning`, Anthropic
    # `thinking`: the server's reasoning parser moved it there), "" otherwise; the run never reads a verdict there.
    reasoning_field: str = ""
    # A truncated reply cut where its prompt and its text filled the model's context window (`Reply.window_full`), not
    # at max_tokens: the setting to change is judge.context_tokens.
    window_full: bool = False
    # A truncated reply the server ended short itself (`reply_notes.server_cut`: counted under max_tokens by the server, or
    # without usage under half of it): a cap of its own, or the judge simulator's `--error-rate` fault, so raising
    # max_tokens does not help.
    cut_short: bool = False


# Requests that failed in a row, none answered since the bench began, after which it sends no more: a server failing
# or refusing every request measures nothing, and sent every request of --requests all the same. A 429 is not one:
# finding the rate limit is what the bench is for.
NO_ANSWER_STOP = 3


def _never_answered(attempts: list[Attempt]) -> bool:
    # Whether the bench's first NO_ANSWER_STOP requests all failed and none was answered since.
    return len(attempts) >= NO_ANSWER_STOP and all(a.outcome not in ("ok", "rate_limited", "quota") for a in attempts)


@dataclass
class _State:
    attempts: list[Attempt] = field(default_factory=list)
    sent: int = 0
    stop: str | None = None


def held_tokens(reply: Reply, body: Any, counter: Any = None) -> int:
    """The output tokens `reply` accounts for: its text and reasoning counted (`counter`, else 4 characters a token), and
    the reasoning tokens the server reported without their text (OpenAI's `usage.completion_tokens_details`)."""
    text = reply.text + reply.reasoning + reply.unread_reasoning
    usage = body.get("usage") if isinstance(body, dict) else None
    details = (usage.get("completion_tokens_details") or usage.get("output_tokens_details")) if isinstance(usage, dict) else None
    hidden = details.get("reasoning_tokens") if isinstance(details, dict) else None
    hidden = hidden if isinstance(hidden, int) and not isinstance(hidden, bool) and hidden > 0 else 0
    return (counter.text(text) if counter is not None else math.ceil(len(text) / 4)) + hidden


def _unusable(br: BenchRequest, reply: Reply, protocol: str, cut: int | None = None) -> tuple[str, str]:
    """Why the run could not use `reply` to `br`: `("truncated", …)` when it stopped at `max_tokens` (a cut verdict is
    never taken, even when what arrived happens to parse, unless it was whole before whitespace alone ran on to the
    limit, as the run reads it), `("unparseable", the parser's message)` when `br.check`
    fails, `("", "")` when it is usable. A check that raises anything at all counts as unparseable: a reply must
    never crash the bench. A reply whose content was empty is said as the run says it (`asking.empty_reply`: where
    the server put the text, and the server setting to change, not `judge.structured_output`). `cut`: the tokens of a
    truncated reply the server cut short itself (`reply_notes.server_cut`, the run's rule), `None` for any other."""
    from tracejudge.stages.judge.calls.answers import ran_on_in_whitespace
    from tracejudge.stages.judge.calls.asking import empty_reply

    said = empty_reply(reply, protocol, extra_body=br.request.extra_body)
    if reply.truncated and br.check is not None and (whole := ran_on_in_whitespace(reply.text)) is not None:
        try:  # (a verdict whole before whitespace alone ran on to the limit: the run takes it, `answers.verdict_before_whitespace`)
            br.check(whole)
            return "", ""
        except Exception:  # noqa: BLE001 - a cut reply, as below
            pass
    if reply.truncated:
        cap = br.request.max_tokens
        if reply.window_full:
            why = f"the reply stopped where the prompt and the reply filled the model's context window, before max_tokens {cap}"
        elif cut is not None:
            # (The judge simulator's `--error-rate` cuts a reply in half and says `length`: "raise max_tokens" sent users
            # after a setting that could not help.)
            held = (f"the server counted {cut} completion tokens, under max_tokens {cap}" if reply.usage_known
                    else f"the reply holds about {cut} tokens, under half of max_tokens {cap}")
            why = (f"finish_reason length, but {held}: the server cut it short itself (a cap of its own, or a fault: "
                   "`tracejudge simulate --error-rate` injects such cuts), not max_tokens")
        else:
            why = f"finish_reason length: the reply stopped at max_tokens {cap}"
        return "truncated", f"{why}; {said}" if said and reply.reasoning else why
    if br.check is None:
        return "", ""
    try:
        br.check(reply.text)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        return "unparseable", said if said and reply.reasoning else f"{exc}; the reply began: {reply.text[:120]!r}"
    return "", ""


class Bench:
    """Sends the bench's requests in turn through one limiter and one budget, recording an `Attempt` for each (times on the bench clock, `t0`)."""

    def __init__(self, *, session: Any, url: str, protocol: str, headers: dict[str, str], requests: list[BenchRequest],
                 limiter: AdaptiveLimiter, budget: InProcessBudget, price: Price | None, max_requests: int, timeout_s: float,
                 structured: str = "json_schema", max_bytes: int = 8 << 20, secrets: tuple[str | None, ...] = (),
                 counter: Any = None) -> None:
        self.session, self.url, self.protocol, self.headers = session, url, protocol, headers
        self.counter = counter  # counts a reply's text when it reports no usage (`judge_tokenizer.prompt_counter`), as a run does
        self.structured, self.max_bytes, self.secrets = structured, max_bytes, secrets
        self.requests = requests
        self.limiter, self.budget, self.price = limiter, budget, price
        self.max_requests, self.timeout_s = max_requests, timeout_s
        self.state = _State()
        self.t0 = time.monotonic()
        self._next = 0

    def _cost(self, tin: int, tout: int, cached: int = 0) -> float:
        return self.price.cost(tin, tout, cached) if self.price else 0.0

    async def one(self, phase: str, level: int, until_s: float | None = None) -> bool:
        """Send the next request; False once a cap stops the bench or `until_s` (bench clock) passed in the admission queue."""
        st = self.state
        if st.stop:
            return False
        if _never_answered(st.attempts):
            st.stop = "errors"
            return False
        if st.sent >= self.max_requests:
            st.stop = "requests"
            return False
        br = self.requests[self._next % len(self.requests)]
        self._next += 1
        prompt = math.ceil(br.prompt_tokens * PROMPT_MARGIN)
        worst = prompt + br.request.max_tokens
        held = await self.budget.hold(worst, self._cost(prompt, br.request.max_tokens))
        if held is None:
            st.stop = "cost cap"
            return False
        st.sent += 1
        permit = None
        with anyio.move_on_after(math.inf if until_s is None else until_s - (time.monotonic() - self.t0)):
            permit = await self.limiter.acquire(worst)
        if permit is None:  # the phase ended while this request waited for admission: never sent
            st.sent -= 1
            self.budget.settle(held, 0, 0.0)
            return False
        start = time.monotonic()
        att = Attempt(phase, level, br.metric, start - self.t0, 0.0, "ok", br.prompt_tokens, br.questions)
        try:
            http = await send(self.session, self.url, self.headers, build_payload(self.protocol, br.request, self.structured), self.timeout_s,
                              self.max_bytes)
            att.latency_s = http.latency_s
            att.rate = rate_info(http.headers)
            reply = read_reply(self.protocol, http, 3600.0, self.secrets)
        except ProviderError as exc:
            att.latency_s = att.latency_s or time.monotonic() - start
            if exc.reply is not None:  # a refusal: answered and billed like any reply (as a run bills it), though it holds no verdict
                att.reply_problem = "refused"
                att.message = " ".join(redact(str(exc), (*self.secrets, *prompt_secrets(br.request))).split())[:600]
                self._settle_answer(att, br, exc.reply, permit, held)
                return True
            att.outcome = exc.kind
            att.message = " ".join(redact(str(exc), (*self.secrets, *prompt_secrets(br.request))).split())[:300]
            att.rate = exc.rate or att.rate
            if exc.billed_reply is not None:  # a malformed 2xx that reported usage: billed as a run bills it, counted a server error
                got = exc.billed_reply
                att.input_tokens, att.output_tokens, att.cached_tokens = got.input_tokens, got.output_tokens, got.cached_input_tokens
                self.limiter.settle(permit, "malformed", got.input_tokens + got.output_tokens, att.rate)
                self.budget.settle(held, got.input_tokens + got.output_tokens, self._cost(got.input_tokens, got.output_tokens, got.cached_input_tokens))
                st.attempts.append(att)
                return True
            self.limiter.settle(permit, exc.kind, None, exc.rate)
            billed = br.prompt_tokens if exc.kind in ("timeout", "connection") else 0
            self.budget.settle(held, billed, self._cost(billed, 0))
            st.attempts.append(att)
            return True
        except BaseException:
            self.limiter.settle(permit, "timeout")
            self.budget.settle(held, worst, self._cost(prompt, br.request.max_tokens))
            raise
        # The run's rule (`server_cut`): the server's own count when it sent one, else the reply counted here (not yet
        # billed, so it holds no estimate of its own). (`held` is the budget's.)
        holds = held_tokens(reply, http.body, self.counter) if reply.truncated and not reply.usage_known else None
        cut = server_cut(reply, br.request.max_tokens, holds)
        att.reply_problem, problem = _unusable(br, reply, self.protocol, cut)
        att.window_full = reply.truncated and reply.window_full
        att.cut_short = cut is not None
        if problem:
            att.reasoning_field = reply.reasoning_field if reply.reasoning and not reply.text.strip() else ""
            att.message = " ".join(redact(problem, (*self.secrets, *prompt_secrets(br.request))).split())[:600]
        self._settle_answer(att, br, reply, permit, held)
        return True

    def _settle_answer(self, att: Attempt, br: BenchRequest, reply: Reply, permit: Any, held: Any) -> None:
        """Bill an answered request (a verdict, an unusable reply or a refusal) at its usage: the limiter, the budget
        (so it counts toward `--max-cost-usd`), the attempt's tokens; then record the attempt."""
        if not reply.usage_known:  # (as a run bills such a reply: the prompt as admitted, the text counted)
            att.usage_estimated = True
            reply.input_tokens = br.prompt_tokens
            text = reply.text + reply.reasoning + reply.unread_reasoning
            reply.output_tokens = self.counter.text(text) if self.counter is not None else math.ceil(len(text) / 4)
        att.input_tokens, att.output_tokens, att.cached_tokens = reply.input_tokens, reply.output_tokens, reply.cached_input_tokens
        self.limiter.settle(permit, "ok", reply.input_tokens + reply.output_tokens, att.rate)
        self.budget.settle(held, reply.input_tokens + reply.output_tokens, self._cost(reply.input_tokens, reply.output_tokens, reply.cached_input_tokens))
        self.state.attempts.append(att)

    async def level(self, phase: str, level: int, count: int | None, until_s: float | None) -> list[Attempt]:
        """`level` workers sending one request after another, `count` in all or until `until_s` (bench clock)."""
        first = len(self.state.attempts)
        self.limiter.max_in_flight = level
        self.limiter.cap = float(level)
        budget = [count if count is not None else math.inf]

        async def worker() -> None:
            while budget[0] > 0 and (until_s is None or time.monotonic() - self.t0 < until_s):
                budget[0] -= 1
                if not await self.one(phase, level, until_s):
                    return

        async with anyio.create_task_group() as tg:
            for _ in range(level):
                tg.start_soon(worker)
        return self.state.attempts[first:]
