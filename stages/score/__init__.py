"""Stage `score`: deterministic metrics, no model call.

`score_case(case, metrics)` runs every metric on one case; a metric that
raises costs that metric's score for that case (`value: null`, the exception
in the reason), never the run.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.records import Case, Score
from stages.score import tool_calls, tool_correctness, trajectory  # noqa: F401  (register metrics)
from stages.score.base import Metric, ToolMetric
from stages.score.tool_calls import ToolCalls
from stages.score.tool_correctness import ToolCorrectness
from stages.score.trajectory import TrajectoryMatch

__all__ = ["Metric", "ToolCalls", "ToolCorrectness", "ToolMetric", "TrajectoryMatch", "score_case"]


def score_case(case: Case, metrics: Sequence[Metric]) -> dict[str, Score]:
    """Scores of one case by metric key, in the metrics' order."""
    scores: dict[str, Score] = {}
    for metric in metrics:
        try:
            scores[metric.key] = metric.evaluate(case)
        except Exception as exc:  # a metric bug must cost one score, not the run
            scores[metric.key] = Score(value=None, passed=None, reason=f"metric raised {type(exc).__name__}: {exc}")
    return scores
