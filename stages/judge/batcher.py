"""An in-stage batcher: gather items submitted by many tasks into groups, flush each group once.

`Batcher(flush, max_items, max_wait_s)` — `await batcher.submit(key, item)`
puts `item` in the open group for `key` and returns its own result once the
group was flushed. A group is flushed when it holds `max_items` items (or
`max_bytes` by `size`), or `max_wait_s` seconds after its first item came,
so a slow trickle still gets through. Each submitter gets the result at its
own index, so callers stay independent of each other.

No background task is needed: the task that opened a group (its *leader*)
waits for it to fill or time out and then runs `flush` for everyone; the
others wait for the leader. `flush(items)` returns one result per item, in
order; if it raises, every submitter of the group gets that exception.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio

__all__ = ["Batcher"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class _Group(Generic[T, R]):
    items: list[T] = field(default_factory=list)
    size: int = 0
    closed: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    results: list[R] | None = None
    error: BaseException | None = None


class Batcher(Generic[T, R]):
    """Groups items per key; see the module doc. `size(item)` is its weight against `max_bytes` (bytes)."""

    def __init__(self, flush: Callable[[list[T]], Awaitable[list[R]]], max_items: int, max_wait_s: float,
                 max_bytes: int | None = None, size: Callable[[T], int] | None = None) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        self._flush = flush
        self.max_items = max_items
        self.max_wait_s = max_wait_s
        self.max_bytes = max_bytes
        self._size = size or (lambda item: 0)
        self._open: dict[Hashable, _Group[T, R]] = {}
        self.groups_flushed = 0

    def _close(self, key: Hashable, group: _Group[T, R]) -> None:
        if self._open.get(key) is group:
            del self._open[key]
        group.closed.set()

    async def submit(self, key: Hashable, item: T) -> R:
        """`item`'s result from the flush of the group it joined; re-raises the flush's exception."""
        weight = self._size(item)
        group = self._open.get(key)
        if group is not None and self.max_bytes is not None and group.items and group.size + weight > self.max_bytes:
            self._close(key, group)  # full by bytes: its leader flushes it; this item opens the next
            group = None
        leader = group is None
        if group is None:
            group = _Group()
            self._open[key] = group
        index = len(group.items)
        group.items.append(item)
        group.size += weight
        if len(group.items) >= self.max_items or (self.max_bytes is not None and group.size >= self.max_bytes):
            self._close(key, group)
        if leader:
            with anyio.move_on_after(self.max_wait_s):
                await group.closed.wait()
            self._close(key, group)
            try:
                group.results = await self._flush(group.items)
                self.groups_flushed += 1
                if len(group.results) != len(group.items):
                    raise RuntimeError(f"flush returned {len(group.results)} results for {len(group.items)} items")
            except Exception as exc:
                group.error = exc
                raise
            finally:
                if group.results is None and group.error is None:
                    group.error = RuntimeError("the task flushing this group was cancelled")
                group.done.set()
        else:
            await group.done.wait()
        if group.error is not None:
            raise group.error
        assert group.results is not None
        return group.results[index]
