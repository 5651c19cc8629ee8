"""The pipeline's streams are read and written without a checkpoint per item (`engine.flow._Eager`, `_emit`), yet in
order, to the end, and never for long without letting other tasks in."""

from __future__ import annotations

import anyio
from tracejudge.engine import flow


def test_eager_reads_every_item_in_order_and_lets_other_tasks_in() -> None:
    n = 5 * flow._EAGER + 3

    async def main() -> tuple[list[int], list[int]]:
        send, recv = anyio.create_memory_object_stream[int](n)
        for i in range(n):
            send.send_nowait(i)
        send.close()
        got: list[int] = []
        turns: list[int] = []  # how many items were read each time the other task ran

        async def other() -> None:
            while True:
                turns.append(len(got))
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            tg.start_soon(other)
            await anyio.lowlevel.checkpoint()
            async for item in flow._Eager(recv):
                got.append(item)
            tg.cancel_scope.cancel()
        return got, turns

    got, turns = anyio.run(main)
    assert got == list(range(n))
    # The other task ran between every `_EAGER` items read: no run of reads without a checkpoint is longer.
    seen = sorted(set(turns))
    assert max(b - a for a, b in zip([0, *seen], [*seen, n], strict=True)) <= flow._EAGER


def test_eager_waits_for_items_that_come_later_and_ends_with_the_stream() -> None:
    async def main() -> list[int]:
        send, recv = anyio.create_memory_object_stream[list[int]](1)
        got: list[int] = []

        async def produce() -> None:
            async with send:
                for i in range(3 * flow._EAGER):
                    await flow._emit(send, [i, i + 1000], single=True)  # one item at a time, as to a concurrent stage
                    await anyio.sleep(0)

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            async for works in flow._Eager(recv):
                got.extend(works)
        return got

    got = anyio.run(main)
    assert got == [x for i in range(3 * flow._EAGER) for x in (i, i + 1000)]
