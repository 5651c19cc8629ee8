"""One judge request sent: budget, admission by the rate limiter, tenacity retries, billing (or a provider batch).

These functions are the bodies of `Judge`'s methods of the same names
(`client.Judge` binds them, hence `self`); see `tracejudge.stages.judge.client`
for the retry and billing rules.
"""

from __future__ import annotations

import contextvars
import hashlib
import math
import random
import time
from typing import TYPE_CHECKING, Any

import anyio
from tracejudge.core.records import Score
from tracejudge.llm.cache import canonical
from tracejudge.llm.providers import JudgeRequest, ProviderError, Reply, build_payload, public_url, rate_info, read_reply, send
from tracejudge.llm.replies import not_found_fix, request_fix
from tracejudge.stages.judge.calls.outcome import JudgeStopped, Outcome, _BudgetRefused, error_kind
from tracejudge.stages.judge.calls.prompt_cut import check_prompt_cut
from tracejudge.stages.judge.calls.stats import sum_usd

if TYPE_CHECKING:
    from tenacity import RetryCallState

    from tracejudge.stages.judge.calls.request import Wire
    from tracejudge.stages.judge.client import Judge

__all__ = ["attempt", "batch_call", "before_sleep", "call", "call_retried", "estimate_usage", "failure", "sleep", "stop", "wait"]

# Why the current task is about to sleep before a retry (set by tenacity's before_sleep, read by `Judge._sleep`).
_retry_reason: contextvars.ContextVar[str] = contextvars.ContextVar("retry_reason", default="a failure")
# Set while the judge stage judges a case a live agent already answered: a stop does not drop its requests
# (redoing the case on resume would pay the agent call again); the stage's grace still bounds them.
paid_case: contextvars.ContextVar[bool] = contextvars.ContextVar("paid_case", default=False)


async def sleep(self: Judge, seconds: float) -> None:
    self.stats.slept_s += seconds
    serial = next(self._serials)
    self._backoff[serial] = (time.monotonic() + seconds, _retry_reason.get())
    try:
        await anyio.sleep(seconds)
    finally:
        del self._backoff[serial]


def before_sleep(self: Judge, state: RetryCallState) -> None:
    self.stats.retries += 1
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, ProviderError):
        _retry_reason.set(str(exc.status) if exc.status else exc.kind.replace("_", " "))


def wait(self: Judge, state: RetryCallState) -> float:
    from tenacity import wait_random_exponential

    exc = state.outcome.exception() if state.outcome else None
    backoff = wait_random_exponential(multiplier=0.25, max=20)(state)
    if isinstance(exc, ProviderError) and exc.retry_after_s is not None:
        # What the server asked, plus a little jitter so retries do not arrive together.
        return exc.retry_after_s + random.uniform(0, 0.05 + 0.1 * exc.retry_after_s)
    return backoff


def stop(self: Judge, state: RetryCallState) -> bool:
    from tenacity import stop_after_attempt

    return stop_after_attempt(self.cfg.max_attempts)(state) or state.idle_for + (state.upcoming_sleep or 0) > self.cfg.max_retry_wait_s


async def attempt(self: Judge, payload: dict[str, Any], estimate: int, body: bytes | None = None) -> Reply:
    # The provider's count of a prompt differs from ours (its tokenizer, its framing);
    # reserving our estimate scaled by the ratio `usage` has shown keeps the
    # admission gate from running ahead of the provider's own bucket.
    prompt_tokens = math.ceil(estimate * self._ratio)
    max_out = int(payload.get("max_tokens") or self.cfg.max_tokens)  # a multi-item request allows more output
    reserve = prompt_tokens + max_out
    held = await self.budget.hold(reserve, self._cost(prompt_tokens, max_out))
    if held is None:
        raise _BudgetRefused()
    self._queued += 1
    try:
        permit = await self.limiter.acquire(reserve)
    finally:
        self._queued -= 1
    if self.stop is not None and self.stop.is_set() and not paid_case.get():
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
        http = await send(self.session, self.url, self._headers, payload, self.cfg.timeout_s, self.cfg.max_response_bytes, body)
        self.reached = True
        permit.flight_s = http.flight_s
        self.stats.latencies.append(http.latency_s)
        reply = read_reply(self.protocol, http, self.cfg.max_retry_after_s, self._secrets)
        rate = rate_info(http.headers)
    except ProviderError as exc:
        if exc.kind == "connection" and exc.no_reply and not self.reached:
            exc = await _dropped_unanswered(self, exc)
        self.limiter.settle(permit, exc.kind, None, exc.rate)
        billed = prompt_tokens if exc.kind in ("timeout", "connection") else 0
        self.budget.settle(held, billed, self._cost(billed, 0))
        self.stats.input_tokens += billed
        self.stats.cost_usd += self._cost(billed, 0)
        if self.spend is not None:
            self.spend.add(billed, 0, self._cost(billed, 0))
        # What this attempt cost, for the score it was sent for (`call_retried` adds up a call's attempts).
        exc.billed_input_tokens, exc.billed_cost_usd = billed, None if self.price is None and billed else self._cost(billed, 0)
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
        raise exc from None
    except BaseException:
        self.limiter.settle(permit, "timeout")
        self.budget.settle(held, prompt_tokens, self._cost(prompt_tokens, 0))
        raise
    finally:
        del self._sending[serial]
    if not reply.usage_known:
        self._estimate_usage(reply, prompt_tokens)
    elif check_prompt_cut(self, reply, estimate):
        pass  # a server that cut the prompt counted only part of it: that teaches the tokenizer ratio nothing either
    elif reply.input_tokens > 0:  # (an estimate teaches the ratio nothing)
        self._ratio = max(1.0, 0.8 * self._ratio + 0.2 * reply.input_tokens / max(1, estimate))
    used = reply.input_tokens + reply.output_tokens
    self.limiter.settle(permit, "ok", used, rate)
    cost = self._cost(reply.input_tokens, reply.output_tokens, reply.cached_input_tokens, reply.cache_write_input_tokens)
    self.budget.settle(held, used, cost)
    self._count(reply, cost)
    self.stats.sync_equivalent_usd += cost
    return reply


async def batch_call(self: Judge, payload: dict[str, Any], estimate: int, custom_id: str) -> Reply:
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
    if not reply.usage_known:
        self._estimate_usage(reply, prompt_tokens)
    else:
        check_prompt_cut(self, reply, estimate)
    usage = (reply.input_tokens, reply.output_tokens, reply.cached_input_tokens, reply.cache_write_input_tokens)
    cost = batch_cost(*usage)
    self.budget.settle(held, reply.input_tokens + reply.output_tokens, cost)
    self._count(reply, cost)
    self.stats.sync_equivalent_usd += self._cost(*usage)
    return reply


def estimate_usage(self: Judge, reply: Reply, prompt_tokens: int) -> None:
    """Give `reply`, which reported no usage or implausible usage (`Reply.usage_known` False; the first implausible one of
    the judge is warned about), estimated tokens: `prompt_tokens` (the request's
    prompt as admitted) in, its text (and any reasoning text) counted by `judge.tokenizer` out; counted in
    `stats.usage_unknown_replies`. Its dollars are unknown (`Judge._count` prices it None), so the score's and the
    summary's `cost_usd` are null, while the budget and the token counters take the estimate."""
    from tracejudge.llm.judge_tokenizer import prompt_counter

    counter = prompt_counter(self.cfg.model, self.tokenizer)
    reply.input_tokens = prompt_tokens
    reply.output_tokens = counter.text(reply.text) + (counter.text(reply.reasoning) if reply.reasoning else 0)
    self.stats.usage_unknown_replies += 1
    if reply.usage_problem and not self.usage_problem_told:
        self.usage_problem_told = True
        from tracejudge.core.log import get_logger

        get_logger("tracejudge.judge").warning(
            "the judge's usage figures are not plausible token counts: such replies are counted as replies without usage "
            "(tokens estimated, cost unknown)", model=self.cfg.model, problem=reply.usage_problem[:200])


async def call(self: Judge, req: JudgeRequest, key: str | None = None, wire: Wire | None = None) -> Reply:
    """Send `req` with admission, budget and retries (or, in batch mode, in a provider batch as `key`).

    `wire`: `req` made ready to send by the caller (`Judge.prepare_many` does it off the event loop: its payload in
    this judge's protocol, that payload's JSON body, its prompt counted by `request_tokens(req, judge.tokenizer)`);
    `None`: made here.

    The reply's `input_tokens` and `cost_usd` include what this call's attempts that timed out or lost their
    connection after sending were billed (their estimated input), as the summary counts them; a failure carries the
    same as `billed_input_tokens` / `billed_cost_usd`, so the score it fails shows what the summary counts for it.

    Raises `ProviderError` (kind `quota` for a daily quota, or the last
    retryable failure once attempts or wait are exhausted, or `fatal`), or
    `_BudgetRefused` when an attempt could cross the budget.
    """
    try:
        reply = await self._call(req, key, wire)
    except ProviderError as exc:
        # The provider's text may echo the request's headers: nothing of it leaves unredacted.
        exc.args = (self.redact(str(exc)),)
        raise
    reply.text = self.redact(reply.text)
    reply.reasoning = self.redact(reply.reasoning)
    return reply


async def call_retried(self: Judge, req: JudgeRequest, key: str | None, wire: Wire | None = None) -> Reply:
    from tracejudge.stages.judge.fit import count_prompt

    if self.session is None and self.connect is not None:
        await self.connect()
    payload = wire.payload if wire is not None else build_payload(self.protocol, req, self.structured)
    prompt_tokens = wire.tokens if wire is not None else await count_prompt(req, self.tokenizer)
    body = wire.body if wire is not None else None
    if self.batches is not None:
        custom_id = key or hashlib.sha256(canonical({"protocol": self.protocol, "payload": payload}).encode()).hexdigest()
        return await self._batch_call(payload, prompt_tokens, custom_id)

    def retryable(e: BaseException) -> bool:
        # A connection refused before anything of the run was ever answered is a wrong URL or a server that is
        # not running: retrying every request of the run only hides that.
        return isinstance(e, ProviderError) and e.retryable and (self.reached or e.kind != "unreachable")

    # What the call's failed attempts were billed (timed out or dropped after sending), for the score it is for.
    billed: dict[str, Any] = {"tokens": 0, "usd": 0.0}

    async def once() -> Reply:
        try:
            return await self._attempt(payload, prompt_tokens, body)
        except ProviderError as exc:
            billed["tokens"] += exc.billed_input_tokens
            billed["usd"] = sum_usd((billed["usd"], exc.billed_cost_usd), None)
            exc.billed_input_tokens, exc.billed_cost_usd = billed["tokens"], billed["usd"]
            raise
        except _BudgetRefused as exc:
            exc.billed_input_tokens, exc.billed_cost_usd = billed["tokens"], billed["usd"]
            raise

    # The first attempt goes without tenacity: building its retrying loop costs more CPU than the send itself, and
    # most requests need no retry (a strict window's burst is paced by that CPU). A retryable failure enters the
    # loop as its first attempt's outcome, so waits, stops and counts are what they were.
    try:
        reply = await once()
    except ProviderError as exc:
        if not retryable(exc):
            raise
        first: ProviderError | None = exc
    else:
        return reply
    from tenacity import AsyncRetrying, retry_if_exception  # here: a run the cache answers whole never retries

    retrying = AsyncRetrying(stop=self._stop, wait=self._wait, sleep=self._sleep, reraise=True, retry=retry_if_exception(retryable),
                             before_sleep=self._before_sleep)
    async for attempt in retrying:
        with attempt:
            if first is not None:
                failed, first = first, None
                raise failed
            reply = await once()
    if billed["tokens"]:
        reply.input_tokens += billed["tokens"]
        reply.cost_usd = sum_usd((reply.cost_usd, billed["usd"]), None)
    return reply


# How long a connection dropped without a reply, while nothing of the run was answered yet, waits for another request in
# flight to be answered before the server is called unreachable: one that drops an early request of a busy start
# (and answers the others) is not.
RESET_GRACE_S = 1.0


async def _dropped_unanswered(self: Judge, exc: ProviderError) -> ProviderError:
    """`exc` (a connection lost before any status line) as the run's judge sees it: `unreachable` when no request of the
    run was ever answered, after `RESET_GRACE_S` (a server that accepts and resets every connection is as unreachable
    as one that refuses them: the run stops, exit 3); else `exc`, one request's failure, retried and billed as ever."""
    import anyio

    await anyio.sleep(min(RESET_GRACE_S, self.cfg.timeout_s))
    if self.reached:
        return exc
    return ProviderError("unreachable", "the server accepted the connection but closed or reset it without a reply, and has "
                         f"answered no request ({exc})")


def failure(self: Judge, exc: ProviderError) -> Outcome:
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
    from tracejudge.llm.batch_api import NoBatchApi  # here: batch_api imports aiohttp, which a judge stage loads only once it sends

    if isinstance(exc, NoBatchApi):
        msg = f"no batch API: {exc}"  # (it says what to set; not_found_fix is about the chat endpoint's URL)
    elif kind == "request_error" and exc.status == 404:  # no such endpoint: the base URL, not the request, is what to fix
        msg += f"; {not_found_fix(self.url, self.cfg.provider, self.cfg.base_url, str(exc), self.cfg.model)}"  # (a missing model: judge.model)
    elif kind == "request_error":
        msg += f"; {request_fix(str(exc))}"
    elif kind == "unreachable":
        msg = f"unreachable: cannot reach the judge at {public_url(self.url)} ({exc}); nothing of the run was answered"
    return Outcome(Score(value=None, passed=None, reason=msg, details=details), "judge_error", msg, kind)
