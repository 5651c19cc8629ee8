"""Admission control for judge requests: RPM, TPM and in-flight, adaptive.

`Limiter` is the interface the judge uses (a shared implementation — a Ray
actor, Redis — can replace the in-process one, so N workers respect one
global limit). `AdaptiveLimiter` is the in-process implementation:

- two limits, `rpm` requests and `tpm` tokens per minute, plus a cap on
  requests in flight. Providers count a limit one of two ways, and the
  limiter models both:

  - a *bucket* refilling continuously, starting full (what OpenAI and
    Anthropic document);
  - a *strict 60-second window*: what was sent in the last 60 s counts in
    full until it is 60 s old, then all of it comes back at once (Azure-
    and gateway-style limits). The limiter keeps a log of what it sent.
    The provider stamps a request when it arrives, so an entry leaves our
    window 60 s after the request left (`Permit.flight_s`, timed from
    when its headers went out, gives that moment) plus a margin for the
    one-way trip (`send_margin`, 100 ms to start with; a burst of 429s the
    window model failed to prevent adds twice the first one's `retry-after`,
    up to 1 s in all, in place of the in-flight cut below), and never later than
    60 s after the reply; without a send time, 60 s after the reply. So
    the next burst goes out as the provider's window frees it, not one
    provider latency later.

  `window="auto"` (the default) starts as a bucket and switches to the
  window model when the provider's headers say so: a bucket that reports
  `remaining` R of limit L must be full again within (L − R)/L minutes
  (`x-ratelimit-reset-*`, `anthropic-ratelimit-*-reset`); a reset that comes
  clearly later, twice, is a window. A window's reset also bounds when
  every entry logged before it leaves (a fixed window that resets on the
  minute frees everything then).
- `acquire(tokens)` waits, first come first served, until one request and
  `tokens` (prompt tokens counted with tiktoken + `max_tokens` reserved for
  the reply) fit, then charges them; `settle()` gives back what the reply
  did not use (from the provider's `usage`), or everything for an attempt
  the provider refused (429, 5xx: not charged by providers);
- adaptive: a provider's rate-limit headers lower the limits when the
  provider is more pessimistic than we are (another client on the same
  key) and replace the limits when it reports lower ones; a 429 pauses all
  admission for its `retry-after` and cuts the in-flight cap by 30 % — once
  per burst, then a cool-down — and it grows back by one per window of
  successes; a server error pauses growth without shrinking.

Time spent waiting here is the request's queued time, reported apart from
the provider's latency.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from dataclasses import dataclass
from typing import Literal, Protocol

import anyio
from tracejudge.llm.providers import RateInfo

__all__ = ["WINDOW_S", "AdaptiveLimiter", "Limiter", "Permit"]

WINDOW_S = 60.0
Window = Literal["auto", "bucket", "strict"]


@dataclass
class Permit:
    """An admitted attempt: what it reserved, how long it queued (seconds), and its serial in the limiter's log.

    `flight_s`, set by the caller before `settle` when known, is the seconds
    from the request leaving (its headers written) to the reply being read.
    """

    tokens: int
    queued_s: float
    admitted_at: float
    serial: int = 0
    flight_s: float | None = None


class Limiter(Protocol):
    """What the judge needs from a rate limiter (see `AdaptiveLimiter`)."""

    async def acquire(self, tokens: int) -> Permit:
        """Wait until one request of `tokens` tokens may be sent; charge it."""
        ...

    def settle(self, permit: Permit, outcome: str, used_tokens: int | None = None, rate: RateInfo | None = None) -> None:
        """Close an attempt. `outcome`: ok, rate_limited, server, timeout, connection, fatal, quota."""
        ...


class _Bucket:
    def __init__(self, per_minute: float) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.level = float(per_minute)
        self.t = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
        self.t = now

    def wait_for(self, amount: float) -> float:
        return max(0.0, (amount - self.level) / self.rate)

    def resize(self, per_minute: float) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.level = min(self.level, self.capacity)


class _Log:
    """What we sent within the window, for one limit: serial → [amount, expires, settled_at].

    `expires` and `settled_at` are `None` while the request is in flight (it
    counts, and no time is known yet at which it leaves the provider's
    window). `total` is kept as entries come and go, and the settled ones
    are queued by expiry, so admission costs the few entries it looks at,
    not the whole window (tens of thousands at high RPM).
    """

    def __init__(self) -> None:
        self.entries: dict[int, list] = {}
        self.total = 0.0
        self._by_expiry: deque[int] = deque()
        self._sorted = True

    def add(self, serial: int, amount: float, expires: float | None = None, settled_at: float | None = None) -> None:
        self.entries[serial] = [amount, expires, settled_at]
        self.total += amount
        if expires is not None:
            self._enqueue(serial, expires)

    def drop(self, serial: int) -> None:
        entry = self.entries.pop(serial, None)
        if entry is not None:
            self.total -= entry[0]

    def settle(self, serial: int, amount: float, expires: float, now: float) -> None:
        entry = self.entries.get(serial)
        if entry is None:
            return
        self.total += amount - entry[0]
        entry[:] = [amount, expires, now]
        self._enqueue(serial, expires)

    def _enqueue(self, serial: int, expires: float) -> None:
        # Entries mostly settle in expiry order; one that overtakes a few (its flight was
        # longer) is put in its place by a short walk from the end, not a re-sort.
        order = self._by_expiry
        i = len(order)
        while i and (prev := self.entries.get(order[i - 1])) is not None and prev[1] is not None and prev[1] > expires:
            i -= 1
        order.insert(i, serial)

    def _order(self) -> deque[int]:
        if not self._sorted:
            live = [s for s in dict.fromkeys(self._by_expiry) if s in self.entries and self.entries[s][1] is not None]
            self._by_expiry = deque(sorted(live, key=lambda s: self.entries[s][1]))
            self._sorted = True
        return self._by_expiry

    def used(self, now: float) -> float:
        order = self._order()
        while order:
            entry = self.entries.get(order[0])
            if entry is not None and entry[1] is not None and entry[1] > now:
                break
            serial = order.popleft()
            if entry is not None and entry[1] is not None:
                del self.entries[serial]
                self.total -= entry[0]
        return self.total

    def wait_for(self, amount: float, capacity: float, now: float) -> float | None:
        """Seconds until `amount` fits under `capacity`; `None` when it depends on requests still in flight."""
        excess = self.used(now) + amount - capacity
        if excess <= 0:
            return 0.0
        for serial in self._order():
            entry = self.entries.get(serial)
            if entry is None or entry[1] is None:
                continue
            excess -= entry[0]
            if excess <= 0:
                return float(entry[1] - now)
        return None

    def cap_expiry(self, latest: float, settled_before: float) -> None:
        """The provider said its window is empty by `latest`: no entry settled before `settled_before` stays longer.

        Only those entries surely reached the provider before the request whose reply said so.
        """
        for serial in reversed(self._order()):
            entry = self.entries.get(serial)
            if entry is None or entry[1] is None:
                continue
            if entry[1] <= latest:
                break
            if entry[2] <= settled_before:
                entry[1] = latest
                self._sorted = False


class AdaptiveLimiter:
    """In-process `Limiter`: `rpm`, `tpm` per minute and `max_in_flight` concurrent requests.

    `window`: `auto` (bucket until the provider's headers show a strict
    window), `bucket` or `strict` (a `window_s`-second window, 60 by
    default; the limits count per window). `mode` tells which
    model is in force. Raises `ValueError` from `acquire` for a request
    larger than the whole per-minute token allowance (it could never be
    admitted).
    """

    COOLDOWN_S = 5.0
    CUT = 0.7
    # Evidence needed before `auto` takes the provider for a strict window.
    WINDOW_EVIDENCE = 2
    # Reset headers are rounded (to the millisecond, or to the second for RFC 3339 times).
    RESET_MARGIN_S = 0.25
    # From a request leaving to the provider stamping it (the one-way trip); a 429 burst adds to it.
    SEND_MARGIN_S = 0.1
    MAX_SEND_MARGIN_S = 1.0

    def __init__(self, rpm: int, tpm: int, max_in_flight: int, window: Window = "auto", window_s: float = WINDOW_S) -> None:
        self.requests = _Bucket(rpm)
        self.tokens = _Bucket(tpm)
        self.request_log = _Log()
        self.token_log = _Log()
        self.window = window
        self.window_s = window_s
        self.mode: Literal["bucket", "strict"] = "strict" if window == "strict" else "bucket"
        self.window_evidence = 0
        self.send_margin = self.SEND_MARGIN_S
        self.max_in_flight = max_in_flight
        self.cap = float(max_in_flight)
        self.in_flight = 0
        self.paused_until = 0.0
        self.cooldown_until = 0.0
        self.no_growth_until = 0.0
        self.cuts = 0
        self._serials = itertools.count(1)
        self._gate = anyio.Lock()  # FIFO: the head of the queue waits, the rest line up behind it
        self._slot = anyio.Event()
        self._changed = anyio.Event()

    def admitted_rps(self, tokens_per_request: float) -> float:
        """Requests per second the limits admit in the long run, for requests of `tokens_per_request` tokens."""
        return min(self.requests.rate, self.tokens.rate / max(tokens_per_request, 1.0))

    def _wait(self, tokens: int, now: float) -> float | None:
        if self.mode == "bucket":
            self.requests.refill(now)
            self.tokens.refill(now)
            return max(self.paused_until - now, self.requests.wait_for(1), self.tokens.wait_for(tokens))
        waits = [self.request_log.wait_for(1, self.requests.capacity, now), self.token_log.wait_for(tokens, self.tokens.capacity, now)]
        if None in waits:
            return None
        return max(self.paused_until - now, *waits)  # type: ignore[type-var]

    async def acquire(self, tokens: int) -> Permit:
        if tokens > self.tokens.capacity:
            raise ValueError(f"a request of {tokens} tokens exceeds the {int(self.tokens.capacity)} tokens/min limit")
        t0 = time.monotonic()
        async with self._gate:
            while self.in_flight >= max(1, int(self.cap)):
                self._slot = anyio.Event()
                await self._slot.wait()
            while True:
                wait = self._wait(tokens, time.monotonic())
                if wait is not None and wait <= 0:
                    break
                # A settle can free capacity (a refund, a reply that starts an entry's clock,
                # new headers): wake on it, or when the computed wait is over.
                self._changed = anyio.Event()
                with anyio.move_on_after(wait if wait is not None else self.window_s):
                    await self._changed.wait()
            now = time.monotonic()
            self.requests.refill(now)
            self.tokens.refill(now)
            self.requests.level -= 1
            self.tokens.level -= tokens
            serial = next(self._serials)
            self.request_log.add(serial, 1.0)
            self.token_log.add(serial, float(tokens))
            self.in_flight += 1
            return Permit(tokens, now - t0, now, serial)

    def settle(self, permit: Permit, outcome: str, used_tokens: int | None = None, rate: RateInfo | None = None) -> None:
        now = time.monotonic()
        self.in_flight -= 1
        self._slot.set()
        self._changed.set()
        self.requests.refill(now)
        self.tokens.refill(now)
        refused = outcome in ("rate_limited", "server", "quota", "fatal")
        if refused:
            # Providers do not charge refused requests: give the reservation back.
            self.requests.level = min(self.requests.capacity, self.requests.level + 1)
            self.tokens.level = min(self.tokens.capacity, self.tokens.level + permit.tokens)
            self.request_log.drop(permit.serial)
            self.token_log.drop(permit.serial)
        else:
            if used_tokens is not None:
                self.tokens.level = min(self.tokens.capacity, self.tokens.level + max(0, permit.tokens - used_tokens))
            # The provider stamped the request when it arrived: after it left, before this reply.
            sent = now if permit.flight_s is None else min(now, now - permit.flight_s + self.send_margin)
            for log, amount in ((self.request_log, 1.0), (self.token_log, float(used_tokens if used_tokens is not None else permit.tokens))):
                log.settle(permit.serial, amount, sent + self.window_s, now)
        if rate is not None:
            self._follow(rate, now, permit.admitted_at, exact=outcome == "rate_limited")
        if outcome == "rate_limited":
            retry = rate.retry_after_s if rate and rate.retry_after_s is not None else 1.0
            self.paused_until = max(self.paused_until, now + retry)
            if now >= self.cooldown_until:
                if self.mode == "strict" and self.send_margin < self.MAX_SEND_MARGIN_S:
                    # The window model sent it `retry` too early: its timing missed, not the concurrency,
                    # so the margin for the trip grows instead of the in-flight cap shrinking (a smaller
                    # cap would slow this window's burst, and every later window inherits its pace).
                    # Once per burst: the requests already on the wire were sent under the old margin.
                    self.send_margin = min(self.MAX_SEND_MARGIN_S, self.send_margin + 2 * retry)
                else:
                    self.cap = max(1.0, self.cap * self.CUT)
                    self.cuts += 1
                self.cooldown_until = now + max(self.COOLDOWN_S, retry)
        elif outcome in ("server", "timeout", "connection"):
            self.no_growth_until = now + self.COOLDOWN_S
        elif outcome == "ok" and self.cap < self.max_in_flight and now >= max(self.cooldown_until, self.no_growth_until):
            self.cap = min(float(self.max_in_flight), self.cap + 1.0 / self.cap)

    def _looks_like_window(self, limit: int | None, remaining: int | None, reset_s: float | None) -> bool | None:
        """True when a bucket could not report this reset; None when the headers cannot tell."""
        if not limit or remaining is None or reset_s is None or remaining >= limit:
            return None
        bucket_reset = (limit - remaining) / limit * WINDOW_S
        return reset_s > 1.25 * bucket_reset + 1.0

    def _follow(self, rate: RateInfo, now: float, sent_at: float, exact: bool = False) -> None:
        if rate.limit_requests and rate.limit_requests < self.requests.capacity:
            self.requests.resize(rate.limit_requests)
        if rate.limit_tokens and rate.limit_tokens < self.tokens.capacity:
            self.tokens.resize(rate.limit_tokens)
        if self.window == "auto" and self.mode == "bucket":
            verdicts = [self._looks_like_window(rate.limit_requests, rate.remaining_requests, rate.reset_requests_s),
                        self._looks_like_window(rate.limit_tokens, rate.remaining_tokens, rate.reset_tokens_s)]
            if True in verdicts:
                self.window_evidence += 1
                self.mode = "strict" if self.window_evidence >= self.WINDOW_EVIDENCE else "bucket"
            elif False in verdicts:
                self.window_evidence = 0
        # On a success the provider's remaining counts lag ours by the requests still on
        # the wire, so only a clearly lower figure (someone else spends on this key) is
        # taken; a 429 says our view ran ahead of the provider's, so its figure is taken as is.
        slack_t = 0.0 if exact else 0.05 * self.tokens.capacity
        slack_r = 0.0 if exact else 0.05 * self.requests.capacity
        if self.mode == "bucket":
            if rate.remaining_tokens is not None and rate.remaining_tokens < self.tokens.level - slack_t:
                self.tokens.level = float(rate.remaining_tokens)
            if rate.remaining_requests is not None and rate.remaining_requests < self.requests.level - slack_r:
                self.requests.level = float(rate.remaining_requests)
            return
        for log, capacity, remaining, reset, slack in (
            (self.request_log, self.requests.capacity, rate.remaining_requests, rate.reset_requests_s, slack_r),
            (self.token_log, self.tokens.capacity, rate.remaining_tokens, rate.reset_tokens_s, slack_t),
        ):
            if reset is None:
                continue
            log.cap_expiry(now + reset + self.RESET_MARGIN_S, settled_before=sent_at)
            if remaining is not None:
                # What the provider counts beyond our own log is someone else's: it leaves by the reset.
                unseen = (capacity - remaining) - log.used(now) - slack
                if unseen > 0:
                    log.add(-next(self._serials), unseen, now + reset, now)
