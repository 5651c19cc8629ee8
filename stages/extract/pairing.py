"""Pair tool results with the calls that asked for them.

Providers link a result to its call by id (`tool_call_id`, `call_id`,
`tool_use_id`), but recorded traces are not always tidy: some local models
repeat one id for every call, some loggers drop ids. `Pending` pairs by id
first and falls back to position, so a result always goes to the call it
most plausibly answers:

1. a result with an id takes the earliest still-unanswered call with that id
   (with repeated ids this is position among the duplicates);
2. a result without an id takes the earliest unanswered call;
3. a result whose id matches no unanswered call takes the earliest
   unanswered call that has no id (a logger dropped it); when every waiting
   call has an id of its own, the result is unpaired rather than stolen
   from the call it does not name.

An unpaired result (rule 3, or no call waiting) is returned as `None`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Pending"]


class Pending:
    """Calls waiting for their result, in the order they were made.

    Calls are the adapter's own mutable dicts (`{"id", "name", ...}`);
    `answer` returns the call a result belongs to (or `None`).
    """

    def __init__(self) -> None:
        self._calls: list[dict[str, Any]] = []

    def add(self, call: dict[str, Any]) -> None:
        """Register a call that expects a result."""
        self._calls.append(call)

    def answer(self, call_id: Any) -> dict[str, Any] | None:
        """Remove and return the call a result with `call_id` (maybe `None`) answers."""
        if not self._calls:
            return None
        if call_id is None:
            return self._calls.pop(0)
        for i, call in enumerate(self._calls):
            if call.get("id") == call_id:
                return self._calls.pop(i)
        for i, call in enumerate(self._calls):
            if call.get("id") is None:
                return self._calls.pop(i)
        return None
