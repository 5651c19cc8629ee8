"""Stage `judge`: LLM-judge metrics over a rate-limited, budgeted, cached judge.

The judge metrics (`TaskCompletion`, `ToolCallNecessity`, …) register
themselves when `tracejudge.stages.judge.metrics` is imported, which the
registry does when a config names one (`registry.METRIC_CLASSES`); importing
this package alone imports neither them nor the judge's client.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from tracejudge.core.registry import METRIC_CLASSES, lazy_getattr

if TYPE_CHECKING:  # at run time each name is imported on first use (`__getattr__`)
    from tracejudge.stages.judge.base import JudgeMetric
    from tracejudge.stages.judge.metrics import (
        AgentMemoryEval,
        ContextRelevance,
        Faithfulness,
        PlanQuality,
        Rubric,
        StepFaithfulness,
        TaskCompletion,
        ToolArgumentAccuracy,
        ToolCallNecessity,
        TrajectoryEfficiency,
    )

_LAZY = {"JudgeMetric": "tracejudge.stages.judge.base:JudgeMetric"}
_LAZY.update((name, path) for name, path in METRIC_CLASSES.items() if path.startswith(__name__ + "."))
__getattr__ = lazy_getattr(globals(), _LAZY)


def is_judge_metric(metric: Any) -> bool:
    """`isinstance(metric, JudgeMetric)`, without importing `JudgeMetric`'s module (a pydantic model, built on import).

    No metric can be a judge metric before that module is imported, so a run of deterministic
    metrics asks without paying for it.
    """
    base = sys.modules.get("tracejudge.stages.judge.base")
    return base is not None and isinstance(metric, getattr(base, "JudgeMetric", ()))

__all__ = [
    "AgentMemoryEval",
    "ContextRelevance",
    "Faithfulness",
    "JudgeMetric",
    "PlanQuality",
    "Rubric",
    "StepFaithfulness",
    "TaskCompletion",
    "ToolArgumentAccuracy",
    "ToolCallNecessity",
    "TrajectoryEfficiency",
    "is_judge_metric",
]
