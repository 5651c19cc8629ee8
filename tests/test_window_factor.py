"""A strict-window limiter in a burst: the provider's count of requests bounds its tokens per token of ours.

A fake clock stages the replies (`_fake_clock`: the limiter's clock only); the
provider's headers are written out by hand from what it would count. The
provider counts 1.4 of its tokens per token of ours on answered requests and
4/3 on reservations (prompt + `max_tokens`: the same `max_tokens` in both units).
"""

from __future__ import annotations

import anyio
from test_strict_window import _fake_clock
from tracejudge.llm.providers import RateInfo
from tracejudge.llm.ratelimit import AdaptiveLimiter

LIMIT = 100_000
RESERVED, USED = 1_200, 1_050  # ours: prompt 1,000 + max_tokens 200 reserved; prompt + a 50-token reply used
P_RESERVED, P_USED = 1_600, 1_470  # the provider's: prompt 1,400 + 200 reserved; 1,400 + 70 used


def burst(monkeypatch, sent: int, arrived: int, headers: dict) -> AdaptiveLimiter:
    """`sent` requests admitted at 0, 0.01, …; the first answered at 0.3, its reply saying the provider holds `arrived` of them."""
    clock = _fake_clock(monkeypatch)
    limiter = AdaptiveLimiter(rpm=100, tpm=LIMIT, max_in_flight=64, window="strict", window_s=60.0)

    async def scenario() -> None:
        permits = []
        for i in range(sent):
            clock[0] = i * 0.01
            permits.append(await limiter.acquire(RESERVED))
        clock[0] = 0.3
        permits[0].flight_s = 0.29
        counted = P_USED + (arrived - 1) * P_RESERVED
        rate = RateInfo(limit_requests=100, remaining_requests=100 - arrived, limit_tokens=LIMIT,
                        remaining_tokens=LIMIT - counted, reset_tokens_s=60 - 0.3 + 0.01 * (arrived - 1), reset_requests_s=59.8)
        limiter.settle(permits[0], "ok", USED, RateInfo(**{**rate.__dict__, **headers}))

    anyio.run(scenario)
    return limiter


def provider_count_at_full_room(limiter: AdaptiveLimiter, arrived: int) -> float:
    """What the provider would count once our log is filled to its room: what it counted, plus the rest at its dearest rate."""
    counted = P_USED + (arrived - 1) * P_RESERVED
    ours_counted = USED + (arrived - 1) * RESERVED
    return counted + (limiter.token_room() - ours_counted) * P_USED / USED


def test_the_first_reply_of_a_burst_bounds_the_factor_from_the_providers_request_count(monkeypatch):
    # Ten sent, nine reached the provider by the first reply: it counts one answered request and eight reservations.
    limiter = burst(monkeypatch, sent=10, arrived=9, headers={})
    assert limiter.answered and limiter.factor >= P_USED / USED  # an upper bound: never below what the provider counts
    # The window is no longer capped at half: the room reaches the provider's own count less the edge margin.
    assert limiter.token_room() > limiter.tokens.capacity * limiter.FIRST_FILL / limiter.factor * 1.5
    assert provider_count_at_full_room(limiter, 9) <= LIMIT * (1 - limiter.EDGE_MARGIN)


def test_a_request_the_provider_answered_before_we_read_its_reply_keeps_the_bound_safe(monkeypatch):
    # All ten arrived and the provider answered five (final cost, less than their reservations) before the first
    # reply's headers: our log still holds their reservations, so the bound takes in-flight entries at their least.
    counted = 6 * P_USED + 4 * P_RESERVED
    limiter = burst(monkeypatch, sent=10, arrived=10, headers={"remaining_tokens": LIMIT - counted})
    assert limiter.answered and limiter.factor >= counted / (6 * USED + 4 * RESERVED)
    assert limiter.factor >= P_USED / USED


def test_without_a_request_count_a_burst_fills_the_window_half_way_until_a_reply_measures_the_factor(monkeypatch):
    limiter = burst(monkeypatch, sent=10, arrived=9, headers={"remaining_requests": None, "limit_requests": None})
    assert not limiter.answered and limiter.factor == 1.0
    assert limiter.token_room() <= limiter.tokens.capacity * limiter.FIRST_FILL


def test_requests_of_someone_else_in_the_count_give_no_bound(monkeypatch):
    # The provider counts 30 requests where we sent 10: another client spends on the key; its tokens say nothing of ours.
    limiter = burst(monkeypatch, sent=10, arrived=9, headers={"remaining_requests": 70})
    assert not limiter.answered and limiter.factor == 1.0
