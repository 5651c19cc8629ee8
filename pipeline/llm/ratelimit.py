"""Admission control for judge requests: RPM, TPM and in-flight, adaptive.

`Limiter` is the interface the judge uses (a shared implementation — a Ray
actor, Redis — can replace the in-process one, so N workers respect one
global limit). `AdaptiveLimiter` is the in-process implementation:

- two token buckets refilling continuously (`rpm` requests and `tpm` tokens
  per minute, starting full — the model providers document), plus a cap on
  requests in flight;
- `acquire(tokens)` waits, first come first served, until one request and
  `tokens` (prompt tokens counted with tiktoken + `max_tokens` reserved for
  the reply) fit, then charges them; `settle()` gives back what the reply
  did not use (from the provider's `usage`), or everything for an attempt
  the provider refused (429, 5xx: not charged by providers);
- adaptive: a provider's rate-limit headers lower the buckets when the
  provider is more pessimistic than we are (another client on the same
  key) and replace the limits when it reports lower ones; a 429 pauses all
  admission for its `retry-after` and cuts the in-flight cap by 30 % — once
  per burst, then a cool-down — and it grows back by one per window of
  successes; a server error pauses growth without shrinking.

Time spent waiting here is the request's queued time, reported apart from
the provider's latency.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import anyio
from tracejudge.llm.providers import RateInfo

__all__ = ["AdaptiveLimiter", "Limiter", "Permit"]


@dataclass
class Permit:
    """An admitted attempt: what it reserved and how long it queued (seconds)."""

    tokens: int
    queued_s: float
    admitted_at: float


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


class AdaptiveLimiter:
    """In-process `Limiter`: `rpm`, `tpm` per minute and `max_in_flight` concurrent requests.

    Raises `ValueError` from `acquire` for a request larger than the whole
    per-minute token allowance (it could never be admitted).
    """

    COOLDOWN_S = 5.0
    CUT = 0.7

    def __init__(self, rpm: int, tpm: int, max_in_flight: int) -> None:
        self.requests = _Bucket(rpm)
        self.tokens = _Bucket(tpm)
        self.max_in_flight = max_in_flight
        self.cap = float(max_in_flight)
        self.in_flight = 0
        self.paused_until = 0.0
        self.cooldown_until = 0.0
        self.no_growth_until = 0.0
        self.cuts = 0
        self._gate = anyio.Lock()  # FIFO: the head of the queue waits, the rest line up behind it
        self._slot = anyio.Event()

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
                self.requests.refill(now)
                self.tokens.refill(now)
                wait = max(self.paused_until - now, self.requests.wait_for(1), self.tokens.wait_for(tokens))
                if wait <= 0:
                    break
                await anyio.sleep(wait)
            self.requests.level -= 1
            self.tokens.level -= tokens
            self.in_flight += 1
            now = time.monotonic()
            return Permit(tokens, now - t0, now)

    def settle(self, permit: Permit, outcome: str, used_tokens: int | None = None, rate: RateInfo | None = None) -> None:
        now = time.monotonic()
        self.in_flight -= 1
        self._slot.set()
        self.requests.refill(now)
        self.tokens.refill(now)
        if outcome in ("rate_limited", "server", "quota", "fatal"):
            # Providers do not charge refused requests: give the reservation back.
            self.requests.level = min(self.requests.capacity, self.requests.level + 1)
            self.tokens.level = min(self.tokens.capacity, self.tokens.level + permit.tokens)
        elif used_tokens is not None:
            self.tokens.level = min(self.tokens.capacity, self.tokens.level + max(0, permit.tokens - used_tokens))
        if rate is not None:
            self._follow(rate, exact=outcome == "rate_limited")
        if outcome == "rate_limited":
            retry = rate.retry_after_s if rate and rate.retry_after_s is not None else 1.0
            self.paused_until = max(self.paused_until, now + retry)
            if now >= self.cooldown_until:
                self.cap = max(1.0, self.cap * self.CUT)
                self.cuts += 1
                self.cooldown_until = now + max(self.COOLDOWN_S, retry)
        elif outcome in ("server", "timeout", "connection"):
            self.no_growth_until = now + self.COOLDOWN_S
        elif outcome == "ok" and self.cap < self.max_in_flight and now >= max(self.cooldown_until, self.no_growth_until):
            self.cap = min(float(self.max_in_flight), self.cap + 1.0 / self.cap)

    def _follow(self, rate: RateInfo, exact: bool = False) -> None:
        if rate.limit_requests and rate.limit_requests < self.requests.capacity:
            self.requests.resize(rate.limit_requests)
        if rate.limit_tokens and rate.limit_tokens < self.tokens.capacity:
            self.tokens.resize(rate.limit_tokens)
        # On a success the provider's remaining counts lag ours by the requests still on
        # the wire, so only a clearly lower figure (someone else spends on this key) is
        # taken; a 429 says our view ran ahead of the provider's, so its figure is taken as is.
        slack_t = 0.0 if exact else 0.05 * self.tokens.capacity
        slack_r = 0.0 if exact else 0.05 * self.requests.capacity
        if rate.remaining_tokens is not None and rate.remaining_tokens < self.tokens.level - slack_t:
            self.tokens.level = float(rate.remaining_tokens)
        if rate.remaining_requests is not None and rate.remaining_requests < self.requests.level - slack_r:
            self.requests.level = float(rate.remaining_requests)
