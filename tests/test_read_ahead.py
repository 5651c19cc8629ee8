"""`engine.read_ahead`: a format's records read in a worker thread, in order, its errors where they arose, a slow
reader's records handed on at once."""

from __future__ import annotations

import threading
from contextlib import aclosing

import anyio
import pytest
from tracejudge.engine import read_ahead as ra


def _collect(items) -> list:
    async def main() -> list:
        return [x async for x in ra.read_ahead(items)]

    return anyio.run(main)


def test_every_record_in_order_across_batches() -> None:
    n = ra.MAX_BATCH * 3 + 7
    assert _collect(range(n)) == list(range(n))
    assert _collect([]) == []


def test_an_error_arrives_after_the_records_read_before_it() -> None:
    got: list[int] = []

    def reader():
        yield from range(5)
        raise ValueError("line 6: broken")

    async def main() -> None:
        async for x in ra.read_ahead(reader()):
            got.append(x)

    with pytest.raises(ValueError, match="line 6"):
        anyio.run(main)
    assert got == [0, 1, 2, 3, 4]


def test_a_slow_reader_hands_on_each_record_before_reading_the_next() -> None:
    # The reader waits for the consumer to have its first record before it reads the second: held back for a batch,
    # the first would never arrive (the bound only ends a deadlock).
    taken = threading.Event()

    def reader():
        yield "first"
        if not taken.wait(30):
            raise AssertionError("the first record was held back while the reader waited")
        yield "second"

    async def main() -> list[str]:
        out = []
        with anyio.fail_after(60):
            async for x in ra.read_ahead(reader()):
                out.append(x)
                taken.set()
        return out

    assert anyio.run(main) == ["first", "second"]


def test_the_event_loop_runs_while_the_reader_blocks() -> None:
    # A reader that blocks until a task on the event loop has run: on the loop itself it would wait for ever.
    ran = threading.Event()

    def reader():
        if not ran.wait(30):
            raise AssertionError("no task ran while the reader blocked")
        yield 1

    async def main() -> list[int]:
        async def beside() -> None:
            ran.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(beside)
            return [x async for x in ra.read_ahead(reader())]

    assert anyio.run(main) == [1]


def test_closing_early_closes_the_reader() -> None:
    closed = []

    def reader():
        try:
            yield from range(10_000)
        finally:
            closed.append(True)

    async def main() -> int:
        async with aclosing(ra.read_ahead(reader())) as it:
            async for x in it:
                if x == 3:
                    return x
        return -1

    assert anyio.run(main) == 3
    assert closed == [True]



def test_a_stop_leaves_a_reader_that_waits_and_says_so() -> None:
    # The reader waits for data that never comes (a pipe held open): the stop ends the read at once with `ReadLeft`,
    # after the records read before it; the reader, which its thread is still inside, is not closed under it.
    waiting, release, closed = threading.Event(), threading.Event(), []

    def reader():
        try:
            yield "first"
            waiting.set()
            release.wait(60)
            yield "never"
        finally:
            closed.append(True)

    async def main() -> list[str]:
        stop, out = anyio.Event(), []

        async def stop_once_it_waits() -> None:
            await anyio.to_thread.run_sync(waiting.wait, 30)
            stop.set()

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_once_it_waits)
                with pytest.raises(ra.ReadLeft):
                    async for x in ra.read_ahead(reader(), stop):
                        out.append(x)
        return out

    try:
        assert anyio.run(main) == ["first"]
        assert closed == []
    finally:
        release.set()


def test_with_a_stop_that_never_comes_every_record_is_read_and_the_reader_closed() -> None:
    closed = []

    def reader():
        try:
            yield from range(ra.MAX_BATCH * 2 + 3)
        finally:
            closed.append(True)

    async def main() -> list[int]:
        return [x async for x in ra.read_ahead(reader(), anyio.Event())]

    assert anyio.run(main) == list(range(ra.MAX_BATCH * 2 + 3)) and closed == [True]
