"""A time limit on every metric call (`run.metric_timeout_s`): a metric that never returns costs its score, not the run.

Sync metrics are bounded with `SIGALRM` (`signal.setitimer`): the alarm
raises `MetricTimeout` inside the metric wherever Python code runs (a
`time.sleep`, a loop, a blocking read), in a worker process or on the main
thread. `MetricTimeout` derives from `BaseException`, so a metric's own
`except Exception` cannot swallow it. Where no alarm can be set (a thread
other than the main one, a platform without `setitimer`) sync metrics run
unbounded. `score_case` watches a whole case with one alarm (`watch_case`), which
still cuts each call at its own limit, and a worker's chunk of cases shares one
(`across_cases`); `limit()` bounds one call. Async metrics are
cancelled with `anyio.move_on_after`. A C call
that never returns to Python is not interrupted by the alarm; a stop
(Ctrl-C) still kills the worker computing it.
"""

from __future__ import annotations

import _signal
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tracejudge.core.records import Score

__all__ = ["DEFAULT_S", "MetricTimeout", "Watch", "across_cases", "limit", "set_default", "timeout_score", "unwatch_case", "watch_case"]

DEFAULT_S = 60.0
"""Seconds one metric call may take before it is cut (`run.metric_timeout_s`)."""

_current: dict[str, float | None] = {"seconds": DEFAULT_S}


class MetricTimeout(BaseException):
    """Raised inside a sync metric whose call ran past the time limit."""


def set_default(seconds: float | None) -> None:
    """Set this process's limit (seconds; None or 0: no limit). Called by the run and by each worker's job."""
    _current["seconds"] = seconds or None


def seconds() -> float | None:
    """This process's limit in seconds (None: no limit)."""
    return _current["seconds"]


def _on_alarm(signum: int, frame: Any) -> None:
    raise MetricTimeout


@contextmanager
def limit() -> Iterator[None]:
    """Raise `MetricTimeout` in the body after `seconds()`; a no-op off the main thread or without a limit."""
    s = _current["seconds"]
    if s is None or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Watch:
    """The time limit of the metric calls of one case, with one alarm armed for the whole case.

    Before each call `started[0] = time.monotonic()`, after it `started[0] = None`. The alarm is
    armed once, `seconds()` from the start of the case; when it rings, its handler raises
    `MetricTimeout` only if the call in progress has run `seconds()` itself, and otherwise arms
    the alarm again for what is left of that call's time (or a full limit between calls). So each
    call is cut at exactly the limit `limit()` would give it, at the cost of a clock read per call
    instead of two `setitimer` calls: a case's six quick metrics arm the alarm once and ring never.
    `kept`: the watch of `across_cases`, which `unwatch_case` leaves armed.
    """

    __slots__ = ("kept", "previous", "s", "started")

    def __init__(self, s: float, kept: bool) -> None:
        self.s, self.kept, self.previous = s, kept, None
        self.started: list[float | None] = [None]

    def ring(self, signum: int, frame: Any) -> None:
        """The `SIGALRM` handler while the case is watched."""
        started = self.started[0]
        left = self.s if started is None else started + self.s - time.monotonic()
        if left > 0:
            _signal.setitimer(_signal.ITIMER_REAL, left)
            return
        self.started[0] = None
        _signal.setitimer(_signal.ITIMER_REAL, self.s)  # the case's next calls stay watched
        raise MetricTimeout


# While `across_cases` runs: the thread it runs on, and the watch its cases share (None until the first case arms it).
_across: dict[str, Any] = {"thread": None, "watch": None}


@contextmanager
def across_cases() -> Iterator[None]:
    """Let the cases the body scores (`score_case`) on this thread share one alarm, disarmed when the body ends.

    A worker scores a chunk of cases in a row: armed and disarmed for each, the alarm cost four system
    calls a case. Each metric call is still cut at exactly its limit (`Watch`), and a limit set meanwhile
    (`set_default`) arms the alarm anew; between cases the alarm may ring, and then only arms itself again.
    Nested, or off the main thread: no effect.
    """
    if _across["thread"] is not None or threading.current_thread() is not threading.main_thread():
        yield
        return
    _across["thread"] = threading.get_ident()
    try:
        yield
    finally:
        watch = _across["watch"]
        _across["thread"] = _across["watch"] = None
        if watch is not None:
            _disarm(watch)


def watch_case() -> Watch | None:
    """Arm the time limit for one case's metric calls (`Watch`); None (nothing armed) without a limit,
    off the main thread or without `setitimer`. Inside `across_cases`, the watch its cases share.
    Pair with `unwatch_case` in a `finally`."""
    s = _current["seconds"]
    if s is None or not _HAS_ITIMER:
        return None
    if _across["thread"] is not None and _across["thread"] == threading.get_ident():
        watch = _across["watch"]
        if watch is not None:
            if watch.s == s:
                return watch
            _disarm(watch)  # the limit changed (a job sets it as it scores its first case)
        watch = _across["watch"] = _arm(s, kept=True)
        return watch
    return _arm(s, kept=False)


def _arm(s: float, kept: bool) -> Watch | None:
    watch = Watch(s, kept)
    try:
        # `_signal.signal`: `signal.signal` converts the handlers to enums in Python, more than a metric costs. It
        # refuses (ValueError) off the main thread of the main interpreter, where no alarm can be set.
        watch.previous = _signal.signal(_signal.SIGALRM, watch.ring)
    except ValueError:
        return None
    _signal.setitimer(_signal.ITIMER_REAL, s)
    return watch


def unwatch_case(watch: Watch | None) -> None:
    """Disarm what `watch_case` armed and put the previous `SIGALRM` handler back (`across_cases` does for its watch)."""
    if watch is not None and not watch.kept:
        _disarm(watch)


def _disarm(watch: Watch) -> None:
    _signal.setitimer(_signal.ITIMER_REAL, 0)
    _signal.signal(_signal.SIGALRM, watch.previous)


_HAS_ITIMER = hasattr(signal, "setitimer")


def timeout_score(key: str, limit_s: float | None) -> Score:
    """The score of a metric call cut at the limit: `value: null`, reason `metric_timeout: …`."""
    return Score(value=None, passed=None, reason=f"metric_timeout: metric {key} did not return within {limit_s:g} s (run.metric_timeout_s)")
