"""Stage `judge`: LLM-judge metrics over a rate-limited, budgeted, cached judge.

Importing this package registers the judge metrics (`TaskCompletion`,
`ToolCallNecessity`, …) so configs can name them.
"""

from tracejudge.stages.judge import metrics  # noqa: F401  (register metrics)
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
