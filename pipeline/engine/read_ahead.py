"""A dataset's records read in a worker thread, so a slow reader never stops the event loop.

A format's `read` is a plain generator: it opens files, parses whole JSON documents (a τ-bench
results file is one array), or, for a custom format, does whatever its author wrote — blocking
I/O included. Advanced on the event loop, each of those waits stopped everything else the run
does meanwhile: the judge's requests in flight, the progress bar and its ETA count (itself read in
a thread, which could not start), checkpoints, and Ctrl-C's orderly stop.

Here the generator is advanced in a worker thread, a batch of records per hop, while the event
loop goes on. The batch adapts to the reader: it starts at one record and doubles at each hop
whose records all came within `BATCH_SECONDS` (up to `MAX_BATCH`: a JSONL file's lines, a few µs
each, cost a hop per 512), and falls back to one record whenever a hop took longer, so a slow
reader (a record a second) has each record handed on as soon as it is read. A reader that is fast
and then blocks keeps the records of the hop under way until its next record or its end. No thread
runs beside the event loop's own work: the loop waits for the hop (a reading thread alongside the
scoring would contend with it for the interpreter). The records keep their order; the reader's
exception arrives after the records read before it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Iterable, Iterator
from typing import Any

import anyio

__all__ = ["BATCH_SECONDS", "MAX_BATCH", "read_ahead"]

MAX_BATCH = 512
"""Records one hop to the worker thread reads at most: the hop's cost (tens of µs) spread over them."""

BATCH_SECONDS = 0.02
"""A hop whose records took longer than this (s) hands them on and makes the next hop a single record."""


def _gather(it: Iterator[Any], size: int) -> tuple[list[Any], bool, BaseException | None, bool]:
    """(In the worker thread.) Up to `size` records: `(records, ended, error, slow)`; `slow`: they took over `BATCH_SECONDS`."""
    out: list[Any] = []
    started = time.monotonic()
    try:
        for item in it:
            out.append(item)
            if len(out) >= size:
                return out, False, None, time.monotonic() - started > BATCH_SECONDS
            if time.monotonic() - started > BATCH_SECONDS:
                return out, False, None, True
    except Exception as exc:  # raised again on the event loop, after the records read before it
        return out, True, exc, False
    return out, True, None, False


async def read_ahead(items: Iterable[Any]) -> AsyncGenerator[Any, None]:
    """`items` (a format's `read(dataset)`), advanced in a worker thread; an async generator of the same items.

    Raises what iterating `items` raises, after the items read before it. Closing this generator closes
    `items`' iterator (its open files), which no thread is then inside.
    """
    it = iter(items)
    size = 1
    try:
        while True:
            batch, ended, error, slow = await anyio.to_thread.run_sync(_gather, it, size)
            size = 1 if slow else min(size * 2, MAX_BATCH)
            for item in batch:
                yield item
            if error is not None:
                raise error
            if ended:
                return
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
