"""Admission control for judge requests: RPM, TPM and in-flight, adaptive.

`Limiter` is the interface the judge uses (a shared implementation — a Ray
actor, Redis — can replace the in-process one, so N workers respect one
global limit). `AdaptiveLimiter` is the in-process implementation:

- two limits, `rpm` requests and `tpm` tokens per minute (per `window_s`), plus a cap on
  requests in flight. Providers count a limit one of two ways, and the
  limiter models both:

  - a *bucket* refilling continuously, starting full (what OpenAI and
    Anthropic document);
  - a *strict window* (60 s, `window_s`): what the provider booked in the
    last 60 s counts in full until it is 60 s old (Azure- and gateway-style
    limits). The limiter logs what it sent (`tracejudge.llm.window_log`),
    booked at admission, so nothing in flight is forgotten, and learns the
    provider's count and booking moment from its headers and 429s
    (`tracejudge.llm.window_model`).

  `window="auto"` (the default) starts as a bucket and switches to the
  window model when the provider's headers say so: a bucket that reports
  `remaining` R of limit L must be full again within (L − R)/L minutes
  (`x-ratelimit-reset-*`, `anthropic-ratelimit-*-reset`); a reset that comes
  clearly later, twice, is a window; so is a 429 whose `retry-after` is
  longer than any bucket of these limits makes one request wait (a server
  that sends no rate headers). A window's reset also bounds when
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
from tracejudge.llm import window_model
from tracejudge.llm.window_log import WindowLog

__all__ = ["WINDOW_S", "AdaptiveLimiter", "Limiter", "Permit"]

WINDOW_S = 60.0
Window = Literal["auto", "bucket", "strict"]


@dataclass
class Permit:
    """An admitted attempt: what it reserved, how long it queued (seconds), and its serial in the limiter's log.

    `flight_s`, set by the caller as soon as the reply is read (before
    `settle`) when known, is the seconds from the request leaving (its
    headers written) to the reply being read. Setting it stamps `read_at`
    (monotonic seconds, now): the work between reading a reply and settling
    it (parsing it; on a busy machine, waiting for the CPU) does not move
    the request's send time, `read_at - flight_s`.
    """

    tokens: int
    queued_s: float
    admitted_at: float
    serial: int = 0
    flight_s: float | None = None
    read_at: float | None = None

    def __setattr__(self, name: str, value: object) -> None:
        if name == "flight_s" and value is not None:
            object.__setattr__(self, "read_at", time.monotonic())
        object.__setattr__(self, name, value)


class Limiter(Protocol):
    """What the judge needs from a rate limiter (see `AdaptiveLimiter`)."""

    async def acquire(self, tokens: int) -> Permit:
        """Wait until one request of `tokens` tokens may be sent; charge it."""
        ...

    def settle(self, permit: Permit, outcome: str, used_tokens: int | None = None, rate: RateInfo | None = None) -> None:
        """Close an attempt. `outcome`: ok, rate_limited, server, timeout, connection, fatal, quota, or malformed (a 2xx
        of the wrong shape that reported `used_tokens`: counted as the provider counted it, grown on as a server error)."""
        ...


class _Bucket:
    def __init__(self, per_minute: float, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self.capacity = float(per_minute)
        self.rate = per_minute / window_s
        self.level = float(per_minute)
        self.t = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
        self.t = now

    def wait_for(self, amount: float) -> float:
        return max(0.0, (amount - self.level) / self.rate)

    def resize(self, per_minute: float) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / self.window_s
        self.level = min(self.level, self.capacity)


class AdaptiveLimiter:
    """In-process `Limiter`: `rpm`, `tpm` per minute and `max_in_flight` concurrent requests.

    `window`: `auto` (bucket until the provider's headers show a strict
    window), `bucket` or `strict` (a `window_s`-second window, 60 by
    default; the limits count per window, and a bucket refills them over
    `window_s`). `mode` tells which model is in force; `factor` the
    provider's tokens per token of ours, `send_margin` the seconds from a
    request leaving to the provider booking it, `reply_booking` whether it
    books at its reply (all learned, see the module doc). Raises
    `ValueError` from `acquire` for a request larger than the whole
    per-window token allowance (it could never be admitted).
    """

    COOLDOWN_S = 5.0
    CUT = 0.7
    # Evidence needed before `auto` takes the provider for a strict window.
    WINDOW_EVIDENCE = 2
    # Reset headers are rounded (to the millisecond, or to the second for RFC 3339 times).
    RESET_MARGIN_S = 0.25
    # From a request leaving to the provider booking it, until a reply's headers tell.
    SEND_MARGIN_S = 0.1
    # Left free at a window's edge, as a share of the token limit: the provider's count of what changed since its last
    # reply (the next request, what left) is an estimate, off by a few % of those few requests, not of the window
    # (0.5 % let about one request in 200 through early on a loaded machine).
    EDGE_MARGIN = 0.01
    # Share of the provider's shortest booking-to-reply time taken as sure for every request (see `window_model.booked`).
    FLOOR_SHARE = 0.9
    # Until a reply says how the provider counts tokens, a strict window is filled this far (unless the provider's
    # request count bounds the factor: `window_model.bound_factor`).
    FIRST_FILL = 0.5

    def __init__(self, rpm: int, tpm: int, max_in_flight: int, window: Window = "auto", window_s: float = WINDOW_S) -> None:
        self.requests = _Bucket(rpm, window_s)
        self.tokens = _Bucket(tpm, window_s)
        self.request_log = WindowLog()
        self.token_log = WindowLog()
        self.window = window
        self.window_s = window_s
        self.mode: Literal["bucket", "strict"] = "strict" if window == "strict" else "bucket"
        self.window_evidence = 0
        self.send_margin = self.SEND_MARGIN_S
        self.reply_booking = False
        self.factor = 1.0
        self.answered = False
        self._first_admitted: float | None = None  # when our first request was admitted (the provider's first window)
        self._least_share = 1.0  # the smallest share of its reservation an answered request used
        self._counted_factor = False  # the factor is the bound the provider's request count gives (see `window_model.bound_factor`)
        self._last_serial = 0
        # The provider's count of its window at the last reply that reported it, and what our log held then that it counted.
        self._anchor: tuple[float, float] | None = None
        self._lags: deque[float] = deque(maxlen=32)  # booking lags measured on replies nothing was sent after
        self._boost = 0.0  # what 429s added to the booking lag those measures gave
        self._floor: float | None = None  # the provider's shortest time from booking a request to its reply's headers
        self._settled_factor = False  # the factor was measured with nothing in flight
        self.reset_dates_bookings = True  # until a reset contradicts it (see `window_model.booked`)
        self._flight = 0.0
        self._deferred: tuple[float, int] | None = None  # a 429's lesson waiting for replies: (when it said room frees, tokens)
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
        return min(self.requests.rate, self.tokens.rate / max(tokens_per_request * self.factor, 1.0))

    def token_room(self) -> float:
        """What the token log may hold, in our units (see `window_model.token_room`)."""
        return window_model.token_room(self)

    def _wait(self, tokens: int, now: float) -> float | None:
        if self.mode == "bucket":
            self.requests.refill(now)
            self.tokens.refill(now)
            return max(self.paused_until - now, self.requests.wait_for(1), self.tokens.wait_for(tokens))
        waits = [self.request_log.wait_for(1, self.requests.capacity, now), self.token_log.wait_for(tokens, self.token_room(), now)]
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
                now = time.monotonic()
                wait = self._wait(tokens, now)
                if wait is not None and wait <= 0:
                    break
                if wait is None and self.in_flight == 0 and self.token_log.used(now) + tokens > self.token_room():
                    break  # larger than the room the counting factor leaves: only the provider can say; send it
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
            serial = self._last_serial = next(self._serials)
            if self._first_admitted is None:
                self._first_admitted = now
            self.request_log.add(serial, 1.0, now)
            self.token_log.add(serial, float(tokens), now)
            self.in_flight += 1
            return Permit(tokens, now - t0, now, serial)

    def settle(self, permit: Permit, outcome: str, used_tokens: int | None = None, rate: RateInfo | None = None) -> None:
        now = time.monotonic()
        self.in_flight -= 1
        self._slot.set()
        self._changed.set()
        self.requests.refill(now)
        self.tokens.refill(now)
        # What requests sent after this one hold: the provider may not have counted them in this reply's headers.
        unseen = self.token_log.in_flight_after(permit.admitted_at)
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
                if permit.tokens > 0:
                    self._least_share = min(self._least_share, max(0, used_tokens) / permit.tokens)
            if permit.flight_s is not None:
                self._flight = permit.flight_s if not self._flight else 0.8 * self._flight + 0.2 * permit.flight_s
            booked = window_model.booked(self, permit, rate, now)
            read = permit.read_at if permit.read_at is not None else now
            sent = None if permit.flight_s is None else read - permit.flight_s
            for log, amount in ((self.request_log, 1.0), (self.token_log, float(used_tokens if used_tokens is not None else permit.tokens))):
                log.settle(permit.serial, amount, booked + self.window_s, read, sent)
            if self._deferred is not None:
                window_model.learn_from_refusal(self, *self._deferred, now)  # a 429 came while this entry was in flight
        if rate is not None:
            self._follow(rate, now, permit, unseen, exact=outcome == "rate_limited")
        if not refused and (rate is None or rate.remaining_tokens is None):
            self.answered = True  # no count of the provider's to learn from: ours is all there is
        if outcome == "rate_limited":
            retry = rate.retry_after_s if rate and rate.retry_after_s is not None else 1.0
            if now >= self.cooldown_until:
                headerless = rate is None or (rate.reset_tokens_s is None and rate.reset_requests_s is None)
                if self.mode == "bucket" and self.window == "auto" and headerless and self._beyond_bucket(retry, permit.tokens):
                    self.mode = "strict"  # no bucket makes a request wait that long: a window (headers, when sent, tell first)
                if self.mode == "strict":
                    # The window model let it go too early: its timing missed, not the concurrency, so the
                    # model learns from the retry-after instead of the in-flight cap shrinking (a smaller cap
                    # would slow this window's burst, and every later window inherits its pace). Once per
                    # burst: the requests already on the wire were sent under the old model.
                    window_model.learn_from_refusal(self, now + retry, permit.tokens, now)
                else:
                    self.cap = max(1.0, self.cap * self.CUT)
                    self.cuts += 1
                cooldown = max(self.COOLDOWN_S, retry)
                # A short window turns over faster than the cool-down: its next burst is a new one.
                self.cooldown_until = now + (min(cooldown, self.window_s / 4) if self.mode == "strict" else cooldown)
            self.paused_until = max(self.paused_until, now + retry)
        elif outcome in ("server", "timeout", "connection", "malformed"):
            self.no_growth_until = now + self.COOLDOWN_S
        elif outcome == "ok" and self.cap < self.max_in_flight and now >= max(self.cooldown_until, self.no_growth_until):
            self.cap = min(float(self.max_in_flight), self.cap + 1.0 / self.cap)

    def _beyond_bucket(self, retry: float, tokens: int) -> bool:
        """True when no bucket of our limits would make one request of `tokens` wait `retry` seconds (it refills it faster)."""
        longest = max(1.0 / self.requests.rate, tokens / self.tokens.rate)
        return retry > 1.25 * longest + 0.02 * self.window_s

    def _looks_like_window(self, limit: int | None, remaining: int | None, reset_s: float | None) -> bool | None:
        """True when a bucket could not report this reset; None when the headers cannot tell."""
        if not limit or remaining is None or reset_s is None or remaining >= limit:
            return None
        bucket_reset = (limit - remaining) / limit * self.window_s
        return reset_s > 1.25 * bucket_reset + 1.0

    def _follow(self, rate: RateInfo, now: float, permit: Permit, unseen: float, exact: bool = False) -> None:
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
        if rate.remaining_tokens is not None:
            window_model.learn_factor(self, rate, now, unseen, permit.read_at)
        for log, remaining, reset_s in ((self.request_log, rate.remaining_requests, rate.reset_requests_s),
                                        (self.token_log, rate.remaining_tokens, rate.reset_tokens_s)):
            if reset_s is not None:
                log.cap_expiry(now + reset_s + self.RESET_MARGIN_S, settled_before=permit.admitted_at)
        if rate.remaining_requests is not None and rate.reset_requests_s is not None:
            # Requests the provider counts beyond our own log are someone else's: they leave by the reset.
            extra = (self.requests.capacity - rate.remaining_requests) - self.request_log.used(now) - slack_r
            if extra > 0:
                self.request_log.add(-next(self._serials), extra, now, now + rate.reset_requests_s, now)
