"""The in-process executor's larger chunks when nothing runs after it (`InProcessExecutor.plain_chunk`): only for jobs
whose every metric is an audited built-in; a custom metric (slow, or awaited side by side) keeps the flow's own."""

from __future__ import annotations

import tracejudge
from tracejudge import Case, Trace
from tracejudge.core.config import DatasetConfig
from tracejudge.engine import runner
from tracejudge.engine.executors.base import CpuJob
from tracejudge.engine.executors.inprocess import PLAIN_CHUNK, InProcessExecutor
from tracejudge.stages.score import Contains, MaxToolCalls, ToolCalls, TrajectoryMatch


@tracejudge.metric
def slow_custom(case: Case, trace: Trace) -> float:
    return 1.0


@tracejudge.metric
async def awaited_custom(case: Case, trace: Trace) -> float:
    return 1.0


def _executor(metrics: list[object]) -> InProcessExecutor:
    job = CpuJob(format_name="native", dataset=DatasetConfig(path=None), metric_specs=None, metrics=metrics,
                 merge=runner._merge_case_metrics, score=True, keep_case=False)
    return InProcessExecutor(job)


def test_built_in_metrics_take_the_larger_chunk():
    metrics = [ToolCalls(arguments="exact"), TrajectoryMatch(), MaxToolCalls(max_calls=3), Contains(value="x")]
    assert _executor(metrics).plain_chunk == PLAIN_CHUNK > 64


def test_a_custom_metric_keeps_the_flows_chunk():
    assert _executor([TrajectoryMatch(), slow_custom()]).plain_chunk is None
    assert _executor([awaited_custom()]).plain_chunk is None
