"""How long redaction takes on a text, for the tests that its search stays linear on adversarial input."""

from __future__ import annotations

import time
from collections.abc import Callable

from tracejudge.llm.redact import redact, redact_quoted


def redaction_seconds(text: str, clock: Callable[[], float] = time.process_time) -> float:
    """The time `redact_quoted(text)` and then `redact(text)` take, by `clock` (by default CPU time: other processes on the
    machine do not count)."""
    started = clock()
    redact_quoted(text)
    redact(text)
    return clock() - started
