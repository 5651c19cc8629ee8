"""`ordered_map`: chunks through an executor, several in flight, delivered in input order.

Order is kept so that everything downstream — which occurrence of a
duplicate id counts as the first, the order of `results.jsonl` — is the
same under every executor. The number of chunks in flight is bounded by the
executor's `concurrency` (a bounded memory object stream of slots), so a slow
consumer holds back the reader and memory stays flat.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from tracejudge.engine.executors.base import STOP_GRACE_S, ChunkLeft, Executor, ExecutorBroken, Extracted
from tracejudge.engine.live import LiveStatus

__all__ = ["Mapped", "ordered_map"]


@dataclass(eq=False)
class Mapped:
    """One chunk and what the executor made of it.

    `out` is one `Extracted` per raw record; it is None when the chunk was cut
    short by a stop (not written: a resume redoes it) or `broken` says why the
    worker computing it died. Then `partial`, when the executor split the chunk
    to find the records its worker dies on, is one entry per record: its
    `Extracted`, or why it has none. `started` is `time.perf_counter()` when the
    chunk was handed to the executor.
    """

    chunk: list[Any]
    started: float
    out: list[Extracted] | None = None
    broken: str | None = None
    partial: list[Extracted | str] | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


async def ordered_map(executor: Executor, recv: MemoryObjectReceiveStream[list[Any]], send: MemoryObjectSendStream[Mapped],
                      stop: anyio.Event, grace_s: float = STOP_GRACE_S, live: LiveStatus | None = None) -> None:
    """Send one `Mapped` per chunk received, in order; on `stop`, cancel chunks still computing after `grace_s`.

    `live.extracting` counts the records of the chunks computing (for a stop's message and the progress display).
    An executor with a `stopping` attribute is handed `stop` there, so that a worker ending during the stop
    leaves its chunk to the resume (`ChunkLeft`) instead of being retried as a death.
    """
    if hasattr(executor, "stopping"):
        executor.stopping = stop
    slots_send, slots_recv = anyio.create_memory_object_stream[Mapped](max(1, executor.concurrency - 1))
    computing: set[Mapped] = set()

    async def compute(slot: Mapped) -> None:
        if live is not None:
            live.extracting += len(slot.chunk)
        try:
            with slot.scope:
                try:
                    slot.out = await executor.map(slot.chunk)
                except ExecutorBroken as exc:
                    slot.broken, slot.partial = str(exc), exc.results
                except ChunkLeft:
                    pass  # (`out` stays None: redone on resume, like a chunk the stop cancelled)
        finally:
            if live is not None:
                live.extracting -= len(slot.chunk)
        computing.discard(slot)
        slot.done.set()

    async def deliver() -> None:
        async with slots_recv, send:
            async for slot in slots_recv:
                await slot.done.wait()
                await send.send(slot)

    async def cancel_after_stop() -> None:
        await stop.wait()
        await anyio.sleep(grace_s)
        for slot in list(computing):
            slot.scope.cancel()  # the executor kills the worker computing it

    async with anyio.create_task_group() as outer:
        outer.start_soon(cancel_after_stop)
        async with anyio.create_task_group() as tg:
            tg.start_soon(deliver)
            async with recv, slots_send:
                async for chunk in recv:
                    slot = Mapped(chunk, time.perf_counter())
                    if stop.is_set():
                        slot.done.set()  # taken after the stop: not computed, redone on resume
                    else:
                        computing.add(slot)
                        tg.start_soon(compute, slot)
                    await slots_send.send(slot)
        outer.cancel_scope.cancel()
