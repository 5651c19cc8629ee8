"""tracejudge: evaluate AI agents by what they did.

The public API. Import from here, not from the subpackages, so that
internals can move without breaking user code::

    import tracejudge
    case = tracejudge.Case(id="c1", expected_tool_calls=[...], trace=...)
    score = tracejudge.ToolCalls(arguments="exact").evaluate(case)
    report = tracejudge.evaluate([case], [tracejudge.ToolCalls()])
"""

from typing import TYPE_CHECKING, Any

from tracejudge.core.version import __version__

# Imported on first use (PEP 562): a worker process or `tracejudge run` that needs only part of
# the package does not pay for the rest (the Python API, assertions, the target stage).
_EXPORTS = {
    "BudgetConfig": "tracejudge.core.config",
    "CacheConfig": "tracejudge.core.config",
    "JudgeConfig": "tracejudge.core.config",
    "LimitsConfig": "tracejudge.core.config",
    "RunConfig": "tracejudge.core.config",
    "load_config": "tracejudge.core.config",
    "ConfigError": "tracejudge.core.errors",
    "TracejudgeError": "tracejudge.core.errors",
    "Case": "tracejudge.core.records",
    "CaseResult": "tracejudge.core.records",
    "ErrorInfo": "tracejudge.core.records",
    "ExpectedToolCall": "tracejudge.core.records",
    "Passage": "tracejudge.core.records",
    "Score": "tracejudge.core.records",
    "Status": "tracejudge.core.records",
    "Step": "tracejudge.core.records",
    "ToolCall": "tracejudge.core.records",
    "Trace": "tracejudge.core.records",
    "Usage": "tracejudge.core.records",
    "Evaluator": "tracejudge.entrypoints.api",
    "aevaluate": "tracejudge.entrypoints.api",
    "evaluate": "tracejudge.entrypoints.api",
    "assert_called_tool": "tracejudge.entrypoints.assertions",
    "assert_score": "tracejudge.entrypoints.assertions",
    "assert_trajectory": "tracejudge.entrypoints.assertions",
    "Failure": "tracejudge.entrypoints.run_report",
    "MetricSummary": "tracejudge.entrypoints.run_report",
    "RunReport": "tracejudge.entrypoints.run_report",
    "ArgumentCorrectness": "tracejudge.stages.score",
    "Contains": "tracejudge.stages.score",
    "Cost": "tracejudge.stages.score",
    "DeepEvalToolCorrectness": "tracejudge.stages.score",
    "ExactMatch": "tracejudge.stages.score",
    "JsonSchema": "tracejudge.stages.score",
    "Latency": "tracejudge.stages.score",
    "MaxModelRequests": "tracejudge.stages.score",
    "MaxToolCalls": "tracejudge.stages.score",
    "Metric": "tracejudge.stages.score",
    "PassAtK": "tracejudge.stages.score",
    "Regex": "tracejudge.stages.score",
    "RetrievalMRR": "tracejudge.stages.score",
    "RetrievalPrecision": "tracejudge.stages.score",
    "RetrievalRecall": "tracejudge.stages.score",
    "TokenUsage": "tracejudge.stages.score",
    "ToolCallAccuracy": "tracejudge.stages.score",
    "ToolCalls": "tracejudge.stages.score",
    "ToolCorrectness": "tracejudge.stages.score",
    "ToolMetric": "tracejudge.stages.score",
    "TrajectoryMatch": "tracejudge.stages.score",
    "score_case": "tracejudge.stages.score",
    "FunctionMetric": "tracejudge.stages.score.custom",
    "metric": "tracejudge.stages.score.custom",
    "TargetReply": "tracejudge.stages.target",
    "TargetRequest": "tracejudge.stages.target",
    "TransientTargetError": "tracejudge.stages.target",
}

if TYPE_CHECKING:
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
    from tracejudge.stages.target import TargetReply, TargetRequest, TransientTargetError


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tracejudge' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ArgumentCorrectness",
    "BudgetConfig",
    "CacheConfig",
    "Case",
    "CaseResult",
    "ConfigError",
    "Contains",
    "Cost",
    "DeepEvalToolCorrectness",
    "ErrorInfo",
    "Evaluator",
    "ExactMatch",
    "ExpectedToolCall",
    "Failure",
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
    "Passage",
    "Regex",
    "RetrievalMRR",
    "RetrievalPrecision",
    "RetrievalRecall",
    "RunConfig",
    "RunReport",
    "Score",
    "Status",
    "Step",
    "TargetReply",
    "TargetRequest",
    "TokenUsage",
    "ToolCall",
    "ToolCallAccuracy",
    "ToolCalls",
    "ToolCorrectness",
    "ToolMetric",
    "Trace",
    "TracejudgeError",
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
