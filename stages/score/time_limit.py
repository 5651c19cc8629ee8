"""A time limit on every metric call (`run.metric_timeout_s`): a metric that never returns costs its score, not the run.

Sync metrics are bounded with `SIGALRM` (`signal.setitimer`): the alarm
raises `MetricTimeout` inside the metric wherever Python code runs (a
`time.sleep`, a loop, a blocking read), in a worker process or on the main
thread. `MetricTimeout` derives from `BaseException`, so a metric's own
`except Exception` cannot swallow it. Where no alarm can be set (a thread
other than the main one, a platform without `setitimer`) sync metrics run
unbounded. Async metrics are cancelled with `anyio.move_on_after`. A C call
that never returns to Python is not interrupted by the alarm; a stop
(Ctrl-C) still kills the worker computing it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from tracejudge.core.records import Score

__all__ = ["DEFAULT_S", "MetricTimeout", "Timer", "alarm", "limit", "set_default", "timeout_score"]

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


def _no_timer(*_: Any) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Timer:
    """`start()` before one metric call, `stop()` after it (in a `finally`): the call's time limit."""

    start: Callable[[], Any]
    stop: Callable[[], Any]


_UNBOUNDED = Timer(_no_timer, _no_timer)


@contextmanager
def alarm() -> Iterator[Timer]:
    """The alarm's handler installed once for a run of metric calls (one case's), each call then bounded by `Timer`.

    The same limit as `limit()` around each call, at the cost of two `setitimer` calls per
    metric instead of installing and restoring the handler each time (`signal.signal` converts
    enums in Python: with six metrics it cost more than some of the metrics). Without a limit,
    off the main thread or without `setitimer` the timer does nothing.
    """
    s = _current["seconds"]
    if s is None or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield _UNBOUNDED
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        yield Timer(partial(signal.setitimer, signal.ITIMER_REAL, s), partial(signal.setitimer, signal.ITIMER_REAL, 0))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def timeout_score(key: str, limit_s: float | None) -> Score:
    """The score of a metric call cut at the limit: `value: null`, reason `metric_timeout: …`."""
    return Score(value=None, passed=None, reason=f"metric_timeout: metric {key} did not return within {limit_s:g} s (run.metric_timeout_s)")
