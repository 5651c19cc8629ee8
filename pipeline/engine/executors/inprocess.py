"""The in-process executor: extract and score on the event loop, one chunk at a time.

Today's path and the fallback for jobs that cannot travel to another process
(`CpuJob.portable`). Custom async metrics are awaited here. A chunk holds the
loop while it computes, so keep `run.chunk_size` small when metrics are slow.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import anyio.lowlevel
from tracejudge.engine.executors.base import CpuJob, Extracted

__all__ = ["InProcessExecutor"]


class InProcessExecutor:
    """Runs `job.arun(chunk)` in the calling task; `concurrency` 1."""

    name = "inprocess"
    concurrency = 1

    def __init__(self, job: CpuJob) -> None:
        self.job = job

    async def __aenter__(self) -> InProcessExecutor:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        return None

    async def map(self, chunk: list[Any]) -> list[Extracted]:
        """`job.run(chunk)` on the loop (awaiting async metrics)."""
        await anyio.lowlevel.checkpoint()  # a stop or cancellation takes effect between chunks
        return await self.job.arun(chunk)
