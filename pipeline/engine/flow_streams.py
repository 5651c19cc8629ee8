"""How the run's pipeline (`engine.flow`) reads and writes its memory streams: `_Eager` takes what a stream holds
without a checkpoint per item (a trip round the event loop each cost more than a cached case's judging), `_emit`
hands works on, `_slices` feeds them."""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator, Iterable, Iterator
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["_EAGER", "_Eager", "_emit", "_slices"]


# Works a task takes without a checkpoint before it yields to the loop all the same: each
# checkpoint is a trip round the event loop, which cost more than a cached case's judging (a warm re-run). Counted in
# works, not in chunks, so a stage that computes without awaiting still yields about once per chunk of this size.
_EAGER = 64


class _Eager:
    """Iterates `recv` (as `async for` does) taking a buffered item without the checkpoint `receive` makes first, while
    the works taken so (the items' lengths: chunks of works) stay under `_EAGER`; an empty stream is awaited as usual,
    and so is the item after those (other tasks and a cancellation get in at least that often)."""

    __slots__ = ("_recv", "_run")

    def __init__(self, recv: MemoryObjectReceiveStream[Any]) -> None:
        self._recv = recv
        self._run = 0

    def __aiter__(self) -> _Eager:
        return self

    async def __anext__(self) -> Any:
        if self._run < _EAGER:
            try:
                item = self._recv.receive_nowait()
            except anyio.WouldBlock:
                pass
            except anyio.EndOfStream:
                raise StopAsyncIteration from None
            else:
                self._run += len(item) if type(item) is list else 1
                return item
        try:
            item = await self._recv.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
        self._run = len(item) if type(item) is list else 1  # (what this checkpoint's receive brings starts the next run)
        return item


def _slices(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    """`items` in lists of at most `size`, taken as they are asked for."""
    while part := list(itertools.islice(items, size)):
        yield part


async def _emit(send: MemoryObjectSendStream[list[Any]], items: list[Any], single: bool) -> None:
    # (Sent with a checkpoint each: handed over without one, the cases of a concurrent stage finished in another order, and
    # results.jsonl's lines and the reports' ties with them.)
    if single:
        for item in items:
            await send.send([item])
    elif items:
        await send.send(items)

