"""Running out of memory: finding the MemoryError an error chain holds, and freeing what its failing frames hold.

Used by the run's stop path (`stages.reports.stopped.finish_stopped`), which writes the reports of a segment that
ran out, and by the crash path (`entrypoints.commands.failures.crash`), which writes the crash log after it: both
write only once the frames that ran out are freed, or the writing runs out of memory too.
"""

from __future__ import annotations

import gc
import traceback
from collections.abc import Iterator

__all__ = ["free_frames", "out_of_memory", "related"]


def related(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and every exception it holds (an exception group's) or was raised from or while handling (`__cause__`,
    `__context__`), each once."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [x for x in (e.__cause__, e.__context__) if x is not None]
        if isinstance(e, BaseExceptionGroup):
            todo += list(e.exceptions)


def out_of_memory(exc: BaseException) -> MemoryError | None:
    """The MemoryError that `exc` is, holds, or was raised while handling (`__context__`, `__cause__`), if any.

    Running out of memory is often reported as what failed next: the stop path writing reports under the same limit (a
    second MemoryError), or CPython's own `SystemError` ("error return without exception set") from an allocation that
    failed inside an import. The run failed because memory ran out.
    """
    return next((e for e in related(exc) if isinstance(e, MemoryError)), None)


def free_frames(exc: BaseException) -> None:
    """Clear the locals of every finished frame the tracebacks of `exc` and its related exceptions hold, then collect.

    What ran out (a half-built list) is a local of a frame the traceback keeps alive; the traceback keeps every file
    and line. Frames still running (the caller's) are left as they are (`traceback.clear_frames` skips them).
    """
    for e in related(exc):
        traceback.clear_frames(e.__traceback__)
    gc.collect()
