"""The judge token budget: a hard cap on tokens and dollars per run.

`Budget` is the interface (a shared implementation can replace the
in-process one so N workers respect one budget). A request is sent only
after `reserve(tokens, usd)` succeeded for its worst case (prompt tokens +
`max_tokens`, priced); `settle` replaces the reservation by what the
attempts really cost. A request whose worst case could cross a cap is not
sent at all — its case ends `skipped_budget`, and the same run resumed
with a larger budget finishes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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


class InProcessBudget:
    """`Budget` for one process. `None` caps are unlimited; `spent_*` start at what earlier segments of the run spent."""

    def __init__(self, max_tokens: int | None, max_usd: float | None, spent_tokens: int = 0, spent_usd: float = 0.0) -> None:
        self.max_tokens = max_tokens
        self.max_usd = max_usd
        self.spent_tokens = spent_tokens
        self.spent_usd = spent_usd
        self.held_tokens = 0
        self.held_usd = 0.0

    def reserve(self, tokens: int, usd: float) -> Reservation | None:
        if self.max_tokens is not None and self.spent_tokens + self.held_tokens + tokens > self.max_tokens:
            return None
        if self.max_usd is not None and self.spent_usd + self.held_usd + usd > self.max_usd + 1e-12:
            return None
        self.held_tokens += tokens
        self.held_usd += usd
        return Reservation(tokens, usd)

    def settle(self, reservation: Reservation, tokens: int, usd: float) -> None:
        self.held_tokens -= reservation.tokens
        self.held_usd -= reservation.usd
        self.spent_tokens += tokens
        self.spent_usd += usd
