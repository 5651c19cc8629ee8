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

__all__ = ["PLAIN_CHUNK", "InProcessExecutor"]

PLAIN_CHUNK = 512  # records per chunk when nothing runs after this executor and its metrics are built-ins (`plain_chunk`)


class InProcessExecutor:
    """Runs `job.arun(chunk)` in the calling task; `concurrency` 1."""

    name = "inprocess"
    concurrency = 1

    def __init__(self, job: CpuJob) -> None:
        self.job = job

    @property
    def plain_chunk(self) -> int | None:
        """Records per chunk when nothing runs after the executor; None: the flow's own (`flow._PLAIN_CHUNK`).

        `PLAIN_CHUNK` is about 60 ms of extract and score at ~120 µs a τ-bench case, so a stop still waits well under
        `STOP_GRACE_S` for the chunk in hand. Each chunk costs a trip through the pipeline's tasks and one
        `record_finished` of its results (the journal, the fold, the reports work per batch): at 64 records that was 7%
        of a run's CPU; past 512 it saves no more. Only when every metric is an audited built-in (`struct_score.audited`,
        quick and never awaited): a custom metric may be slow (the loop is held for the whole chunk, and a stop waits for
        it) or async (`arun` awaits a chunk's cases side by side: a larger chunk would multiply its requests in flight).
        """
        from tracejudge.stages.extract.struct_score import audited

        try:
            metrics = self.job.build()[2]
        except Exception:  # (the job's own error comes with its first chunk, as it did)
            return None
        return PLAIN_CHUNK if audited(metrics) else None

    async def __aenter__(self) -> InProcessExecutor:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        return None

    async def map(self, chunk: list[Any]) -> list[Extracted]:
        """`job.run(chunk)` on the loop (awaiting async metrics)."""
        await anyio.lowlevel.checkpoint()  # a stop or cancellation takes effect between chunks
        return await self.job.arun(chunk)
