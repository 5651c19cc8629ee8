"""Chunks of slow records computed in pieces by several workers side by side (`ProcessExecutor.map`).

A chunk whose records are slow (a custom metric taking a tenth of a second a case) went whole to one worker, which
computed it while the others idled: 40 such cases took as long with two workers as with one. `parts_for` says how many
pieces a chunk goes in, by the pace records have come back at; `split` computes them and puts the results back in the
chunk's order, a worker's death costing what it costs a whole chunk.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import anyio
from tracejudge.core.log import get_logger
from tracejudge.engine.executors.base import ChunkLeft, ExecutorBroken, Extracted
from tracejudge.engine.executors.pin import budget_for

__all__ = ["PIECE_S", "parts_for", "split"]

log = get_logger("tracejudge.executors")

PIECE_S = 0.25
"""Seconds a chunk may keep one worker busy, by the time records have taken so far: a chunk expected to take longer is
split into pieces of about this long, at least one per worker, computed side by side, in order (`ProcessExecutor.map`);
so is every chunk handed over before a record has come back from a worker. A piece costs a trip to a worker (about half
a CPU-millisecond for the whole pipeline, measured with chunks of 2 against 128 τ-bench records): well under 1% of
this. Whole chunks of fast records (τ-bench's six checks: 128 records in about 15 ms) are not split."""


def parts_for(processes: int, record_s: float | None, records: int) -> int:
    """How many pieces a chunk of `records` goes to `processes` workers in (`PIECE_S`): 1 (whole) when the pace so far
    (`record_s`, seconds a record took in a worker) says it takes less than `PIECE_S`, else about one per `PIECE_S` of it
    and at least one per worker; before any record has come back (`record_s` None), one per worker."""
    if processes < 2 or records < 2:
        return 1
    if record_s is None:
        return min(records, processes)
    want = math.ceil(records * record_s / PIECE_S)
    return 1 if want < 2 else min(records, max(processes, want))


async def split(ex: Any, chunk: list[Any], parts: int, died_of: Callable[[BaseException], str | None]) -> list[Extracted]:
    """`ex.job.run(chunk)` computed in `parts` pieces side by side (`_wave`), in the chunk's order; `ex` is the
    `ProcessExecutor` (its `_timed`, `_pinned`, `_parts`, `_pieces` and `stopping`), `died_of` its reading of a worker's death.

    A worker's death costs what it costs a whole chunk: the records left without results are tried once more (split
    again), and after a second death they are split to pin the deaths on the records causing them (`_pin`), with what
    is left of the deaths an unsplit chunk may cost: a worker that dies on every record costs as many workers as it
    did before chunks were split, not a few per piece.
    """
    out: list[Extracted | str | None] = [None] * len(chunk)
    todo = list(range(len(chunk)))
    deaths, why = 0, ""
    for _ in range(2):
        died = await _wave(ex, chunk, todo, parts, out, died_of)
        todo = [i for i in todo if out[i] is None]
        if not todo:
            return out  # type: ignore[return-value]
        if ex.stopping is not None and ex.stopping.is_set():  # (the stop kills workers, and the chunk is not written)
            raise ChunkLeft(died[0][0] if died else "the run stopped before every piece of the chunk was computed")
        deaths += len(died)
        why = died[0][0] if died else why
        if deaths >= 2:
            break
        log.warning("a worker process died; its chunk is tried once more in a fresh worker", records=len(todo), error=why,
                    pid=died[0][1] if died else None)
        parts = ex._parts(len(todo))
    got = await ex._pinned([chunk[i] for i in todo], why, max(1, budget_for(len(chunk)) + 2 - deaths))
    for i, item in zip(todo, got, strict=True):
        out[i] = item
    lost = sum(isinstance(x, str) for x in out)
    if not lost:
        return out  # type: ignore[return-value]
    raise ExecutorBroken(f"the worker process died on {lost} of {len(chunk)} records: {why}", out)  # type: ignore[arg-type]

async def _wave(ex: Any, chunk: list[Any], todo: list[int], parts: int, out: list[Extracted | str | None],
            died_of: Callable[[BaseException], str | None]) -> list[tuple[str, int | None]]:
    # The records at `todo` (places in `chunk`) in `parts` pieces, each computed in a worker and its results put in
    # `out` at their places; returns the deaths met, (why, pid). One piece a worker at a time (a forked one: `DEPTH`),
    # an earlier chunk's pieces first (`_pieces` serves in turn). Once a worker died, another exception was raised or
    # the run stops, no further piece starts; that exception is raised when the pieces under way have ended.
    size = -(-len(todo) // parts)
    died: list[tuple[str, int | None]] = []
    raised: list[Exception] = []

    async def piece(places: list[int]) -> None:
        async with ex._pieces:
            if died or raised or (ex.stopping is not None and ex.stopping.is_set()):
                return
            try:
                got = await ex._timed([chunk[i] for i in places])
            except Exception as exc:
                why = died_of(exc)
                if why is None:
                    raised.append(exc)
                else:
                    died.append((why, getattr(exc.__cause__, "pid", None)))
                return
        for i, item in zip(places, got, strict=True):
            out[i] = item

    async with anyio.create_task_group() as tg:
        for at in range(0, len(todo), size):
            tg.start_soon(piece, todo[at:at + size])
    if raised:
        raise raised[0]
    return died
