"""The judge token budget: a hard cap on tokens and dollars per run.

`Budget` is the interface (a shared implementation can replace the
in-process one so N workers respect one budget). A request is sent only
after its worst case (prompt tokens + `max_tokens`, priced) is held;
`settle` replaces the reservation by what the attempts really cost.
`hold` waits while requests in flight hold what it needs (they usually
spend far less than their worst case, and what they leave is its to use),
and refuses only a request whose worst case would cross a cap over what
has been spent with nothing in flight: its case ends `skipped_budget`,
and the same run resumed with a larger budget finishes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import anyio

__all__ = ["Budget", "InProcessBudget", "Reservation"]


@dataclass
class Reservation:
    """Tokens and dollars held for one request until it settles."""

    tokens: int
    usd: float


class Budget(Protocol):
    """What the judge needs from a budget."""

    def reserve(self, tokens: int, usd: float) -> Reservation | None:
        """Hold `tokens`/`usd` if both caps allow it; `None` if either would be crossed."""
        ...

    def settle(self, reservation: Reservation, tokens: int, usd: float) -> None:
        """Release a reservation and record what was really spent."""
        ...

    async def hold(self, tokens: int, usd: float) -> Reservation | None:
        """`reserve`, waiting while reservations in flight stand in the way; `None` only when `tokens`/`usd` would cross
        a cap over what was spent, with nothing held."""
        ...


class InProcessBudget:
    """`Budget` for one process. `None` caps are unlimited; `spent_*` start at what earlier segments of the run spent."""

    def __init__(self, max_tokens: int | None, max_usd: float | None, spent_tokens: int = 0, spent_usd: float = 0.0) -> None:
        self.max_tokens = max_tokens
        self.max_usd = max_usd
        self.spent_tokens = spent_tokens
        self.spent_usd = spent_usd
        self.held_tokens = 0
        self.held_usd = 0.0

    _settled: anyio.Event | None = None  # made by the first `hold` that waits, in its event loop

    def reserve(self, tokens: int, usd: float) -> Reservation | None:
        """Hold `tokens`/`usd` if both caps allow it beside what is spent and held; `None` if either would be crossed."""
        if self.max_tokens is not None and self.spent_tokens + self.held_tokens + tokens > self.max_tokens:
            return None
        if self.max_usd is not None and self.spent_usd + self.held_usd + usd > self.max_usd + 1e-12:
            return None
        self.held_tokens += tokens
        self.held_usd += usd
        return Reservation(tokens, usd)

    def settle(self, reservation: Reservation, tokens: int, usd: float) -> None:
        """Release `reservation` and add what the request really spent; wakes the `hold`s waiting."""
        self.held_tokens -= reservation.tokens
        self.held_usd -= reservation.usd
        self.spent_tokens += tokens
        self.spent_usd += usd
        if self._settled is not None:
            self._settled.set()
            self._settled = None

    def could_fit(self, tokens: int, usd: float) -> bool:
        """Whether `tokens`/`usd` fit the caps beside what was spent, with nothing held."""
        if self.max_tokens is not None and self.spent_tokens + tokens > self.max_tokens:
            return False
        return self.max_usd is None or self.spent_usd + usd <= self.max_usd + 1e-12

    async def hold(self, tokens: int, usd: float) -> Reservation | None:
        """A reservation of `tokens`/`usd`, once the requests in flight leave room for it; `None` at once when it could
        not fit even with none in flight (`could_fit`), or when the last one settles and it still does not fit.
        Cancellable while it waits."""
        while (got := self.reserve(tokens, usd)) is None:
            if not self.could_fit(tokens, usd) or (self.held_tokens <= 0 and self.held_usd <= 0):
                return None
            if self._settled is None:
                self._settled = anyio.Event()
            await self._settled.wait()
        return got
