"""The judge server's gate, one per judge: while its server is not ready, or too slow for `judge.timeout_s`, requests wait
instead of each sending again, and one request at a time tries it.

Two things close it:

- **down**: an answer saying the server cannot serve anything yet — 502, 503 (llama.cpp's `Loading model`), 504,
  Anthropic's 529, a 200 that is no JSON (a proxy's error or login page, `ProviderError.not_json`; one before any
  answer stops the run instead: `wire.read`) — or a connection refused (a server still starting, or not there), before the server ever answered,
  or `DOWN_AFTER` of them in a row with no answer between (a lone one from a server that answers is that request's
  failure, retried by its sender against `judge.max_attempts`: a busy provider's occasional 503 must not stall every
  request). Requests wait at the gate; one
  of them tries again after `FIRST_TRY_S`, each next try twice as late up to `LAST_TRY_S` (or when the server's
  `retry-after` says). The first reply that is not such an answer opens the gate for all. Once the server has been
  down for `judge.max_retry_wait_s`, the requests waiting fail with its last answer, and so does each request that
  arrives while the next try is not due.
- **slow**: `SLOW_AFTER` requests in a row got no reply within `judge.timeout_s`, none answered in between. No request
  is sent while one in flight may still be answered in time (an answer opens the gate); once none is left, the
  requests waiting to be sent again fail as timeouts, and requests never sent (waiting already, or new) are tried one
  at a time: the others wait for that try rather than fail on no new evidence. A try answered in time opens the gate
  for all; one that gets no reply in time either fails the requests that waited for it, unsent, while the next
  of them (or a new one) tries. So a server too slow for every prompt ends a run's requests in about one
  `judge.timeout_s` per wave of them, not one per request.
- **silent** (slow, past the wait): the server has given no reply at all — no answer, no error status — for
  `judge.max_retry_wait_s` since the first request it was sent after its last reply (a frozen server that accepts
  connections and never answers). The slow gate then gives up as the down one does: the requests waiting and each
  new one fail at once (`unreachable`, `no_reply` set: a `provider_error` once the server was reached) while one at a
  time still tries it, and a try answered opens it for all: else a frozen server would cost one `judge.timeout_s`
  per wave of the cases the run makes ready, hours for a large run. A server that answers, however slowly, within
  `judge.timeout_s` never gets there: any reply starts the silence over.

While nothing of the run was answered (`reached()` False: no HTTP reply, a timeout is none), the slow gate gives up on
no request for the timeouts alone: requests wait (any of them may be the one trying it) until a reply opens it or the
silence reaches the wait, when they all fail as `unreachable` and the run stops as for a refused connection (exit 3,
no case marked): a judge that never replied says nothing of the agent, so no case may end `timeout` on its account.

A request the gate gives up on before it was ever sent (down or silent past `judge.max_retry_wait_s`) fails with
`ProviderError.unsent` set: it counts no request.

A request that failed on its own (a 500, a malformed reply, a 429, one timeout) is retried by its sender
(`tracejudge.stages.judge.calls.sending`), not here.

A server that was down may come back as another server: restarted on other weights (another GGUF behind the same URL
and name). `Gate.reopened` counts the outages it came back from, and `answered_in` says, in the task that got a reply,
after which of them it came: the weights a verdict is cached under are those served then (`calls.served`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import anyio
from tracejudge.llm.providers import ProviderError, public_url
from tracejudge.stages.judge.calls.outcome import JudgeStopped

__all__ = ["DOWN_AFTER", "FIRST_TRY_S", "LAST_TRY_S", "OUTAGE_STATUSES", "SLOW_AFTER", "Closed", "Gate", "answered_in", "gate_of", "is_outage"]

OUTAGE_STATUSES = frozenset({502, 503, 504, 529})
SLOW_AFTER = 3  # one slow prompt is not a slow server; three in a row with no answer between are
DOWN_AFTER = 3  # likewise for a server that has answered before: one 503 is a busy moment, three in a row an outage
FIRST_TRY_S = 0.5
LAST_TRY_S = 4.0  # a try costs the server one request: a ready server is not kept waiting long

# `Gate.reopened` when the current task's last reply came: read by the same task when it caches that reply's verdict,
# however long it waited in between (a task's context follows its awaits, never another task's).
answered_in: ContextVar[int] = ContextVar("answered_in", default=0)


def is_outage(exc: ProviderError) -> bool:
    """Whether `exc` says the server cannot serve any request now, rather than that this request failed."""
    if exc.kind == "unreachable":
        # A connection refused, not one accepted and reset by a server that never answered (`no_reply`): that one
        # is no server starting up (`sending._dropped_unanswered`).
        return not exc.no_reply
    # A 2xx that is no JSON (a proxy's error or login page) where the judge answered before: as the proxy's 502 page.
    return exc.kind == "server" and (exc.status in OUTAGE_STATUSES or exc.not_json)


class Closed(Exception):
    """The gate closed while this request waited for admission: it goes back to wait at the gate, unsent."""


class Gate:
    """See the module doc. `budget_s`: `judge.max_retry_wait_s`; `timeout_s`: `judge.timeout_s`; `url()`: where requests go;
    `reached()`: some request of the run got an HTTP reply (`Judge.reached`)."""

    def __init__(self, budget_s: float, timeout_s: float, url: Callable[[], str], reached: Callable[[], bool] = lambda: True) -> None:
        self.budget_s = budget_s
        self.timeout_s = timeout_s
        self._url = url
        self._reached = reached
        self.state: str | None = None  # None (open), "down" or "slow"
        self.since = 0.0
        self.error: ProviderError | None = None  # the last failure that kept it closed
        self.trying = False  # one request is trying the closed gate
        self.next_try = 0.0
        self._delay = FIRST_TRY_S
        self.in_flight = 0
        self.timeouts = 0  # in a row, none answered in between
        self.outages = 0  # outage answers in a row, none answered in between
        self.answered = False  # the server answered once: an outage answer is then a busy moment until `DOWN_AFTER`
        self.stalled = False  # slow, and nothing left in flight that could still be answered
        self.closed_after = 0  # the timeouts in a row that closed it (slow)
        self.failed_tries = 0  # tries of the slow gate that got no reply in time, since it was made
        self._tries_at_close = 0
        self.reopened = 0  # outages (down, not slow) the server came back from: each may have brought other weights
        # When the server's silence began: the first send since its last reply (None: nothing owed). Any reply, an
        # error status too, says it is alive; only a silence this long while asked is a frozen server.
        self.quiet_since: float | None = None
        self.silence_told = False
        self.down_told = False  # the give-up of the down gate was said (once an outage; again after the server came back)
        self._changed = anyio.Event()

    def reason(self) -> str:
        """Why requests wait, in a few words (for the judge's activity line)."""
        if self.state == "slow":
            return "timeouts (server too slow)"
        err = self.error
        return f"{err.status} (server not ready)" if err is not None and err.status else "connection refused"

    def activity(self, waiting: int, now: float) -> str:
        """What `waiting` requests held at this gate wait for, for the judge's activity line (`now`: `time.monotonic()`).

        Read from the gate as it is now, not from when each request began to wait: the next try moves on while
        they wait, and one request may be trying the server meanwhile.
        """
        # (Shortest first: a terminal's status line cuts what does not fit.)
        if self.state == "down":
            left = self.since + self.budget_s - now
            # (No try is promised that the end of the wait comes before.)
            nxt = ("a try in flight, " if self.trying else
                   f"next try in {max(0.0, self.next_try - now):.0f} s, " if self.next_try < self.since + self.budget_s else "")
            return (f"{waiting} held: {self.reason()} for {now - self.since:.0f} s, {nxt}gives up in {max(0.0, left):.0f} s "
                    f"(judge.max_retry_wait_s {self.budget_s:.0f} s)")
        if self.state == "slow":
            nxt = "one request trying it" if self.trying else (
                f"{self.in_flight} sent still awaited" if self.in_flight else "the next request tries it")
            quiet = now - (self.quiet_since if self.quiet_since is not None else now)
            verb = ("gives up", "given up") if self._reached() else ("stops the run", "stopping the run")
            end = (f"{verb[1]}: no reply at all for {quiet:.0f} s" if self.silent(now) else
                   f"{verb[0]} in {max(0.0, self.budget_s - quiet):.0f} s with no reply")
            return (f"{waiting} held: server too slow ({self.closed_after} requests in a row got no reply within "
                    f"{self.timeout_s:.0f} s, judge.timeout_s), {nxt}, {end} (judge.max_retry_wait_s {self.budget_s:.0f} s)")
        return f"{waiting} held: the server answered, sending"

    async def enter(self, first: bool, stopping: Callable[[], bool]) -> bool:
        """Wait until this request may be sent; True when it goes as the one request trying the closed gate.

        `first`: the request was never sent (after timeouts only such a request tries the gate once the server has
        answered: the retry of one that timed out would prove little). Raises `ProviderError` once the gate gives up on
        it (down past the wait, its `unsent` set when `first`; slow, only when not `first`, or silent past the wait),
        `JudgeStopped` when `stopping()`.
        """
        seen = self.failed_tries  # (slow: a request never sent gives up only once a try it waited for failed)
        while self.state is not None:
            if stopping():
                raise JudgeStopped()
            now = time.monotonic()
            if not self.trying and self._may_try(now, first):
                self.trying = True
                return True
            if self._given_up(now, first, seen):
                raise self._failure(now, first)
            changed = self._changed
            # Woken by any change; at the latest when the next try or the end of the wait is due (and each second, so
            # a stop is seen).
            due = min(self.next_try, self.since + self.budget_s) - now if self.state == "down" else 1.0
            with anyio.move_on_after(min(1.0, max(0.01, due))):
                await changed.wait()
        return False

    def sent(self) -> None:
        self.in_flight += 1
        if self.quiet_since is None:
            self.quiet_since = time.monotonic()

    def silent(self, now: float) -> bool:
        """Whether the slow gate has given up: no reply at all for `budget_s` seconds (`now`: `time.monotonic()`)."""
        return self.state == "slow" and self.quiet_since is not None and now - self.quiet_since >= self.budget_s

    def done(self, trying: bool, exc: ProviderError | None) -> None:
        """A sent request ended: answered (`exc` None) or failed with `exc`. `trying`: it was the one trying the gate."""
        self.in_flight -= 1
        now = time.monotonic()
        if exc is None or exc.status is not None:  # a reply, a 503 too: the server is not silent
            # (Requests still in flight were sent before it: the silence they may meet starts now.)
            self.quiet_since = now if self.in_flight else None
        if exc is None or (exc.status is not None and not is_outage(exc)):
            self._open(now)  # answered in time: an error the server answered (a 400, a 500, a 429) says it serves
            answered_in.set(self.reopened)
        elif is_outage(exc):
            self.error = exc
            self.outages += 1
            if self.state != "down" and (not self.answered or self.outages >= DOWN_AFTER):
                self._close("down", now)
                self.next_try = now + self._pause(exc)
            elif trying:
                self.next_try = now + self._pause(exc)
        elif exc.kind == "timeout":
            self.timeouts += 1
            if self.state is None and self.timeouts >= SLOW_AFTER:
                self.error = exc
                self.closed_after = self.timeouts
                self._close("slow", now)
            elif self.state == "slow" and trying:
                self.failed_tries += 1
        self._settle()

    def left(self) -> None:
        """A sent request was cancelled before it ended."""
        self.in_flight -= 1
        self._settle()

    def end_try(self, trying: bool) -> None:
        """The request that was trying the gate (`trying`) is done with it, sent or not."""
        if trying:
            self.trying = False
            self._settle()

    def _settle(self) -> None:
        if self.state == "slow" and self.in_flight == 0:
            self.stalled = True
        self._changed.set()
        self._changed = anyio.Event()

    def _may_try(self, now: float, first: bool) -> bool:
        if self.state == "down":
            return now >= self.next_try
        if not self._reached():
            # A request that timed out may try too (a run of one case has no other, and a server still loading its
            # model is as likely to answer it), until the silence stops the run.
            return self.in_flight == 0 and not self.silent(now)
        return first and self.in_flight == 0

    def _given_up(self, now: float, first: bool, seen: int) -> bool:
        if self.state == "down":
            return now - self.since >= self.budget_s
        # Slow: a request never sent gives up only once a try it waited for got no reply in time (`seen`: the failed
        # tries when it began to wait), unless it is the next to try (`_may_try`, asked first); any request, once the
        # server has been silent for the whole wait, and only then while it never replied (see the module doc).
        return self.silent(now) or (self._reached() and self.stalled and (not first or self.failed_tries > seen))

    def _pause(self, exc: ProviderError) -> float:
        pause, self._delay = self._delay, min(2 * self._delay, LAST_TRY_S)
        # The server's `retry-after` when it sent one, but never a loop of tries with no pause between them.
        return max(FIRST_TRY_S, exc.retry_after_s) if exc.retry_after_s is not None else pause

    def _close(self, state: str, now: float) -> None:
        from tracejudge.core.log import get_logger

        self.state, self.since, self.stalled, self._delay = state, now, False, FIRST_TRY_S
        self._tries_at_close = self.failed_tries
        log = get_logger("tracejudge.judge")
        if state == "down":
            log.warning("the judge cannot serve now: requests wait while one at a time tries again", url=public_url(self._url()),
                        answer=str(self.error)[:200], max_retry_wait_s=self.budget_s)
        else:
            log.warning(f"{self.timeouts} judge requests in a row got no reply within judge.timeout_s: none is sent while one in "
                        "flight may still be answered; raise judge.timeout_s for a slow server", url=public_url(self._url()),
                        timeout_s=self.timeout_s)

    def _open(self, now: float) -> None:
        if self.state is not None:
            from tracejudge.core.log import get_logger

            get_logger("tracejudge.judge").info("the judge answers again", url=public_url(self._url()), after_s=round(now - self.since, 1))
            self.reopened += self.state == "down"  # (a slow server was not restarted: its weights are the same)
        self.state, self.error, self.timeouts, self.stalled, self._delay = None, None, 0, False, FIRST_TRY_S
        self.outages, self.answered, self.silence_told, self.down_told = 0, True, False, False

    def _failure(self, now: float, first: bool = False) -> ProviderError:
        err = self.error
        assert err is not None
        if self.state == "down":
            if self._reached() and not self.down_told:
                # Said once, as the silent gate says its give-up: the warning as requests began to wait was the last
                # word, and every case after it failed without one. (Never answered, the run stops with its own line.)
                from tracejudge.core.log import get_logger

                self.down_told = True
                get_logger("tracejudge.judge").warning(
                    f"the judge could not serve for {now - self.since:.0f} s (judge.max_retry_wait_s {self.budget_s:g}): it is given up as "
                    "unavailable; the requests waiting and each new one fail at once while one at a time still tries it",
                    url=public_url(self._url()), answer=str(err)[:200], max_retry_wait_s=self.budget_s)
            out = ProviderError(err.kind, f"{err}; still so after {now - self.since:.0f} s of waiting (judge.max_retry_wait_s {self.budget_s:g})"
                                + ("; this request was not sent" if first else ""), err.status)
            out.no_reply = err.no_reply
            out.unsent = first  # (never sent: it counts no request)
            out.given_up = True
            return out
        t = self.timeout_s
        if self.silent(now):
            return self._silence(now, first)
        tried = self.failed_tries - self._tries_at_close  # (tries of the closed gate that got no reply in time either)
        out = ProviderError("timeout", f"{'not sent' if first else 'not sent again'}: {self.closed_after} requests in a row got no reply within "
                            f"{t:g} s and none in flight was answered" + (f", nor {tried} tried one at a time since" if tried else "")
                            + f" (judge.timeout_s {t:g}: raise it for a slow server, or lower limits.max_in_flight if it slows under load)")
        out.unsent = first  # (never sent: it counts no request)
        return out

    def _silence(self, now: float, first: bool) -> ProviderError:
        """The failure of a request the silent gate gave up on; the first one says so in the log."""
        assert self.quiet_since is not None
        quiet, t = now - self.quiet_since, self.timeout_s
        if not self._reached():  # the run stops on it (`outcome.STOPS`): its one line says it all, no warning before
            out = ProviderError("unreachable", f"it accepted connections but never replied within judge.timeout_s {t:g} s: no reply at "
                                f"all for {quiet:.0f} s, judge.max_retry_wait_s {self.budget_s:g}")
            out.no_reply, out.unsent = True, first
            return out
        why = (f"the judge gave no reply at all for {quiet:.0f} s ({self.closed_after} requests in a row got none within "
               f"judge.timeout_s {t:g} s, and none since): given up as unavailable after judge.max_retry_wait_s "
               f"{self.budget_s:g} (raise it to wait longer for a server that stalls)")
        if not self.silence_told:
            from tracejudge.core.log import get_logger

            self.silence_told = True
            get_logger("tracejudge.judge").warning(
                f"the judge gave no reply at all for {quiet:.0f} s (judge.max_retry_wait_s {self.budget_s:g}): it is given up as unavailable; "
                "the requests waiting and each new one fail at once while one at a time still tries it",
                url=public_url(self._url()), silent_s=round(quiet, 1), timeout_s=t, max_retry_wait_s=self.budget_s)
        out = ProviderError("unreachable", why + ("; this request was not sent" if first else ""))
        out.no_reply, out.given_up = True, True  # (accepted, never answered: no connection refused)
        out.unsent = first  # (never sent: it counts no request)
        return out


def gate_of(judge: Any) -> Gate:
    """`judge`'s gate, made with its first request sent (a run the cache answers whole makes none)."""
    gate: Gate | None = getattr(judge, "_gate", None)
    if gate is None:
        gate = Gate(judge.cfg.max_retry_wait_s, judge.cfg.timeout_s, lambda: judge.url, lambda: judge.reached)
        setattr(judge, "_gate", gate)  # noqa: B010 - the gate is this module's, kept on the judge it serves
    return gate
