"""The pipeline's streams are read without a checkpoint per item (`engine.flow._Eager`), yet in
order, to the end, and never for long without letting other tasks in."""

from __future__ import annotations

import random

import anyio
from tracejudge.engine import flow


def _drain(items: list[object]) -> tuple[list[object], list[int]]:
    """`items` read through `_Eager` from a full stream, and the number read each time another task got a turn."""

    async def main() -> tuple[list[object], list[int]]:
        send, recv = anyio.create_memory_object_stream[object](len(items))
        for item in items:
            send.send_nowait(item)
        send.close()
        got: list[object] = []
        turns: list[int] = []

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

    return anyio.run(main)


def _longest_stretch(sizes: list[int], turns: list[int]) -> int:
    """The most works read between two turns of the other task (`sizes`: works per item read)."""
    seen = sorted(set(turns))
    return max(sum(sizes[a:b]) for a, b in zip([0, *seen], [*seen, len(sizes)], strict=True))


def test_eager_reads_every_item_in_order_and_lets_other_tasks_in() -> None:
    n = 5 * flow._EAGER + 3
    got, turns = _drain(list(range(n)))
    assert got == list(range(n))
    # The other task ran between every `_EAGER` items read: no run of reads without a checkpoint is longer.
    assert _longest_stretch([1] * n, turns) <= flow._EAGER


def test_eager_counts_works_so_a_stream_of_chunks_yields_about_once_a_chunk() -> None:
    rng = random.Random(7)
    chunks = [list(range(rng.randint(1, 40))) for _ in range(200)]
    got, turns = _drain(chunks)
    assert got == chunks
    sizes = [len(c) for c in chunks]
    # Reads go on without a checkpoint only while fewer than `_EAGER` works were taken: at most one chunk past them.
    assert _longest_stretch(sizes, turns) < flow._EAGER + max(sizes)
    big = [list(range(flow._EAGER))] * 10
    got, turns = _drain(big)
    assert got == big and _longest_stretch([flow._EAGER] * 10, turns) == flow._EAGER  # a full chunk: a checkpoint each


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
