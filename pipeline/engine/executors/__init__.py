"""Where the CPU stages run: in-process, in worker processes, on Ray (see `base` for the interface)."""

from __future__ import annotations

from tracejudge.core.config import RunConfig
from tracejudge.core.errors import ConfigError
from tracejudge.core.log import get_logger
from tracejudge.engine.executors.base import STOP_GRACE_S, CpuJob, Executor, ExecutorBroken, Extracted
from tracejudge.engine.executors.inprocess import InProcessExecutor

__all__ = ["STOP_GRACE_S", "CpuJob", "Executor", "ExecutorBroken", "Extracted", "open_executor"]

log = get_logger("tracejudge.executors")


def open_executor(config: RunConfig, job: CpuJob) -> Executor:
    """The executor `run.executor` names for `job` (enter it with `async with`).

    `processes` with `run.processes: 1`, and any job that cannot travel to
    another process (`CpuJob.portable` gives the reason, logged), run in-process.
    """
    kind = config.run.executor
    if kind == "inprocess" or (kind == "processes" and config.run.processes <= 1):
        return InProcessExecutor(job)
    why = job.portable()
    if why is not None:
        log.info("running extract and score in-process", executor=kind, reason=why)
        return InProcessExecutor(job)
    if kind == "ray":
        try:
            from tracejudge.engine.executors.ray_executor import RayExecutor
        except ImportError as exc:
            raise ConfigError(f"run.executor: ray needs the ray extra: pip install 'tracejudge[ray]' ({exc})") from None

        return RayExecutor(job, config)
    from tracejudge.engine.executors.processes import ProcessExecutor

    return ProcessExecutor(job, config.run.processes)
