"""What a strict-window limiter learns from the provider (`tracejudge.llm.ratelimit`, `window="strict"`).

The limiter logs what it sent (`tracejudge.llm.window_log`), booked at
admission, so nothing in flight is forgotten. These functions keep that log
in step with the provider's own window, from its headers and its 429s:


- *its count*: `x-ratelimit-remaining-tokens` is the limit less what the
  provider counts in its window. Each reply anchors the log there: the
  room left is the provider's own figure, and only what changed since
  (sent, answered, expired) is our estimate, scaled by `factor`, the
  provider's tokens per token of ours (its tokenizer, a gateway counting
  characters), measured on replies with nothing else unanswered; in a
  burst, before such a reply, bounded from above by the provider's count
  of requests (`x-ratelimit-remaining-requests`, in its first window).
  Until a reply told or bounded the factor, a window is filled only
  half-way; at its edge `EDGE_MARGIN` (1 %) stays free.
- *its booking moment*: `x-ratelimit-reset-tokens`, the time until the
  newest entry leaves, dates the provider's newest booking, which this
  request's is not after: an entry leaves our log one window after that
  (tight when nothing was sent after it: those replies also measure the
  lag from leaving to being booked, `send_margin`), never later than
  one window after its reply. That holds whether the provider books on
  arrival or on reply.
- without headers, an entry leaves one window after its request left
  plus `send_margin` (100 ms to start with). A 429 whose `retry-after`
  says the window frees later than the log did moves the log's entries
  that much later and adds it to `send_margin` — or, when it is about a
  flight's worth, concludes that the provider books on reply
  (`reply_booking`): entries then leave one window after their reply.
  Once per burst, and in place of the in-flight cut below (the timing
  missed, not the concurrency).

Plain functions over the limiter's state (`AdaptiveLimiter`'s `factor`,
`send_margin`, `reply_booking` and the private fields they learn from).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracejudge.llm.providers import RateInfo
    from tracejudge.llm.ratelimit import AdaptiveLimiter, Permit

__all__ = ["before_reply", "booked", "bound_factor", "learn_factor", "learn_from_refusal", "token_room"]


def token_room(lim: AdaptiveLimiter) -> float:
    """What the token log may hold, in our units, for the provider's window to stay under its limit less the edge margin.

    From the last reply that reported the provider's count: what our log
    held then that it counted, plus the room it left over the counting
    factor (only the change since then is our estimate); before any,
    the limit over the factor — and until a reply told the factor, no
    more than `FIRST_FILL` of it.
    """
    limit = lim.tokens.capacity * (1 - lim.EDGE_MARGIN)
    room = limit / lim.factor
    if lim._anchor is not None:
        counted, ours = lim._anchor
        room = ours + (limit - counted) / lim.factor
    return room if lim.answered else min(room, limit * lim.FIRST_FILL / lim.factor)


def learn_from_refusal(lim: AdaptiveLimiter, free_at: float, tokens: int, now: float) -> None:
    """A 429 in a strict window: the provider frees room for `tokens` at `free_at`; where the log said it was free, its entries leave later than we thought.

    While the entries that decide it are still in flight, the log cannot
    say when they leave: the lesson waits for their replies (`settle`),
    until `free_at`.
    """
    lim._deferred = None
    waits = [lim.request_log.wait_for(1, lim.requests.capacity, now), lim.token_log.wait_for(tokens, lim.token_room(), now)]
    if None in waits:
        if free_at > now:
            lim._deferred = (free_at, tokens)
        return
    shift = free_at - now - max(waits)  # type: ignore[type-var]
    if shift <= 0.002:  # the headers already moved the model (a count, not a time, was off)
        return
    shift = min(shift, lim.window_s)
    lim._floor = 0.0  # a booking later than the log's: the floor may be what was wrong, so no longer taken as sure
    for log in (lim.request_log, lim.token_log):
        log.delay(shift, lim.window_s)
    if lim._flight and lim.send_margin + shift >= 0.5 * lim._flight:
        lim.reply_booking = True  # late by about a whole flight: the provider books when it replies
        for log in (lim.request_log, lim.token_log):
            log.delay(lim.window_s, lim.window_s)  # so every answered entry leaves one window after its reply
    else:
        lim._boost += shift
        lim.send_margin += shift


def booked(lim: AdaptiveLimiter, permit: Permit, rate: RateInfo | None, now: float) -> float:
    """When the provider booked an answered request in its window (its entry leaves one window later).

    Never after its reply was read (`permit.read_at`, else `now`). A
    reply's `reset` (the time until the newest entry leaves) dates the
    provider's newest booking, which this request's is not after: a bound
    every reply gives, tight when nothing was sent after it, that holds
    whether the provider books on arrival or on reply. Those replies with
    nothing sent after them also measure the lag from the request leaving
    to its booking (`send_margin`, the largest of the last 32), and the
    time from its booking to its reply's headers (`window_s - reset`):
    the shortest of those seen (`_floor`) bounds every booking from
    above, `FLOOR_SHARE` of it before the reply was read. One request held
    up on its way (a busy machine) then delays the log's entries to that
    bound at most, not by its own lag. Without headers: when the request
    left plus `send_margin`, or the reply itself once 429s showed the
    provider books on reply.
    """
    read = permit.read_at if permit.read_at is not None else now
    sent = None if permit.flight_s is None else read - permit.flight_s
    resets = [r for r in (rate.reset_tokens_s, rate.reset_requests_s) if r is not None] if rate is not None else []
    if resets and lim.reset_dates_bookings and max(resets) <= lim.window_s:
        newest = read + max(resets) - lim.window_s + 0.001  # + the header's millisecond rounding
        if sent is None:
            return min(read, newest)
        if newest < sent - 0.005:
            lim.reset_dates_bookings = False  # a booking before the request left: this reset means something else
        else:
            if permit.serial == lim._last_serial:
                # Nothing was sent after it: the newest booking is its own, a measure of the provider's booking lag.
                floor = max(0.0, lim.window_s - max(resets) - 0.001)
                lim._floor = floor if lim._floor is None else min(lim._floor, floor)
                lim._lags.append(max(0.0, newest - sent))
                margin = max(lim._lags) + lim._boost
                if margin > lim.send_margin:
                    # Entries booked with the smaller lag would leave our log before the provider's window:
                    # they take the new one too (never past what their reply bounds).
                    for log in (lim.request_log, lim.token_log):
                        log.delay(margin - lim.send_margin, lim.window_s, before_reply(lim))
                lim.send_margin = margin
            return min(read - before_reply(lim), newest, sent + lim.send_margin)
    if sent is None or lim.reply_booking:
        return read
    return min(read, sent + lim.send_margin)


def before_reply(lim: AdaptiveLimiter) -> float:
    """Seconds every booking surely precedes its reply being read: `FLOOR_SHARE` of the shortest booking-to-reply time seen (0 until one is)."""
    return lim.FLOOR_SHARE * lim._floor if lim._floor else 0.0


def learn_factor(lim: AdaptiveLimiter, rate: RateInfo, now: float, unseen: float, read: float | None = None) -> None:
    """The provider's count of its window against ours gives its tokens per token of ours (its tokenizer, its framing).

    `read`: when the reply carrying `rate` was read (its headers were made no later), else `now`.
    """
    if rate.remaining_tokens is None:
        return
    counted = lim.tokens.capacity - rate.remaining_tokens
    # What was sent after this request may not be counted yet, and what left a window before the headers were made may
    # be gone already: both stay ours to estimate until our log lets them go (the safe side). What left later than
    # that the provider surely counts: taking it as "maybe gone" too would count it twice, in its count and in ours.
    gone = lim.token_log.left_maybe((now if read is None else read) - lim.window_s)
    ours = lim.token_log.used(now) - unseen - gone
    lim._anchor = (float(counted), ours)
    unseen += gone
    # A reservation (prompt + max_tokens) and an answer do not count alike: the factor of answered requests is the one
    # that matters at a window's edge (they are what leaves it), so once known it is taken with nothing in flight.
    settled = lim.in_flight == 0
    if ours <= 0 or unseen > 0.1 * ours or counted <= 0 or (lim._settled_factor and not settled):
        if not lim.answered or lim._counted_factor:
            bound_factor(lim, rate, counted, now if read is None else read)
        return
    sample = min(5.0, max(0.2, counted / (ours + unseen / 2)))
    fresh = not lim.answered or lim._counted_factor or settled and not lim._settled_factor
    lim.factor = sample if fresh else 0.5 * lim.factor + 0.5 * sample
    lim._settled_factor = lim._settled_factor or settled
    lim._counted_factor = False
    lim.answered = True


def bound_factor(lim: AdaptiveLimiter, rate: RateInfo, counted: float, read: float) -> None:
    """In a burst, before any reply with little in flight: the provider's count of requests bounds its tokens per token of ours.

    `counted`: the tokens the provider counts in its window at the reply read at `read`.
    In the provider's first window (nothing of ours has left it), `x-ratelimit-remaining-requests` says how many
    of our requests it counted, n; they are among those admitted by `read`. However they reached it, they hold at
    least the n smallest of those entries, each at its least: an answered one what it used, one still in flight
    its reservation times the smallest share of a reservation any answered request used (the provider may have
    answered it already). `counted` over that sum is an upper bound of the factor — the safe side: the window is
    filled to the provider's own count less the edge margin, with the room since that count scaled by a factor
    a few % too large, instead of half-way until the burst pauses (`FIRST_FILL`). Each later reply in the burst
    bounds it again, until a reply with little in flight measures it.
    """
    if rate.remaining_requests is None or lim._first_admitted is None or read - lim.window_s >= lim._first_admitted:
        return
    n = int(rate.limit_requests or lim.requests.capacity) - rate.remaining_requests
    least = sorted(e[0] if e[2] is not None else e[0] * lim._least_share for e in lim.token_log.entries.values() if e[3] <= read)
    if n < 1 or n > len(least):
        return  # someone else's requests in the count: its tokens say nothing of ours
    ours = sum(least[:n])
    if ours <= 0:
        return
    lim.factor = min(5.0, max(0.2, counted / ours))
    lim._counted_factor = True
    lim.answered = True
