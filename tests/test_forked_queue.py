"""A forked worker holds up to `DEPTH` chunks (`engine.executors.forked`): one computing, the next waiting in its socket.

When the worker dies, the chunk at the head of its queue is the one it died on (or beside): it raises
`WorkerDied`, as a lone chunk always has, and gets the executor's one retry and, after a second
death, its pinning. A chunk still waiting behind it had not been read: it raises `WorkerLost`, which
the process executor hands to a live worker without counting a death against its records. Real forked
processes over the demo's dataset; the worker is stopped (SIGSTOP) so that both chunks are known to
be in its socket before it is killed.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest
from tracejudge.core import registry
from tracejudge.core.config import load_config
from tracejudge.engine import runner
from tracejudge.engine.executors.base import CpuJob
from tracejudge.engine.executors.exits import WorkerDied
from tracejudge.engine.executors.forked import DEPTH, ForkedPool, WorkerLost
from tracejudge.engine.executors.processes import ProcessExecutor

DEMO = Path(__file__).resolve().parents[1] / "configs" / "demo.yaml"


def _job_and_records(n: int) -> tuple[CpuJob, list]:
    cfg = load_config(DEMO, ["run.processes=2"])
    job = CpuJob(format_name=cfg.dataset.format, dataset=cfg.dataset, metric_specs=cfg.metrics, metrics=None, merge=runner._merge_unjudged,
                 score=True, keep_case=False)
    records = []
    for raw in registry.format_for(cfg.dataset.format).read(cfg.dataset):
        records.append(raw)
        if len(records) == n:
            break
    return job, records


def test_the_chunk_waiting_behind_a_dying_one_is_lost_not_blamed():
    import pickle

    job, records = _job_and_records(8)
    pool = ForkedPool(pickle.dumps(job), 1)
    worker = pool.workers[0]
    got: dict[str, BaseException | object] = {}

    async def main() -> None:
        os.kill(worker.pid, signal.SIGSTOP)  # reads nothing: both chunks wait in its socket

        async def call(name: str, chunk: list) -> None:
            try:
                got[name] = await worker.call(chunk)
            except WorkerDied as exc:
                got[name] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "first", records[:4])
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(call, "second", records[4:])
            await anyio.wait_all_tasks_blocked()
            assert worker.in_flight == 2 == DEPTH and pool.idle() is None
            os.kill(worker.pid, signal.SIGKILL)

    try:
        anyio.run(main)
    finally:
        pool.close()
    assert type(got["first"]) is WorkerDied
    assert type(got["second"]) is WorkerLost


def test_queued_chunks_come_back_in_order_and_whole():
    import pickle

    job, records = _job_and_records(12)
    pool = ForkedPool(pickle.dumps(job), 1)
    worker = pool.workers[0]
    alone = job.run(records)
    got: dict[int, list] = {}

    async def main() -> None:
        async def call(i: int) -> None:
            got[i] = await worker.call(records[4 * i:4 * i + 4])

        async with anyio.create_task_group() as tg:
            for i in range(3):  # one more than DEPTH: the third waits for a place, not for a reply
                tg.start_soon(call, i)

    try:
        anyio.run(main)
    finally:
        pool.close()
    from tracejudge.engine.executors.wire import unpack_results

    flat = [x for i in range(3) for x in unpack_results(got[i])]
    assert [x.case_id if hasattr(x, "case_id") else x for x in flat] == [x.case_id if hasattr(x, "case_id") else x for x in alone]
    assert len(flat) == 12


@pytest.mark.parametrize("stop_first", [True, False])
def test_the_executor_gives_a_lost_chunk_to_a_live_worker(stop_first):
    # Through `ProcessExecutor.map`: worker 0 holds two chunks and is killed; the one it was on is retried once
    # (the warning), the one waiting behind it is computed elsewhere, and both come back equal to the job's own results.
    job, records = _job_and_records(8)
    expected = [repr(x) for x in job.run(records)]
    ex = ProcessExecutor(job, 2)
    ex.all_inline, ex.inline_left = False, 0  # (the demo is small: it would run in-process)
    out: dict[str, list] = {}

    async def main() -> None:
        async with ex:
            assert ex.pool is not None
            a, b = ex.pool.workers
            os.kill(a.pid, signal.SIGSTOP)
            os.kill(b.pid, signal.SIGSTOP)
            async with anyio.create_task_group() as tg:
                async def m(name: str, chunk: list) -> None:
                    out[name] = await ex.map(chunk)
                for i, name in enumerate("wxyz"):
                    tg.start_soon(m, name, records[2 * i:2 * i + 2])
                    await anyio.wait_all_tasks_blocked()
                assert a.in_flight == b.in_flight == 2
                victim, other = (a, b) if stop_first else (b, a)
                os.kill(victim.pid, signal.SIGKILL)
                os.kill(other.pid, signal.SIGCONT)

    anyio.run(main)
    assert [repr(x) for name in "wxyz" for x in out[name]] == expected


class _KilledAtSecondSend:
    """A worker's socket, its worker killed from outside just as the second chunk is sent: after the event loop last
    polled (the call ahead, its chunk sent, is waiting for the reply) and before that send meets the death (EPIPE)."""

    def __init__(self, sock: object, pid: int) -> None:
        self._sock, self._pid, self._sends = sock, pid, 0

    def __getattr__(self, name: str) -> object:
        return getattr(self._sock, name)

    def sendmsg(self, parts: list) -> int:
        self._sends += 1
        if self._sends == 2:
            os.kill(self._pid, signal.SIGKILL)
            os.waitid(os.P_PID, self._pid, os.WEXITED | os.WNOWAIT)  # dead (not reaped) before this send
        return self._sock.sendmsg(parts)


def test_a_death_met_first_by_the_chunk_queued_behind_still_reaches_the_chunk_computing():
    # The queued call's send fails (the worker is dead) and kills the worker, closing its socket, while the call ahead
    # waits for that socket to be readable. Closed under it, with no poll of the event loop since the death, it waited
    # for ever (epoll forgets a closed descriptor): the run hung with every process idle. It must learn of the death.
    import pickle

    job, records = _job_and_records(8)
    pool = ForkedPool(pickle.dumps(job), 1)
    worker = pool.workers[0]
    worker.sock = _KilledAtSecondSend(worker.sock, worker.pid)  # type: ignore[assignment]
    got: dict[str, BaseException | object] = {}

    async def main() -> None:
        os.kill(worker.pid, signal.SIGSTOP)  # computes nothing: the first chunk has no reply when the worker dies

        async def call(name: str, chunk: list) -> None:
            try:
                got[name] = await worker.call(chunk)
            except WorkerDied as exc:
                got[name] = exc

        with anyio.fail_after(60):  # (a guard only: without the fix the first call never returns)
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "first", records[:4])
                await anyio.wait_all_tasks_blocked()  # sent, and waiting for its reply
                tg.start_soon(call, "second", records[4:])

    try:
        anyio.run(main)
    finally:
        pool.close()
    assert type(got["second"]) is WorkerLost
    assert type(got["first"]) is WorkerDied and str(got["first"]) == "killed by signal SIGKILL (9)"


def test_the_executor_retries_a_chunk_whose_death_the_chunk_queued_behind_met_first():
    # Through `ProcessExecutor.map`, as the run meets it: the chunk computing is retried once, the one queued behind
    # goes to the live worker, and all come back equal to the job's own results (the run hung instead).
    job, records = _job_and_records(6)
    expected = [repr(x) for x in job.run(records)]
    ex = ProcessExecutor(job, 2)
    ex.all_inline, ex.inline_left = False, 0  # (the demo is small: it would run in-process)
    out: dict[str, list] = {}

    async def main() -> None:
        async with ex:
            assert ex.pool is not None
            a, b = ex.pool.workers
            a.sock = _KilledAtSecondSend(a.sock, a.pid)  # type: ignore[assignment]
            os.kill(a.pid, signal.SIGSTOP)
            os.kill(b.pid, signal.SIGSTOP)
            with anyio.fail_after(120):  # (a guard only)
                async with anyio.create_task_group() as tg:
                    async def m(name: str, chunk: list) -> None:
                        out[name] = await ex.map(chunk)
                    for i, name in enumerate("xyz"):  # x to worker a, y to b, z queued behind x on a (its send meets the death)
                        tg.start_soon(m, name, records[2 * i:2 * i + 2])
                        await anyio.wait_all_tasks_blocked()
                    assert a.dead
                    os.kill(b.pid, signal.SIGCONT)

    anyio.run(main)
    assert [repr(x) for name in "xyz" for x in out[name]] == expected
