"""Stage `judge`: LLM-judge metrics over a rate-limited, budgeted, cached judge.

The judge metrics (`TaskCompletion`, `ToolCallNecessity`, …) register
themselves when `tracejudge.stages.judge.metrics` is imported, which the
registry does when a config names one (`registry.METRIC_CLASSES`); importing
this package alone imports neither them nor the judge's client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
]
