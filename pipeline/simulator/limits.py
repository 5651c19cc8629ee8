"""The simulator's rate limits: token buckets, or strict sliding windows, and the headers that report them.

A limit is charged when a request arrives (admission is decided then) and
settled when the reply is made, with what the request finally costs
(prompt + completion tokens as the server counts them; 0 for a request
that failed). Two ways of counting, as providers do:

- `Bucket`: refills continuously at `capacity` per minute, starting full
  (the model OpenAI and Anthropic document).
- `Window`: a strict sliding window of `span_s` seconds (60 by default):
  what was booked in the last `span_s` seconds counts in full until it is
  `span_s` old. `book="arrival"` stamps a request when it arrives (it counts
  `prompt + max_tokens` while in flight, its final cost once answered);
  `book="reply"` stamps it when the reply is made, so it leaves the window
  `span_s` after its reply — while in flight it counts as pending, and
  nothing of it leaves before it is answered.

`Limits` holds the request and token limits of one server: `admit`,
`settle`, the providers' headers (`remaining` = limit − what is counted,
`reset` = for a window, the time until its newest entry leaves it: a full
refill, not the next free slot), and a ledger of every admitted request's
`[stamp, tokens]` so tests and benchmarks can recount any window.
"""

from __future__ import annotations

import math
import time
from collections import deque
from datetime import datetime, timezone
from typing import Any, Literal

__all__ = ["Bucket", "Limits", "Window", "char_tokens"]

# A ledger longer than this keeps counting but stops recording (a long-running `simulate`).
LEDGER_MAX = 200_000


def char_tokens(messages: list[dict[str, Any]], extra: str = "", reply: str | None = None) -> int:
    """Tokens as a character-counting gateway counts them: ceil(characters / 4) + 3 per message.

    `extra` (a schema) counts as one more message; `reply`, when given,
    is a completion: ceil(characters / 4) without framing.
    """
    if reply is not None:
        return math.ceil(len(reply) / 4)
    total = sum(math.ceil(len(str(m.get("content", "")) if isinstance(m, dict) else str(m)) / 4) + 3 for m in messages)
    return total + (math.ceil(len(extra) / 4) + 3 if extra else 0)


class Bucket:
    """A continuously refilling token bucket: `capacity` per minute, starting full. Entries are `[time, amount]`."""

    def __init__(self, per_minute: int) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.level = float(per_minute)
        self.t = time.monotonic()

    def remaining(self, now: float) -> float:
        self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
        self.t = max(self.t, now)
        return self.level

    def used(self, now: float) -> float:
        return self.capacity - self.remaining(now)

    def wait_for(self, amount: float, now: float) -> float:
        return max(0.0, (amount - self.remaining(now)) / self.rate)

    def charge(self, amount: float, now: float) -> list[Any]:
        self.remaining(now)
        self.level -= amount
        return [now, amount]

    def settle(self, entry: list[Any], amount: float, now: float) -> None:
        self.level = min(self.capacity, self.remaining(now) + entry[1] - amount)
        entry[1] = amount

    def reset_s(self, now: float) -> float:
        return max(0.0, (self.capacity - self.remaining(now)) / self.rate)


class Window:
    """A strict sliding window of `span_s` seconds holding `capacity`; `book`: `arrival` or `reply` (see the module doc).

    Entries are `[stamp, amount]` (stamp `None` while a reply-booked request
    is in flight). `total` is what the booked entries hold, `pending` what
    reply-booked requests in flight hold; both kept as entries come and go.
    """

    def __init__(self, per_window: int, span_s: float = 60.0, book: Literal["arrival", "reply"] = "arrival") -> None:
        self.capacity = float(per_window)
        self.span_s = span_s
        self.book = book
        self.entries: deque[list[Any]] = deque()
        self.total = 0.0
        self.pending = 0.0

    def _prune(self, now: float) -> None:
        while self.entries and self.entries[0][0] + self.span_s <= now:
            self.total -= self.entries.popleft()[1]

    def used(self, now: float) -> float:
        self._prune(now)
        return self.total + self.pending

    def remaining(self, now: float) -> float:
        return self.capacity - self.used(now)

    def wait_for(self, amount: float, now: float) -> float:
        excess = amount - self.remaining(now)
        if excess <= 0:
            return 0.0
        for stamp, freed in self.entries:
            excess -= freed
            if excess <= 0:
                return stamp + self.span_s - now
        return self.span_s  # what is pending leaves one window after its reply at the earliest

    def charge(self, amount: float, now: float) -> list[Any]:
        if self.book == "reply":
            self.pending += amount
            return [None, amount]
        self._prune(now)
        entry = [now, amount]
        self.entries.append(entry)
        self.total += amount
        return entry

    def settle(self, entry: list[Any], amount: float, now: float) -> bool:
        """Give `entry` its final `amount`; True when it was booked now (a reply-booked entry)."""
        self._prune(now)
        if entry[0] is None:
            self.pending -= entry[1]
            entry[1] = amount
            if amount <= 0:
                return False
            entry[0] = now
            self.entries.append(entry)
            self.total += amount
            return True
        if entry[0] + self.span_s > now:  # still in the window (a flight longer than the window has left it)
            self.total += amount - entry[1]
        entry[1] = amount
        return False

    def reset_s(self, now: float) -> float:
        self._prune(now)
        if self.pending > 0:
            return self.span_s
        return self.entries[-1][0] + self.span_s - now if self.entries else 0.0


def _duration(seconds: float) -> str:
    # OpenAI's reset format: "1s", "6m0s", "0.5s", "20ms".
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    minutes, sec = divmod(seconds, 60)
    return f"{int(minutes)}m{sec:.0f}s" if minutes else f"{sec:.3f}".rstrip("0").rstrip(".") + "s"


def _rfc3339(seconds_from_now: float) -> str:
    return datetime.fromtimestamp(time.time() + seconds_from_now, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class Limits:
    """A server's `rpm`/`tpm` limits (`None`: unlimited), counted as `window` (`bucket` or `strict`, `window_s` long, booked at `book`).

    With a strict window, `rpm`/`tpm` are per window. `peak_tokens` is the
    most tokens the token limit ever counted at once; `ledger` holds
    `[stamp, tokens]` of every admitted request (monotonic seconds; tokens
    final once its reply was made), with or without limits: without a token
    limit each request is stamped as `book` says and costs what it finally cost.
    """

    def __init__(self, rpm: int | None, tpm: int | None, window: str = "bucket", window_s: float = 60.0,
                 book: Literal["arrival", "reply"] = "arrival") -> None:
        def limit(per: int | None) -> Bucket | Window | None:
            if not per:
                return None
            return Window(per, window_s, book) if window == "strict" else Bucket(per)

        self.requests = limit(rpm)
        self.tokens = limit(tpm)
        self.book = book
        self.peak_tokens = 0.0
        self.ledger: list[list[Any]] = []

    def admit(self, tokens: int) -> tuple[float, tuple[list[Any] | None, list[Any] | None] | None]:
        """`(0, entries)` when one request of `tokens` is admitted (both limits charged), else `(seconds until it would be, None)`."""
        now = time.monotonic()
        wait = 0.0
        for limit, need in ((self.requests, 1), (self.tokens, tokens)):
            if limit is not None:
                wait = max(wait, limit.wait_for(need, now))
        if wait > 0:
            return wait, None
        req = self.requests.charge(1, now) if self.requests is not None else None
        if self.tokens is not None:
            tok = self.tokens.charge(tokens, now)
            self.peak_tokens = max(self.peak_tokens, self.tokens.used(now))
        else:  # no token limit: the ledger still records the request, stamped as `book` says, as a limit would count it
            tok = [now if self.book == "arrival" else None, tokens]
        if tok[0] is not None and len(self.ledger) < LEDGER_MAX:
            self.ledger.append(tok)
        return 0.0, (req, tok)

    def settle(self, entries: tuple[list[Any] | None, list[Any] | None] | None, tokens: int) -> None:
        """Close an admitted request: it costs `tokens` in the end (0 for a failed one; it still counts as a request)."""
        if entries is None:
            return
        now = time.monotonic()
        req, tok = entries
        if req is not None and self.requests is not None:
            self.requests.settle(req, 1, now)  # a failed request still counts as one
        if tok is not None and self.tokens is not None:
            booked = self.tokens.settle(tok, tokens, now)
            if booked and len(self.ledger) < LEDGER_MAX:
                self.ledger.append(tok)
            self.peak_tokens = max(self.peak_tokens, self.tokens.used(now))
        elif tok is not None:
            booked = tok[0] is None
            if booked:
                tok[0] = now
            tok[1] = tokens
            if booked and len(self.ledger) < LEDGER_MAX:
                self.ledger.append(tok)

    def headers(self, anthropic: bool) -> dict[str, str]:
        """The providers' rate-limit headers for the limits now."""
        now = time.monotonic()
        h: dict[str, str] = {}
        for kind, limit in (("requests", self.requests), ("tokens", self.tokens)):
            if limit is None:
                continue
            remaining = str(max(0, int(limit.remaining(now))))
            reset = limit.reset_s(now)
            if anthropic:
                h[f"anthropic-ratelimit-{kind}-limit"] = str(int(limit.capacity))
                h[f"anthropic-ratelimit-{kind}-remaining"] = remaining
                h[f"anthropic-ratelimit-{kind}-reset"] = _rfc3339(reset)
            else:
                h[f"x-ratelimit-limit-{kind}"] = str(int(limit.capacity))
                h[f"x-ratelimit-remaining-{kind}"] = remaining
                h[f"x-ratelimit-reset-{kind}"] = _duration(reset)
        return h
