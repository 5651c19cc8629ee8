"""One judge request sent: budget, admission by the rate limiter, retries, billing (or a provider batch).

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
from tracejudge.llm.cache import canonical
from tracejudge.llm.providers import JudgeRequest, ProviderError, Reply, build_payload, rate_info, read_reply, send
from tracejudge.llm.reply_secrets import prompt_secrets
from tracejudge.stages.judge.calls.billing import Unsettled, bill_input, bill_malformed, bill_unread, note_sent, settle_answer, unsettled_error
from tracejudge.stages.judge.calls.gate import Closed, Gate, gate_of, is_outage
from tracejudge.stages.judge.calls.outcome import JudgeStopped, _BudgetRefused, unreadable
from tracejudge.stages.judge.calls.prompt_cut import check_prompt_cut
from tracejudge.stages.judge.calls.stats import sum_usd

if TYPE_CHECKING:
    from tracejudge.stages.judge.calls.request import Wire
    from tracejudge.stages.judge.client import Judge

__all__ = ["attempt", "batch_call", "before_sleep", "call", "call_retried", "estimate_usage", "sleep", "stop", "wait"]

# Why the current task is about to sleep before a retry (set by `before_sleep`, read by `Judge._sleep`).
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


def before_sleep(self: Judge, exc: ProviderError) -> None:
    """Say why the request that failed with `exc` is about to sleep (`Judge.activity` reads it)."""
    _retry_reason.set(str(exc.status) if exc.status else exc.kind.replace("_", " "))


def wait(self: Judge, exc: ProviderError, attempts: int) -> float:
    """Seconds to sleep before sending again a request whose `attempts`-th attempt failed with `exc`."""
    if exc.retry_after_s is not None:
        # What the server asked, plus a little jitter so retries do not arrive together.
        return exc.retry_after_s + random.uniform(0, 0.05 + 0.1 * exc.retry_after_s)
    return random.uniform(0, min(20.0, 0.25 * 2 ** (attempts - 1)))


def stop(self: Judge, exc: ProviderError, attempts: int, timeouts: int, slept: float, pause: float) -> bool:
    """Whether a request whose `attempts`-th attempt failed with `exc` (`timeouts` of them timed out, `slept` seconds
    slept so far) is given up rather than sent again after `pause` seconds. A timeout is sent again once at most: a
    prompt too slow once is as slow again, and each attempt makes the server compute a reply nobody reads."""
    return attempts >= self.cfg.max_attempts or timeouts > 1 or slept + pause > self.cfg.max_retry_wait_s


async def attempt_in_slot(self: Judge, payload: dict[str, Any], estimate: int, body: bytes | None = None,
                          trying: bool = False, retry: bool = False) -> Reply:
    """`attempt`, once one of the server's slots is free when it said how many it has (`Judge.slots`, `calls.served`).

    Waiting here, before the rate limiter's admission, spends no RPM/TPM and runs no `judge.timeout_s`.
    """
    slots = self.slots
    if slots is None:
        return await attempt(self, payload, estimate, body, trying, retry)
    self._slot_waiting += 1
    try:
        await slots.acquire()
    finally:
        self._slot_waiting -= 1
    try:
        return await attempt(self, payload, estimate, body, trying, retry)
    finally:
        slots.release()


async def attempt(self: Judge, payload: dict[str, Any], estimate: int, body: bytes | None = None, trying: bool = False,
                  retry: bool = False) -> Reply:
    """One attempt (`trying`: it is the one request trying the closed gate; `retry`: an earlier attempt failed).
    Raises `Closed` when the gate closed while it waited for admission: it was not sent."""
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
    gate = gate_of(self)
    if gate.state is not None and not trying:
        # The server went down (or too slow) while this request waited for admission: it waits at the gate, unsent.
        self.limiter.settle(permit, "ok", 0)
        self.budget.settle(held, 0, 0.0)
        raise Closed()
    self.stats.queued_s += permit.queued_s
    self.stats.requests += 1
    self.stats.retries += retry
    note_sent(self, prompt_tokens)  # (journaled before it goes out: a kill while it is in flight still counts it)
    serial = next(self._serials)
    self._sending[serial] = time.monotonic()
    gate.sent()
    told = False  # the gate was told how this attempt ended (else it was cancelled)
    status: int | None = None  # the reply's HTTP status, once one came
    try:
        try:
            http = await send(self.session, self.url, self._headers, payload, self.cfg.timeout_s, self.cfg.max_response_bytes, body)
            status = http.status
            self.reached = True
            permit.flight_s = http.flight_s
            self.stats.latencies.append(http.latency_s)
            reply = read_reply(self.protocol, http, self.cfg.max_retry_after_s, self._secrets, answered=self.stats.answered > 0)
            rate = rate_info(http.headers)
        except (ProviderError, JudgeStopped):
            raise
        except Exception as exc:  # a reply (a shape, a header) nothing foresaw: a malformed reply, never its case's end
            raise unreadable(exc, self.redact, status, "server") from None
        gate.done(trying, None)
        told = True
    except ProviderError as exc:
        if exc.kind == "connection" and exc.no_reply and not self.reached:
            exc = await _dropped_unanswered(self, exc)
        gate.done(trying, exc)
        told = True
        if exc.reply is not None:  # a refusal: answered and billed like any reply, though it holds no verdict
            try:
                settle_answer(self, exc.reply, permit, held, prompt_tokens, estimate, rate_info(http.headers))
            except Unsettled as bad:
                raise unsettled_error(self, bad, status, prompt_tokens) from None
            exc.billed_input_tokens, exc.billed_output_tokens = exc.reply.input_tokens, exc.reply.output_tokens
            exc.billed_cost_usd = exc.reply.cost_usd
            raise exc from None
        if exc.billed_reply is not None:
            bill_malformed(self, exc, permit, held, prompt_tokens, estimate, rate_info(http.headers))
            raise exc from None
        self.limiter.settle(permit, exc.kind, None, exc.rate)
        billed = prompt_tokens if exc.kind in ("timeout", "connection") else 0
        bill_input(self, held, billed)
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
        if exc.kind not in ("unreachable", "timeout"):
            # Something answered (or dropped a sent request): the endpoint exists; a timeout says not even that (`Gate`).
            self.reached = True
        raise exc from None
    except BaseException:
        self.limiter.settle(permit, "timeout")
        self.budget.settle(held, prompt_tokens, self._cost(prompt_tokens, 0))
        raise
    finally:
        del self._sending[serial]
        if not told:
            gate.left()
    try:
        settle_answer(self, reply, permit, held, prompt_tokens, estimate, rate)
    except Unsettled as exc:  # reading its usage failed: billed at its estimated input, its verdict not used
        raise unsettled_error(self, exc, status, prompt_tokens) from None
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
    refused: ProviderError | None = None
    try:
        reply = await self.batches.submit(custom_id, payload)
    except ProviderError as exc:
        unread = bill_unread(self, self.batches.take_unread(custom_id), prompt_tokens, batch_cost)
        if exc.reply is None:
            self.budget.settle(held, 0, 0.0)
            exc.billed_input_tokens, exc.billed_cost_usd, exc.billed_output_tokens = unread
            raise
        reply, refused = exc.reply, exc  # a refusal: billed at the batch price like any answer, then its failure
    except BaseException:
        self.budget.settle(held, 0, 0.0)
        bill_unread(self, self.batches.take_unread(custom_id), prompt_tokens, batch_cost)
        raise
    else:
        unread = bill_unread(self, self.batches.take_unread(custom_id), prompt_tokens, batch_cost)
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
    if unread[0]:  # (the score shows what the summary counts for its request, as a timed-out attempt's estimate is shown)
        reply.input_tokens += unread[0]
        reply.output_tokens += unread[2]
        reply.cost_usd = sum_usd((reply.cost_usd, unread[1]), None)
    if refused is not None:
        refused.billed_input_tokens, refused.billed_output_tokens, refused.billed_cost_usd = reply.input_tokens, reply.output_tokens, reply.cost_usd
        raise refused
    return reply


def estimate_usage(self: Judge, reply: Reply, prompt_tokens: int) -> None:
    """Give `reply`, which reported no usage or implausible usage (`Reply.usage_known` False; the first implausible one of
    the judge is warned about), estimated tokens: `prompt_tokens` (the request's
    prompt as admitted) in, its text and any reasoning text (`Reply.reasoning`, `unread_reasoning`) counted by `judge.tokenizer` out; counted in
    `stats.usage_unknown_replies`. Its dollars are unknown (`Judge._count` prices it None), so the score's and the
    summary's `cost_usd` are null, while the budget and the token counters take the estimate."""
    from tracejudge.llm.judge_tokenizer import prompt_counter

    counter = prompt_counter(self.cfg.model, self.tokenizer)
    reply.input_tokens = prompt_tokens
    # The thinking beside an answer is billed as output too (`Reply.unread_reasoning`): left out, a reasoning model's
    # reply was estimated at its verdict's few tokens.
    reply.output_tokens = sum(counter.text(t) for t in (reply.text, reply.reasoning, reply.unread_reasoning) if t)
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
    retryable failure once attempts or wait are exhausted, or `fatal`: also any
    exception nothing foresaw on the way, `outcome.unreadable`), or
    `_BudgetRefused` when an attempt could cross the budget.
    """
    try:
        reply = await self._call(req, key, wire)
    except ProviderError as exc:
        # The provider's text may echo the request's headers, a refusal the trace's credentials: nothing leaves unredacted.
        exc.args = (self.redact(str(exc), prompt_secrets(req)),)
        raise
    except (JudgeStopped, _BudgetRefused):
        raise
    except Exception as exc:  # nothing foreseen (a bug on the way): this request's failure, never its case's end
        raise unreadable(exc, self.redact, None, "fatal", "could not be obtained") from None
    quoted = prompt_secrets(req)  # a trace's credential in the prompt, quoted back alone, is masked as it is in the trace
    reply.text, reply.reasoning = self.redact(reply.text, quoted), self.redact(reply.reasoning, quoted)
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

    def retryable(e: ProviderError) -> bool:
        # A connection reset by a server that never answered anything (`_dropped_unanswered`) is no server starting up:
        # retrying every request of the run only hides that. A connection refused may be one: the gate waits for it.
        return e.retryable and (self.reached or e.kind != "unreachable" or is_outage(e))

    # What the call's failed attempts were billed (timed out or dropped after sending, or refused), for the score it is for.
    billed: dict[str, Any] = {"tokens": 0, "out": 0, "usd": 0.0}

    def with_billed(exc: ProviderError | _BudgetRefused) -> None:
        exc.billed_input_tokens, exc.billed_cost_usd = billed["tokens"], billed["usd"]
        if isinstance(exc, ProviderError):
            exc.billed_output_tokens = billed["out"]

    gate = gate_of(self)
    attempts = timeouts = 0  # attempts counted against judge.max_attempts (an outage's are not: the gate paces them)
    slept = 0.0
    sent = False
    while True:
        try:
            trying = await _turn(self, gate, not sent)
        except ProviderError as exc:  # the gate gave up
            with_billed(exc)
            raise
        try:
            reply = await self._attempt(payload, prompt_tokens, body, trying, sent)
        except Closed:
            continue
        except ProviderError as exc:
            sent = True
            billed["tokens"] += exc.billed_input_tokens
            billed["out"] += exc.billed_output_tokens
            billed["usd"] = sum_usd((billed["usd"], exc.billed_cost_usd), None)
            with_billed(exc)
            if not retryable(exc):
                raise
            if is_outage(exc) and gate.state == "down":
                continue  # sent again when the gate says, within judge.max_retry_wait_s (else a failure of its own)
            if exc.kind == "timeout" and not self.reached:
                continue  # nothing of the run answered yet: the gate waits for a reply or stops the run (`Gate`)
            attempts += 1
            timeouts += exc.kind == "timeout"
            pause = self._wait(exc, attempts)
            if self._stop(exc, attempts, timeouts, slept, pause):
                raise
            self._before_sleep(exc)
            await self._sleep(pause)
            slept += pause
            continue
        except _BudgetRefused as exc:
            with_billed(exc)
            raise
        finally:
            gate.end_try(trying)
        if billed["tokens"]:
            reply.input_tokens += billed["tokens"]
            reply.cost_usd = sum_usd((reply.cost_usd, billed["usd"]), None)
        return reply


async def _turn(self: Judge, gate: Gate, first: bool) -> bool:
    """Wait at `gate` until this request may be sent (`Gate.enter`), shown as a back-off meanwhile."""
    if gate.state is None:
        return False
    # Counted apart from the senders' own back-offs: the gate's next try moves while they wait (`Gate.activity`).
    self._at_gate += 1
    t0 = time.monotonic()
    try:
        return await gate.enter(first, lambda: self.stop is not None and self.stop.is_set() and not paid_case.get())
    finally:
        self._at_gate -= 1
        self.stats.slept_s += time.monotonic() - t0


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
    gone = ProviderError("unreachable", "the server accepted the connection but closed or reset it without a reply, and has "
                         f"answered no request ({exc})")
    gone.no_reply = True  # (not a connection refused: `gate.is_outage` does not wait for it)
    return gone
