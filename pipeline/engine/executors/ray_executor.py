"""The Ray executor (`run.executor: ray`, extra `tracejudge[ray]`): extract and score on a Ray cluster.

`ray.init(address=run.ray_address)` joins a running cluster (`ray start
--head` on one machine, `ray start --address=HEAD:6379` on the others; its
token authentication and a failed attach: `ray_attach`); with no address, and
no Ray already initialised in this process, a local cluster is started for
the run and shut down after it, watched by `ray_watchdog` so that none of its
processes outlives a killed head. The actors are not detached: they belong to
the head's Ray job, and Ray ends them when the head's job ends (the head exits
or is killed), on a local cluster or a shared one.

One `CpuWorker` actor per CPU of the cluster (at most `run.processes` when
the config sets it lower; named `tracejudge-cpu-RUN-I`) holds the job (`CpuJob`: format name, dataset
config, metric specs), rebuilt once per actor. Each chunk is split by the
stable hash of its records' ids (`tracejudge.engine.shards.shard_index`;
`file:line` for a record whose id cannot be read without parsing it), so a
case always goes to the same worker; the parts are Ray actor tasks, awaited
as object refs, and put back in the chunk's order. The dataset is read on
the head and travels in the chunks, so workers need the code, not the files
(an adapter that reads side files, such as τ-bench's tasks file, needs them
at the same path on every node).

A killed worker loses nothing: the actors are created with `max_restarts`
and `max_task_retries`, so Ray restarts a dead actor and re-runs the chunks
it held. A part of a chunk that kills its worker every time (`MAX_RETRIES` +
1 times) holds a record that kills whatever worker scores it: its worker,
whose restarts it spent, is replaced by a fresh actor, so the chunks that
follow are scored, and the part is tried once more, alone, in a probe actor
of its own (no retries; a fresh process after each death); if that dies too
it is split there until the deaths are pinned on the records causing them
(`executors.pin`). The chunk's other parts are kept. Only the records the
deaths are pinned on (or that the death budget left untried) are lost, as
`ExecutorBroken` results recorded as provisional `worker_error`.
Results come back to the head, which alone writes the run directory.

A live target (`target:`, kinds python, http, command) runs on the cluster
too: one async `TargetWorker` actor per CPU worker (named
`tracejudge-target-RUN-I`, no CPU reserved, spread over the nodes, at most
`target.concurrency` attempts at once), each case sent to the worker its id
hashes to (`target_attempt`). The worker holds the target's caller (the
imported callable, the HTTP session) and sends back an `Attempt` (trace or
error); the head applies it and writes `traces.jsonl`. A killed target worker
is restarted and its attempts re-run, like a CPU worker. Kind `replay` reads
the recorded traces on the head.

The judge runs on the head; its rate limiter and budget (`judge_resources`)
are the sweep's one Ray actor (`tracejudge.llm.ray_gate`), shared with every
other process judging for the same sweep on the cluster.
"""

from __future__ import annotations

import logging
import os
import uuid
from types import TracebackType
from typing import Any

import anyio
import ray
from tracejudge.core.config import RunConfig
from tracejudge.core.log import get_logger
from tracejudge.engine.executors import ray_watchdog
from tracejudge.engine.executors.base import CpuJob, ExecutorBroken, Extracted
from tracejudge.engine.executors.pin import budget_for, pin_deaths
from tracejudge.engine.executors.ray_attach import attach
from tracejudge.engine.shards import shard_index

__all__ = ["MAX_RETRIES", "CpuWorker", "RayExecutor", "TargetWorker", "quiet_ray"]

log = get_logger("tracejudge.executors")

# Ray's notices on every run that ask nothing of the user: tracejudge sets its own SIGTERM handling
# (ray.init runs off the main thread on purpose), and token auth on by default is Ray's safe choice.
# Ray's other warnings (token auth *disabled*, resources, a dead node) stay.
RAY_NOISE = {
    "ray._private.worker": "SIGTERM handler is not set because current thread is not the main thread",
    "ray._private.authentication.authentication_token_setup": "Token authentication is enabled for this Ray cluster",
}


class _QuietRay(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefix)


def quiet_ray() -> None:
    """Drop Ray's two every-run notices (`RAY_NOISE`) from its loggers; idempotent."""
    for name, prefix in RAY_NOISE.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _QuietRay) for f in logger.filters):
            logger.addFilter(_QuietRay(prefix))


MAX_RETRIES = 4
"""Times Ray restarts a dead worker actor and re-runs its chunks before the chunk counts as broken."""

_PROBE_WAITS = 20  # calls a pinning probe gets while it restarts, and tries of a part that never reached it


@ray.remote(max_restarts=MAX_RETRIES, max_task_retries=MAX_RETRIES)
class CpuWorker:
    """A Ray actor running `CpuJob.run` on the parts of chunks routed to it."""

    def __init__(self, job: CpuJob) -> None:
        self.job = job
        self.job.build()

    def run(self, chunk: list[Any]) -> list[Extracted]:
        """`job.run(chunk)`: one `Extracted` per raw record, in order."""
        return self.job.run(chunk)

    def pid(self) -> int:
        """The worker's process id (tests kill it)."""
        import os

        return os.getpid()


@ray.remote(max_restarts=MAX_RETRIES, max_task_retries=MAX_RETRIES)
class TargetWorker:
    """An async Ray actor running the live target (`TargetRunner.attempt`) for the cases routed to it."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.runner: Any = None

    async def ready(self) -> str | None:
        """Set the target up (import the callable, read the header variables); the `ConfigError` message if it cannot be."""
        from tracejudge.core.errors import ConfigError
        from tracejudge.stages.target import TargetRunner

        if self.runner is None:
            try:
                self.runner = TargetRunner(self.config)
            except ConfigError as exc:
                return str(exc)
        return None

    async def attempt(self, case: Any, trial: int) -> Any:
        """`TargetRunner.attempt(case, trial)` in this worker: an `Attempt`."""
        if self.runner is None:  # restarted after a crash: set up again
            await self.ready()
        return await self.runner.attempt(case, trial)

    def pid(self) -> int:
        """The worker's process id (tests kill it)."""
        import os

        return os.getpid()


class RayExecutor:
    """Runs `job.run(chunk)` on Ray actors, records routed by the stable hash of their ids."""

    name = "ray"

    def __init__(self, job: CpuJob, config: RunConfig) -> None:
        self.job = job
        self.address = config.run.ray_address
        self.limit = config.run.processes if "processes" in config.run.model_fields_set else None
        self.config = config
        self.workers: list[Any] = []
        self.targets: list[Any] = []
        self.concurrency = 2
        self.started_ray = False
        self.watchdog: Any = None
        self.chunks = 0
        self.run_id = ""
        self.replaced = 0  # worker actors replaced after a part spent their restarts

    async def __aenter__(self) -> RayExecutor:
        if not ray.is_initialized():
            # Joining or starting a cluster takes seconds: off the event loop.
            quiet_ray()
            await anyio.to_thread.run_sync(attach, self.address)
            self.started_ray = True
            if self.address is None:  # a local cluster: its processes must not outlive a killed head
                self.watchdog = await anyio.to_thread.run_sync(ray_watchdog.start, os.getpid())
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        n = min(cpus, self.limit) if self.limit else cpus
        # The job is a few hundred bytes: passed by value, so a restarted actor can always rebuild it.
        run_id = self.run_id = uuid.uuid4().hex[:8]
        self.workers = [CpuWorker.options(num_cpus=1, name=f"tracejudge-cpu-{run_id}-{i}").remote(self.job)  # type: ignore[attr-defined]
                        for i in range(n)]
        self.concurrency = 2 * n
        target = self.config.target
        if target is not None and target.kind != "replay":
            await self._start_targets(run_id, n, target.concurrency)
        log.info("ray executor", workers=n, target_workers=len(self.targets), address=self.address or "local")
        return self

    async def _start_targets(self, run_id: str, n: int, concurrency: int) -> None:
        # No CPU reservation: the CPU workers hold the cluster's CPUs, and a target mostly waits on
        # the agent. SPREAD puts them on different nodes of a real cluster.
        from tracejudge.core.errors import ConfigError

        self.targets = [TargetWorker.options(num_cpus=0, max_concurrency=concurrency, scheduling_strategy="SPREAD",  # type: ignore[attr-defined]
                                             name=f"tracejudge-target-{run_id}-{i}").remote(self.config) for i in range(n)]
        for problem in await _gather([t.ready.remote() for t in self.targets]):
            if problem is not None:
                raise ConfigError(problem)

    async def target_attempt(self, case: Any, trial: int) -> Any:
        """The live target's `Attempt` for `(case, trial)`, run on the target worker its case id hashes to.

        A worker that dies is restarted by Ray and the attempt re-run; one that
        died on it `MAX_RETRIES` + 1 times gives a failed attempt (`target_error`,
        which the next run of the same command redoes).
        """
        from tracejudge.stages.target import Attempt

        ref = self.targets[shard_index(case.id, len(self.targets)) - 1].attempt.remote(case, trial)
        try:
            return await ref
        except ray.exceptions.RayActorError as exc:
            return Attempt(None, message=f"the Ray target worker died {MAX_RETRIES + 1} times on this case: {exc}")
        except BaseException:
            ray.cancel(ref)  # cancelled (a stop past the grace period): do not leave the attempt queued
            raise

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for actor in [*self.workers, *self.targets]:
            ray.kill(actor)
        self.workers, self.targets = [], []
        if self.started_ray:
            await anyio.to_thread.run_sync(ray.shutdown)
            await anyio.to_thread.run_sync(ray_watchdog.stop, self.watchdog)
            self.watchdog = None
        log.debug("executor done", executor=self.name, chunks=self.chunks)

    def judge_resources(self, config: RunConfig, prior: dict[str, Any]) -> Any:
        """The judge's `JudgeResources`: the sweep's shared Ray limiter and budget (`tracejudge.llm.ray_gate`),
        and the disk cache at `cache.dir` (shared by its path)."""
        from tracejudge.llm.ray_gate import shared_gate
        from tracejudge.stages.judge.resources import prior_spent
        from tracejudge.stages.judge.stage import JudgeResources, local_resources

        limiter, budget = shared_gate(config, *prior_spent(prior))
        return JudgeResources(limiter, budget, local_resources(config, prior).cache)

    def route(self, raw: Any) -> int:
        """The worker (0-based) of a raw record: the stable hash of its id, or of `file:line`."""
        from tracejudge.stages.extract import raw_case_id

        key = None
        peek = self.job.build()[0].peek_id
        if peek is not None and raw.error is None:
            key = peek(raw.payload)
        return shard_index(key if key is not None else raw_case_id(raw), len(self.workers)) - 1

    async def map(self, chunk: list[Any]) -> list[Extracted]:
        """`job.run(chunk)` on the workers. A part whose worker kept dying is pinned (see the module docstring); raises
        `ExecutorBroken`, with the results of every other record (`ExecutorBroken.results`), when records were lost."""
        self.chunks += 1
        parts: dict[int, list[int]] = {}
        for i, raw in enumerate(chunk):
            parts.setdefault(self.route(raw), []).append(i)
        refs = {w: (self.workers[w], self.workers[w].run.remote([chunk[i] for i in idx])) for w, idx in parts.items()}
        out: list[Extracted | str | None] = [None] * len(chunk)
        died: dict[int, str] = {}
        try:
            for w, (actor, ref) in refs.items():
                try:
                    got = await ref
                except ray.exceptions.RayActorError as exc:
                    died[w] = f"the Ray worker died {MAX_RETRIES + 1} times on this part of the chunk: {_why(exc)}"
                    self._replace(w, actor)
                    continue
                for i, item in zip(parts[w], got, strict=True):
                    out[i] = item
        except BaseException:
            for _, ref in refs.values():  # cancelled (a stop past the grace period): do not leave the work queued
                ray.cancel(ref)
            raise
        for w, why in died.items():
            log.warning("a Ray worker died on the same part of a chunk every time; it is tried alone, and split to find the "
                        "records it dies on", records=len(parts[w]), error=why[:200])
            for i, item in zip(parts[w], await self._pin([chunk[i] for i in parts[w]], why), strict=True):
                out[i] = item
        lost = sum(isinstance(x, str) for x in out)
        if lost:
            raise ExecutorBroken(f"the Ray worker died on {lost} of {len(chunk)} records: {next(iter(died.values()))}", out)  # type: ignore[arg-type]
        return out  # type: ignore[return-value]

    def _replace(self, w: int, actor: Any) -> None:
        # A worker that died `MAX_RETRIES` + 1 times has spent its restarts: every later part routed to it would fail
        # at once. A fresh actor takes its place (once, though several parts in flight met the same death).
        if self.workers[w] is not actor:
            return
        ray.kill(actor)
        self.replaced += 1
        self.workers[w] = CpuWorker.options(num_cpus=1, name=f"tracejudge-cpu-{self.run_id}-{w}-{self.replaced}").remote(self.job)  # type: ignore[attr-defined]

    async def _pin(self, records: list[Any], why: str) -> list[Extracted | str]:
        """`records` (a part of a chunk whose worker died on it every time) in a probe actor of their own: tried whole
        once more, then split to pin the deaths on the records causing them (`pin_deaths`). One entry per record: its
        `Extracted`, or why it has none.

        The probe reserves no CPU (the workers hold them; pinning is rare and short), never retries a call (each death
        is one the split counts) and is restarted after every death, so each part is tried in a fresh process.
        """
        probe = CpuWorker.options(num_cpus=0, max_restarts=-1, max_task_retries=0,  # type: ignore[attr-defined]
                                  name=f"tracejudge-pin-{self.run_id}-{uuid.uuid4().hex[:8]}").remote(self.job)

        async def alive() -> int:
            # The probe's pid once it is up: a call made while it restarts fails at once ("unavailable"), and so, under
            # load, did every part tried after the first death, until the deaths were spent with no record pinned.
            return await probe.pid.options(max_task_retries=_PROBE_WAITS).remote()

        async def compute(part: list[Any]) -> list[Extracted]:
            for attempt in range(_PROBE_WAITS):
                pid = await alive()
                ref = probe.run.remote(part)
                try:
                    return await ref
                except ray.exceptions.RayActorError:
                    # A death is the part's only when the probe's process changed; else the call never reached it.
                    if attempt == _PROBE_WAITS - 1 or await alive() != pid:
                        raise
                except BaseException:
                    ray.cancel(ref)
                    raise
            raise AssertionError("unreachable")

        try:
            try:
                # (A part that was only queued on a worker another part killed comes back whole.)
                return await compute(records)  # type: ignore[return-value]
            except ray.exceptions.RayActorError as exc:
                why = _why(exc)
            return await pin_deaths(compute, records, why, _died, budget_for(len(records)))
        finally:
            ray.kill(probe)


def _why(exc: BaseException) -> str:
    # Ray's message runs to several lines (class, actor id, pid, name, advice): its first says what happened. A call
    # that is not retried meets its actor's death as "unavailable" (the connection to its process closed).
    if isinstance(exc, ray.exceptions.ActorUnavailableError):
        return "the Ray actor became unavailable (its process ended, or cannot be reached)"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _died(exc: BaseException) -> str | None:
    # Why a probe's call failed, when it failed because its actor died (`pin_deaths`); None for any other exception.
    return _why(exc) if isinstance(exc, ray.exceptions.RayActorError) else None


async def _gather(refs: list[Any]) -> list[Any]:
    return [await ref for ref in refs]
