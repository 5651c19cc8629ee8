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

A stop (the run's first SIGTERM or Ctrl-C, `stop`) ends the read even while a hop waits on the reader: a reader blocked
on a pipe that stays open without data, or on a server that stalls mid-page, never returned, and the run, waiting for
the hop, could not wind down until it did. The hop's thread is then left inside the reader (it is not closed: a thread
is inside it) and ends with the process (`cli.console_main` does not wait for such a thread).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Iterable, Iterator
from typing import Any

import anyio

__all__ = ["BATCH_SECONDS", "MAX_BATCH", "ReadLeft", "read_ahead"]

MAX_BATCH = 512
"""Records one hop to the worker thread reads at most: the hop's cost (tens of µs) spread over them."""

BATCH_SECONDS = 0.02
"""A hop whose records took longer than this (s) hands them on and makes the next hop a single record."""


class ReadLeft(Exception):
    """Raised by `read_ahead` when its stop was set while a hop waited on the reader: the records after it were not read."""


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


async def _hop(it: Iterator[Any], size: int, stop: anyio.Event) -> tuple[list[Any], bool, BaseException | None, bool] | None:
    """`_gather(it, size)` in a worker thread; None when `stop` is set first (the thread is then left to finish alone)."""
    got = None
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            await stop.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        got = await anyio.to_thread.run_sync(_gather, it, size, abandon_on_cancel=True)
        tg.cancel_scope.cancel()
    return got


async def read_ahead(items: Iterable[Any], stop: anyio.Event | None = None) -> AsyncGenerator[Any, None]:
    """`items` (a format's `read(dataset)`), advanced in a worker thread; an async generator of the same items.

    Raises what iterating `items` raises, after the items read before it. Closing this generator closes
    `items`' iterator (its open files), which no thread is then inside. With `stop`: once it is set while a hop waits
    on the reader, raises `ReadLeft` at once, and `items`' iterator, which that hop's thread is still inside, is left
    unclosed.
    """
    it = iter(items)
    size = 1
    inside = False  # a hop's thread is (or may still be) inside `it`: it is not closed then
    try:
        while True:
            if stop is None:
                got = await anyio.to_thread.run_sync(_gather, it, size)
            else:
                if stop.is_set():
                    raise ReadLeft("the dataset's read was left on a stop")
                inside = True  # (till the hop returns: a cancellation from outside leaves its thread too)
                got = await _hop(it, size, stop)
                if got is None:
                    raise ReadLeft("the dataset's read was left on a stop")
                inside = False
            batch, ended, error, slow = got
            size = 1 if slow else min(size * 2, MAX_BATCH)
            for item in batch:
                yield item
            if error is not None:
                raise error
            if ended:
                return
    finally:
        close = getattr(it, "close", None)
        if close is not None and not inside:
            close()
