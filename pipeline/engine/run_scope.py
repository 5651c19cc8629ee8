"""What wraps a whole run (`engine.runner.run`): the cyclic collector's pace while it goes, and the one error its task
groups raise given as itself."""

from __future__ import annotations

import functools
import gc
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import anyio
from tracejudge.core.errors import TracejudgeError, leaves

__all__ = ["fewer_collections", "run_scope"]

_T = TypeVar("_T")
_P = ParamSpec("_P")


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect cyclic garbage less often while a run goes, then restore the process's settings.

    A run allocates millions of short-lived containers (parsed traces, scores) that reference
    counting frees; the cyclic collector still ran ~800 times over 10,000 cases, each pass
    also walking every object imported at start-up (pydantic schemas, modules): ~5% of a
    deterministic run. Objects alive at the start are frozen out of the passes and
    generation 0 is collected every 50,000 allocations instead of 700. Nothing a run
    computes depends on when the collector runs.
    """
    before, ours = gc.get_threshold(), (50_000, 20, 20)
    if before == ours:  # inside another run (the Python API, a thread): that one restores
        yield
        return
    gc.freeze()
    gc.set_threshold(*ours)
    paused = not gc.isenabled()  # (the command line pauses it for its start-up: `entrypoints.launch`)
    gc.enable()
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
        if paused:
            gc.disable()


def run_scope(fn: Callable[_P, Awaitable[_T]]) -> Callable[_P, Awaitable[_T]]:
    """`fn` (a whole run, `engine.runner.run`) inside `fewer_collections`, raising the one error its task groups raised as
    itself: a stage's `TracejudgeError`, or a lone error of the caller's own code, not an exception group."""

    @functools.wraps(fn)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        with fewer_collections():
            try:
                return await fn(*args, **kwargs)
            except BaseExceptionGroup as group:
                # A stage that says no case can succeed (bad credentials, an unguarded script) raises
                # inside the task groups; the caller gets that error itself, one `except` away, not
                # nested in groups beside the cancellations it caused. So does a lone error of the
                # caller's own code (an iterable of cases that raises), with the cause it was raised from.
                found = leaves(group)
                ours = next((e for e in found if isinstance(e, TracejudgeError)), None)
                if ours is not None:
                    raise ours from None
                real = [e for e in found if not isinstance(e, anyio.get_cancelled_exc_class())]
                if len(real) != 1 or not isinstance(real[0], Exception):
                    raise
                raise real[0] from real[0].__cause__

    return wrapper
