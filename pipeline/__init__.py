"""tracejudge: evaluate AI agents by what they did.

The public API. Import from here, not from the subpackages, so that
internals can move without breaking user code::

    import tracejudge
    case = tracejudge.Case(id="c1", expected_tool_calls=[...], trace=...)
    score = tracejudge.ToolCalls(arguments="exact").evaluate(case)
    report = tracejudge.evaluate([case], [tracejudge.ToolCalls()])
"""

from tracejudge.core.config import BudgetConfig, CacheConfig, JudgeConfig, LimitsConfig, RunConfig, load_config
from tracejudge.core.errors import ConfigError, TracejudgeError
from tracejudge.core.records import Case, CaseResult, ErrorInfo, ExpectedToolCall, Passage, Score, Status, Step, ToolCall, Trace, Usage
from tracejudge.core.version import __version__
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
