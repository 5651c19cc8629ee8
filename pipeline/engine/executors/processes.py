"""The process executor: extract and score in a pool of worker processes.

Built on `anyio.to_process`: each worker is a Python process fed pickled
chunks over a pipe, `processes` of them at most (`run.processes`). The job
(`CpuJob`: format name, dataset config, metric specs — a few hundred bytes)
is shipped to a worker once; the worker rebuilds the adapter and metrics
from it and keeps them, keyed by the job's hash, for the chunks that follow.

Workers start in the background when the run starts; until the first one
is ready (about half a second: importing the stages), chunks run in-process,
so a run of a few cases never waits for a worker and its results are the
same. Cancelling a chunk (a stop past `STOP_GRACE_S`) kills the worker that
computes it with SIGKILL — the only way out of a long C call such as a
catastrophic regular expression — and the pool starts a fresh one.
"""

from __future__ import annotations

import hashlib
import pickle
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
from anyio import to_process
from tracejudge.core.log import get_logger
from tracejudge.engine.executors.base import CpuJob, ExecutorBroken, Extracted

__all__ = ["INLINE_WHILE_STARTING", "ProcessExecutor"]

log = get_logger("tracejudge.executors")

INLINE_WHILE_STARTING = True
"""Run chunks in-process until the first worker is ready (False: every chunk waits for a worker)."""

# In a worker: the jobs it has rebuilt, by hash (one run's job; two while a pool is reused).
_JOBS: dict[str, CpuJob] = {}


class _NoJob(LookupError):
    """The worker has not seen this job yet: send it along."""


def _load(key: str, blob: bytes) -> CpuJob:
    job = _JOBS.get(key)
    if job is None:
        job = pickle.loads(blob)
        job.build()
        _JOBS.clear()  # one run at a time per worker: drop an earlier run's adapter and metrics
        _JOBS[key] = job
    return job


def _warm(key: str, blob: bytes) -> None:
    _load(key, blob)


def _run(key: str, blob: bytes | None, chunk: list[Any]) -> list[Extracted]:
    if blob is None and key not in _JOBS:
        raise _NoJob(key)
    return _load(key, blob or b"").run(chunk)


class ProcessExecutor:
    """Runs `job.run(chunk)` in up to `processes` worker processes; `concurrency` twice that, so none idles."""

    name = "processes"

    def __init__(self, job: CpuJob, processes: int) -> None:
        self.job = job
        self.processes = processes
        self.concurrency = 2 * processes
        self.blob = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        self.key = hashlib.sha256(self.blob).hexdigest()
        self.limiter = anyio.CapacityLimiter(processes)
        self.ready = anyio.Event()
        self.remote_chunks = 0
        self._stack = AsyncExitStack()
        self._tg: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> ProcessExecutor:
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        for _ in range(self.processes):
            self._tg.start_soon(self._start_one)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()  # workers still starting are killed
        await self._stack.__aexit__(exc_type, exc, tb)
        log.debug("executor done", executor=self.name, processes=self.processes, chunks_in_workers=self.remote_chunks)

    async def _start_one(self) -> None:
        try:
            await to_process.run_sync(_warm, self.key, self.blob, cancellable=True, limiter=self.limiter)
        except anyio.BrokenWorkerProcess as exc:
            log.warning("a worker process failed to start", error=str(exc))
            return
        self.ready.set()

    async def map(self, chunk: list[Any]) -> list[Extracted]:
        """`job.run(chunk)` in a worker (in-process while none is ready yet); raises `ExecutorBroken` if the worker dies."""
        if not self.ready.is_set():
            if INLINE_WHILE_STARTING:
                await anyio.lowlevel.checkpoint()
                return self.job.run(chunk)
            await self.ready.wait()
        self.remote_chunks += 1
        try:
            try:
                return await to_process.run_sync(_run, self.key, None, chunk, cancellable=True, limiter=self.limiter)
            except _NoJob:  # a worker the pool started after the warm-up: it gets the job now
                return await to_process.run_sync(_run, self.key, self.blob, chunk, cancellable=True, limiter=self.limiter)
        except anyio.BrokenWorkerProcess as exc:
            raise ExecutorBroken(f"the worker process died: {exc.__cause__ or exc}") from exc
