"""tracejudge: evaluate AI agents by what they did.

The public API. Import from here, not from the subpackages, so that
internals can move without breaking user code::

    import tracejudge
    case = tracejudge.Case(id="c1", expected_tool_calls=[...], trace=...)
    score = tracejudge.ToolCalls(arguments="exact").evaluate(case)
    report = tracejudge.evaluate([case], [tracejudge.ToolCalls()])
"""

from typing import TYPE_CHECKING

from tracejudge.core.version import __version__

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name is imported on first use (`__getattr__`)
    from tracejudge.core.config import BudgetConfig, CacheConfig, JudgeConfig, LimitsConfig, RunConfig, load_config
    from tracejudge.core.errors import ConfigError, TracejudgeError
    from tracejudge.core.records import Case, CaseResult, ErrorInfo, ExpectedToolCall, Passage, Score, Status, Step, ToolCall, Trace, Usage
    from tracejudge.entrypoints.api import Evaluator, aevaluate, evaluate
    from tracejudge.entrypoints.assertions import assert_called_tool, assert_score, assert_trajectory
    from tracejudge.entrypoints.run_report import Failure, MetricSummary, RunReport
    from tracejudge.stages.score import (
        ArgumentCorrectness,
        Contains,
        Cost,
        DeepEvalToolCorrectness,
        ExactMatch,
        JsonSchema,
        Latency,
        MaxModelRequests,
        MaxToolCalls,
        Metric,
        PassAtK,
        Regex,
        RetrievalMRR,
        RetrievalPrecision,
        RetrievalRecall,
        TokenUsage,
        ToolCallAccuracy,
        ToolCalls,
        ToolCorrectness,
        ToolMetric,
        TrajectoryMatch,
        score_case,
    )
    from tracejudge.stages.score.custom import FunctionMetric, metric
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
    from tracejudge.stages.score.bfcl_relevance import BfclRelevance
    from tracejudge.stages.score.pass_at_k import PassHatK
    from tracejudge.stages.score.recorded_reward import RecordedReward
    from tracejudge.stages.score.tau_outputs import TauOutputs
    from tracejudge.stages.target import TargetReply, TargetRequest, TransientTargetError

# Imported on first use (PEP 562): a worker process or `tracejudge --help` does not pay for the
# whole public API (the judge, the targets, structlog and rich) just by importing a submodule.
_LAZY = {
    "AgentMemoryEval": "tracejudge.stages.judge.metrics",
    "ArgumentCorrectness": "tracejudge.stages.score",
    "BfclRelevance": "tracejudge.stages.score.bfcl_relevance",
    "BudgetConfig": "tracejudge.core.config",
    "CacheConfig": "tracejudge.core.config",
    "Case": "tracejudge.core.records",
    "CaseResult": "tracejudge.core.records",
    "ConfigError": "tracejudge.core.errors",
    "Contains": "tracejudge.stages.score",
    "ContextRelevance": "tracejudge.stages.judge.metrics",
    "Cost": "tracejudge.stages.score",
    "DeepEvalToolCorrectness": "tracejudge.stages.score",
    "ErrorInfo": "tracejudge.core.records",
    "Evaluator": "tracejudge.entrypoints.api",
    "ExactMatch": "tracejudge.stages.score",
    "ExpectedToolCall": "tracejudge.core.records",
    "Failure": "tracejudge.entrypoints.run_report",
    "Faithfulness": "tracejudge.stages.judge.metrics",
    "FunctionMetric": "tracejudge.stages.score.custom",
    "JsonSchema": "tracejudge.stages.score",
    "JudgeConfig": "tracejudge.core.config",
    "Latency": "tracejudge.stages.score",
    "LimitsConfig": "tracejudge.core.config",
    "MaxModelRequests": "tracejudge.stages.score",
    "MaxToolCalls": "tracejudge.stages.score",
    "Metric": "tracejudge.stages.score",
    "MetricSummary": "tracejudge.entrypoints.run_report",
    "PassAtK": "tracejudge.stages.score",
    "PassHatK": "tracejudge.stages.score.pass_at_k",
    "Passage": "tracejudge.core.records",
    "PlanQuality": "tracejudge.stages.judge.metrics",
    "RecordedReward": "tracejudge.stages.score.recorded_reward",
    "Regex": "tracejudge.stages.score",
    "RetrievalMRR": "tracejudge.stages.score",
    "RetrievalPrecision": "tracejudge.stages.score",
    "RetrievalRecall": "tracejudge.stages.score",
    "Rubric": "tracejudge.stages.judge.metrics",
    "RunConfig": "tracejudge.core.config",
    "RunReport": "tracejudge.entrypoints.run_report",
    "Score": "tracejudge.core.records",
    "Status": "tracejudge.core.records",
    "Step": "tracejudge.core.records",
    "StepFaithfulness": "tracejudge.stages.judge.metrics",
    "TargetReply": "tracejudge.stages.target",
    "TargetRequest": "tracejudge.stages.target",
    "TaskCompletion": "tracejudge.stages.judge.metrics",
    "TauOutputs": "tracejudge.stages.score.tau_outputs",
    "TokenUsage": "tracejudge.stages.score",
    "ToolArgumentAccuracy": "tracejudge.stages.judge.metrics",
    "ToolCall": "tracejudge.core.records",
    "ToolCallAccuracy": "tracejudge.stages.score",
    "ToolCallNecessity": "tracejudge.stages.judge.metrics",
    "ToolCalls": "tracejudge.stages.score",
    "ToolCorrectness": "tracejudge.stages.score",
    "ToolMetric": "tracejudge.stages.score",
    "Trace": "tracejudge.core.records",
    "TracejudgeError": "tracejudge.core.errors",
    "TrajectoryEfficiency": "tracejudge.stages.judge.metrics",
    "TrajectoryMatch": "tracejudge.stages.score",
    "TransientTargetError": "tracejudge.stages.target",
    "Usage": "tracejudge.core.records",
    "aevaluate": "tracejudge.entrypoints.api",
    "assert_called_tool": "tracejudge.entrypoints.assertions",
    "assert_score": "tracejudge.entrypoints.assertions",
    "assert_trajectory": "tracejudge.entrypoints.assertions",
    "evaluate": "tracejudge.entrypoints.api",
    "load_config": "tracejudge.core.config",
    "metric": "tracejudge.stages.score.custom",
    "score_case": "tracejudge.stages.score",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracejudge' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AgentMemoryEval",
    "ArgumentCorrectness",
    "BfclRelevance",
    "BudgetConfig",
    "CacheConfig",
    "Case",
    "CaseResult",
    "ConfigError",
    "Contains",
    "ContextRelevance",
    "Cost",
    "DeepEvalToolCorrectness",
    "ErrorInfo",
    "Evaluator",
    "ExactMatch",
    "ExpectedToolCall",
    "Failure",
    "Faithfulness",
    "FunctionMetric",
    "JsonSchema",
    "JudgeConfig",
    "Latency",
    "LimitsConfig",
    "MaxModelRequests",
    "MaxToolCalls",
    "Metric",
    "MetricSummary",
    "PassAtK",
    "PassHatK",
    "Passage",
    "PlanQuality",
    "RecordedReward",
    "Regex",
    "RetrievalMRR",
    "RetrievalPrecision",
    "RetrievalRecall",
    "Rubric",
    "RunConfig",
    "RunReport",
    "Score",
    "Status",
    "Step",
    "StepFaithfulness",
    "TargetReply",
    "TargetRequest",
    "TaskCompletion",
    "TauOutputs",
    "TokenUsage",
    "ToolArgumentAccuracy",
    "ToolCall",
    "ToolCallAccuracy",
    "ToolCallNecessity",
    "ToolCalls",
    "ToolCorrectness",
    "ToolMetric",
    "Trace",
    "TracejudgeError",
    "TrajectoryEfficiency",
    "TrajectoryMatch",
    "TransientTargetError",
    "Usage",
    "__version__",
    "aevaluate",
    "assert_called_tool",
    "assert_score",
    "assert_trajectory",
    "evaluate",
    "load_config",
    "metric",
    "score_case",
]
