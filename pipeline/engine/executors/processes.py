"""The process executor: extract and score in a pool of worker processes.

Built on `anyio.to_process`: each worker is a Python process fed pickled
chunks over a pipe, `processes` of them at most (`run.processes`), started
on first use and reused. On Linux a job of tracejudge's own adapters and
metrics forks its workers from this process instead (`executors.forked`:
ready in milliseconds, nothing imported again), all of them as the executor is
entered; a forked worker that dies is replaced by a spawned one. Either way
chunks and results travel as tuples of builtins (`executors.wire`). Each call carries the job (`CpuJob`: format name,
dataset config, metric specs — a few hundred bytes, pickled once); a worker
rebuilds the adapter and metrics from it the first time and keeps them,
keyed by the job's hash, for the chunks that follow.

A spawned worker costs about a second of CPU to start (importing the stages), more
than a few hundred records take. So the first `INLINE_RECORDS` records of a
job made only of tracejudge's own adapters and metrics run in-process, one
record at a time, and a small run never starts a worker (its results are the
same either way); nor does a built-in job whose dataset file is small
(`INLINE_BYTES`), however many records it holds. A run that hands over a full chunk (`min_chunk` records:
more are likely to follow) starts its workers then, in the background, so
they are ready when the in-process share runs out instead of stalling the
run for a worker's start-up. A job with user code — an adapter or metric given as an
import path — or a user-supplied pattern (`Regex`) goes to workers from its
first record, so the event loop never runs code that may not return.

A chunk whose records are slow (a custom metric taking a tenth of a second a case) is split into pieces that the
workers compute side by side (`PIECE_S`): whole, a chunk of 40 such cases kept one worker busy for its whole length while
the others idled. Fast records keep whole chunks, whose trips cost less per record.

Cancelling a chunk (a stop past `STOP_GRACE_S`) kills the worker computing
it with SIGKILL — the only way out of a long C call such as a catastrophic
regular expression — and the pool starts a fresh one when needed.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import pickle
import signal
import sys
import time
from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel
from anyio import to_process
from tracejudge.core.errors import UnguardedScript
from tracejudge.core.log import get_logger
from tracejudge.engine.executors.base import ChunkLeft, CpuJob, ExecutorBroken, Extracted
from tracejudge.engine.executors.exits import WorkerDied, noting, watched
from tracejudge.engine.executors.forked import DEPTH, ForkedPool, WorkerLost, fork_suits
from tracejudge.engine.executors.pieces import PIECE_S, parts_for, split
from tracejudge.engine.executors.pin import budget_for, pin_deaths
from tracejudge.engine.executors.wire import pack_chunk, pack_results, unpack_chunk, unpack_results

__all__ = ["INLINE_RECORDS", "PIECE_S", "ProcessExecutor"]

log = get_logger("tracejudge.executors")

INLINE_RECORDS = 256
"""Records of a built-in job that run in-process before the first worker is started (0: none)."""

INLINE_BYTES = 8 << 20
"""A built-in job over a dataset file no larger than this runs wholly in-process (four times as large when it only
extracts, scoring nothing: a judged run): its records take less than the workers would to start (about a CPU-second
each, and the cases pickled both ways). Only while `INLINE_RECORDS` is not 0."""

# In a worker: the job it has rebuilt, by hash (one run at a time per worker).
_JOBS: dict[str, CpuJob] = {}
# In a worker: the head whose death ends it, once the parent-death signal is set (`_die_with`).
_WATCHING: list[int] = []


def _die_with(parent: int) -> None:
    """End this worker when process `parent` dies: Linux's parent-death signal (prctl), set once per worker.

    A head killed with SIGKILL cannot stop its workers; without this they would keep computing
    (and holding memory) as orphans. Elsewhere nothing is set: idle workers still end when
    their pipe from the head closes.
    """
    if _WATCHING:
        return
    _WATCHING.append(parent)
    # A terminal's Ctrl-C reaches the whole process group: the head stops the run and lets the chunks in
    # flight finish, so the worker must not die of it mid-chunk (its KeyboardInterrupt reached the head).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    if os.getppid() != parent:  # the head died before the signal was set
        os._exit(1)


def _own_session_for_workers() -> None:
    """Make `anyio.to_process` start its workers in a session of their own (idempotent).

    A terminal's Ctrl-C signals its foreground process group. A worker ignores SIGINT once its
    first call runs (`_die_with`), but it starts by launching an interpreter and importing the
    stages: a Ctrl-C in that second killed it with a `KeyboardInterrupt` traceback on the terminal.
    In a session of its own, the terminal's signals never reach it; the head alone decides how
    the run stops, and the worker still ends with it (parent-death signal, or its pipe closing).
    anyio's spawning offers no such option, so its `open_process` is wrapped where `to_process` calls it;
    the wrapper also hands anyio each worker `exits.watched`, so a worker's death says how it died.
    """
    real = getattr(to_process, "open_process", None)
    if real is None or getattr(real, "own_session", False):
        return

    async def open_worker(command: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("start_new_session", True)
        return watched(await real(command, **kwargs))

    open_worker.own_session = True  # type: ignore[attr-defined]
    to_process.open_process = open_worker  # type: ignore[attr-defined]


def _run(key: str, blob: bytes, chunk: list[Any], parent: int = 0) -> list[Any]:
    # `job.run` of a chunk packed by `wire.pack_chunk`, its results packed by `wire.pack_results`.
    if parent:
        _die_with(parent)
    job = _JOBS.get(key)
    if job is None:
        job = pickle.loads(blob)
        job.build()
        _JOBS.clear()  # drop an earlier run's adapter and metrics
        _JOBS[key] = job
    return pack_results(job.run(unpack_chunk(chunk)))  # type: ignore[return-value]


def _cannot_start(exc: BaseException) -> bool:
    # A worker whose start-up raised (the parent's script fails when imported), as opposed to one
    # killed while starting (its pipe just ended): only the first fails the same way every time.
    died = (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, WorkerDied)
    return "initialization" in str(exc) and not isinstance(exc.__cause__, died)


def _died(exc: BaseException) -> str | None:
    # Why the worker died, when `exc` says it died computing or starting (killed, crashed): how it ended (`exits.ended`)
    # when that is known; None for a worker that cannot start (its start-up raises: every worker would) and for any
    # other exception.
    if isinstance(exc, ProcessLookupError):
        return f"the worker process died while starting: {exc}"
    if not isinstance(exc, anyio.BrokenWorkerProcess) or _cannot_start(exc) or isinstance(exc.__cause__, UnguardedScript):
        return None
    # (A stand-in killed while it started ends before anyio sees its exit status: its error is empty.)
    return str(exc.__cause__ or exc) or "the worker process ended before it said how (killed or crashed while starting)"


def _builtin(job: CpuJob) -> bool:
    # True when every adapter and metric of the job is tracejudge's own and runs no user pattern.
    if ":" in job.format_name:
        return False
    return all(type(m).__module__.startswith("tracejudge.") and not hasattr(m, "pattern") for m in job.build()[2])


def _small_dataset(job: CpuJob) -> bool:
    # A local dataset file (and tasks file) whose bytes the loop extracts sooner than workers start (`INLINE_BYTES`).
    paths = [p for p in (getattr(job.dataset, "path", None), getattr(job.dataset, "tasks", None)) if p]
    try:
        size = sum(os.stat(p).st_size for p in paths) if paths and all(os.path.isfile(p) for p in paths) else None
    except (OSError, TypeError, ValueError):
        size = None
    if size is None or (job.fmt is not None and getattr(job.fmt, "remote", False)):
        return False
    return size <= (INLINE_BYTES if job.build()[2] else 4 * INLINE_BYTES)


class ProcessExecutor:
    """Runs `job.run(chunk)` in up to `processes` worker processes; `concurrency` twice that, so none idles.

    Forked workers are each given up to `forked.DEPTH` chunks at once (the next waits in the worker's socket),
    and `concurrency` is then `DEPTH + 1` per worker: the head reads and folds one chunk's results while each
    worker computes. A chunk that was only waiting when its worker died (`WorkerLost`) goes to a live worker
    without counting as a death. A chunk of slow records goes to the workers in pieces, side by side (`PIECE_S`).
    """

    name = "processes"
    min_chunk = 128  # records per trip to a worker (a chunk of slow records is split, `PIECE_S`): the pickling and the pipe cost per trip

    def __init__(self, job: CpuJob, processes: int) -> None:
        self.job = job
        self.processes = processes
        self.concurrency = 2 * processes
        self.blob = b""
        self.key = ""
        self.limiter = anyio.CapacityLimiter(processes)
        self._spawn_slots = anyio.CapacityLimiter(processes)  # (spawned calls made while holding a `limiter` slot)
        self._fork_slots = anyio.CapacityLimiter(DEPTH * processes)  # chunks under way on forked workers (or their stand-ins)
        builtin = _builtin(job)
        self.inline_left = INLINE_RECORDS if builtin else 0
        self.forks = builtin and fork_suits()  # forked workers (`executors.forked`) instead of spawned ones
        self.pool: ForkedPool | None = None
        self.all_inline = bool(self.inline_left) and _small_dataset(job)
        if self.all_inline:
            self.inline_left = sys.maxsize
            log.info("running extract and score in-process: the dataset is small", executor="processes")
        self.unstartable: str | None = None  # why a worker could not start (then everything runs in-process)
        self._warming: anyio.abc.TaskGroup | None = None
        self._warm_started = False
        self.stopping: anyio.Event | None = None  # the run's stop (`ordered_map`): a death after it is no fault
        self.record_s: float | None = None  # seconds a record took in a worker, by the last chunk or piece back (None: none yet)
        self._pieces = anyio.CapacityLimiter(processes)  # pieces of split chunks under way (`_wave`): one a worker (forked: DEPTH)

    async def __aenter__(self) -> ProcessExecutor:
        _own_session_for_workers()
        self.blob = pickle.dumps(self.job, protocol=pickle.HIGHEST_PROTOCOL)  # the job as it stands when the run starts
        self.key = hashlib.sha256(self.blob).hexdigest()
        if self.forks and not self.all_inline:
            # Forked now, before the run reads a record or starts anything else; ready in milliseconds, so no record
            # waits in-process for them.
            try:
                self.pool = ForkedPool(self.blob, self.processes)
                self.inline_left = 0
                self.concurrency = (DEPTH + 1) * self.processes  # each worker's DEPTH, and the chunks the head reads meanwhile
                self._pieces.total_tokens = DEPTH * self.processes  # (a piece waits in a worker's socket as a chunk does)
                self._spawn_slots.total_tokens = 1
            except OSError as exc:
                log.warning("worker processes could not be forked; they are spawned instead", reason=str(exc)[:300])
        # Entered and left by the task that enters and leaves the executor, as anyio requires.
        self._warming = anyio.create_task_group()
        await self._warming.__aenter__()
        return self

    @property
    def head_waits(self) -> bool:
        """True when forked workers compute the chunks: this process then mostly waits for their results."""
        return self.pool is not None

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # Idle workers are stopped by anyio when the event loop ends; one still starting is cancelled (killed).
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self._warming is not None:
            self._warming.cancel_scope.cancel()
            await self._warming.__aexit__(None, None, None)
            self._warming = None

    async def _warm(self) -> None:
        # Start a worker and build the job in it; a failure here is met again, and reported, by `map`.
        with contextlib.suppress(Exception):
            await to_process.run_sync(_run, self.key, self.blob, [], os.getpid(), cancellable=True, limiter=self.limiter)

    async def _spawned(self, chunk: list[Any], limiter: anyio.CapacityLimiter) -> list[Extracted]:
        # `job.run(chunk)` in a spawned worker; its death raised as `BrokenWorkerProcess` from `WorkerDied` saying how it
        # died, when its exit status was read (`exits.noting`).
        with noting() as found:
            try:
                return unpack_results(await to_process.run_sync(_run, self.key, self.blob, pack_chunk(chunk), os.getpid(), cancellable=True,
                                                                limiter=limiter))
            except anyio.BrokenWorkerProcess as exc:
                if not found or _died(exc) is None:
                    raise
                pid, how = found[-1]  # the worker this call used (`exits.noting`)
                raise anyio.BrokenWorkerProcess(str(exc)) from WorkerDied(how, pid)

    async def _compute(self, chunk: list[Any]) -> list[Extracted]:
        # `job.run(chunk)` in an idle forked worker, else (none forked, or all of them dead) in a spawned one.
        if self.pool is None:
            return await self._spawned(chunk, self.limiter)
        # The slot taken to pick a worker is kept for a spawned one too: released in between, two chunks that
        # both found every live forked worker busy each started a spawned worker, and a forked worker's death
        # left three processes working for `processes: 2`. Spawned workers stand in only for dead forked ones.
        async with self._fork_slots:
            for _ in range(DEPTH * self.processes + 1):
                worker = self.pool.idle()
                if worker is None:
                    self._spawn_slots.total_tokens = max(1, self.processes - self.pool.live())
                    return await self._spawned(chunk, self._spawn_slots)
                try:
                    return unpack_results(await worker.call(chunk))  # (which packs the records itself, `wire.split_payloads`)
                except WorkerLost:
                    continue  # it waited behind a chunk whose worker died: given to a live worker, its own try intact
                except WorkerDied as exc:
                    raise anyio.BrokenWorkerProcess(str(exc)) from exc
            raise anyio.BrokenWorkerProcess("forked worker processes kept dying before computing this chunk")

    async def map(self, chunk: list[Any]) -> list[Extracted]:
        """`job.run(chunk)` in a worker (the first records of a built-in job in-process). After a worker's death the chunk
        is tried once more in a fresh worker; after a second, it is split to pin the deaths on the records causing them
        (`executors.pin`), and `ExecutorBroken` carries the results of the others (`results`).

        A worker that cannot even start (the parent's script raises when a
        worker imports it) would fail every chunk alike: the rest of the run
        goes in-process, with a warning naming the cause. A script that starts a
        run at its top level raises `UnguardedScript`, which stops the run.
        """
        if self.inline_left >= len(chunk) or self.unstartable is not None:
            self.inline_left -= len(chunk)
            if self.unstartable is None and not self._warm_started and not self.all_inline and self._warming is not None and len(chunk) >= self.min_chunk:
                self._warm_started = True
                for _ in range(self.processes):
                    self._warming.start_soon(self._warm)
            from tracejudge.stages.score.faults import ON_LOOP, OWED, loop_task, settle_owed

            out: list[Extracted] = []
            task = loop_task()  # (a case's own custom metric may cancel it: `stages.score.faults.own_cancel`)
            for raw in chunk:  # one record at a time: a stop or cancellation gets in between
                await anyio.lowlevel.checkpoint()
                token = ON_LOOP.set(task)
                try:
                    out.extend(self.job.run([raw]))
                finally:
                    ON_LOOP.reset(token)
                if OWED.get():  # taken here, not by the run
                    await settle_owed()
            return out
        self.inline_left = 0
        try:
            parts = self._parts(len(chunk))
            if parts > 1:
                return await self._split(chunk, parts)
            try:
                return await self._timed(chunk)
            except (anyio.BrokenWorkerProcess, ProcessLookupError) as exc:  # (anyio kills a worker that died starting: already gone)
                if _died(exc) is None:
                    raise  # a worker that cannot start fails the same way again (handled below)
                if self.stopping is not None and self.stopping.is_set():
                    raise ChunkLeft(_died(exc) or "") from exc  # (the stop kills workers: no retry, no warning)
                # Killed from outside (the OOM killer, a stray SIGKILL): a fresh worker tries the chunk once more.
                log.warning("a worker process died; its chunk is tried once more in a fresh worker", records=len(chunk),
                            error=_died(exc), pid=getattr(exc.__cause__, "pid", None))
                try:
                    return await self._compute(chunk)
                except (anyio.BrokenWorkerProcess, ProcessLookupError) as again:
                    why = _died(again)
                    if why is None:
                        raise
                    if self.stopping is not None and self.stopping.is_set():
                        raise ChunkLeft(why) from again
                    return await self._pin(chunk, why)
        except anyio.BrokenWorkerProcess as exc:
            cause = exc.__cause__
            if isinstance(cause, UnguardedScript):
                raise cause from None  # no worker can start: stop the run, do not fail every case
            if cause is not None and _cannot_start(exc):
                why = f"{type(cause).__name__}: {cause}"
                if self.unstartable is None:  # (chunks in flight together all meet it: one warning)
                    log.warning("worker processes cannot start; extract and score run in-process", reason=why[:300])
                self.unstartable = why
                return await self.map(chunk)
            raise ExecutorBroken(f"the worker process died: {exc.__cause__ or exc}") from exc

    async def _pin(self, chunk: list[Any], why: str) -> list[Extracted]:
        # A chunk whose worker died twice: split it so that only the records it dies on are lost (`executors.pin`).
        got = await self._pinned(chunk, why, budget_for(len(chunk)))
        lost = sum(isinstance(x, str) for x in got)
        if not lost:  # (every part came back: the deaths were not the records')
            return got  # type: ignore[return-value]
        raise ExecutorBroken(f"the worker process died on {lost} of {len(chunk)} records: {why}", got)

    async def _pinned(self, chunk: list[Any], why: str, budget: int) -> list[Extracted | str]:
        if len(chunk) > 1:
            log.warning("a worker process died on the same chunk twice; it is split to find the records it dies on",
                        records=len(chunk), error=why[:200])
        return await pin_deaths(self._compute, chunk, why, _died, budget)

    def _parts(self, records: int) -> int:
        """How many pieces a chunk of `records` goes to the workers in (`pieces.parts_for`)."""
        return parts_for(self.processes, self.record_s, records)

    async def _timed(self, records: list[Any]) -> list[Extracted]:
        # `_compute(records)`, noting the seconds a record took (`record_s`: wall time, a wait for a worker included).
        start = time.perf_counter()
        got = await self._compute(records)
        self.record_s = (time.perf_counter() - start) / max(1, len(records))
        return got

    async def _split(self, chunk: list[Any], parts: int) -> list[Extracted]:
        """`job.run(chunk)` computed in `parts` pieces side by side, in the chunk's order (`pieces.split`)."""
        return await split(self, chunk, parts, _died)
