"""tracejudge: evaluate AI agents by what they did.

The public API. Import from here, not from `pipeline` or `stages`, so that
internals can move without breaking user code::

    import tracejudge
    case = tracejudge.Case(id="c1", expected_tool_calls=[...], trace=...)
    score = tracejudge.ToolCalls(arguments="exact").evaluate(case)
"""

from pipeline.config import RunConfig, load_config
from pipeline.records import Case, CaseResult, ErrorInfo, ExpectedToolCall, Passage, Score, Status, Step, ToolCall, Trace, Usage
from pipeline.version import __version__
from stages.score import (
    ArgumentCorrectness,
    Contains,
    Cost,
    ExactMatch,
    JsonSchema,
    Latency,
    MaxModelRequests,
    MaxToolCalls,
    Metric,
    Regex,
    RetrievalMRR,
    RetrievalPrecision,
    RetrievalRecall,
    TokenUsage,
    ToolCallAccuracy,
    ToolCalls,
    ToolCorrectness,
    TrajectoryMatch,
    score_case,
)
from stages.target import TargetReply, TargetRequest, TransientTargetError

__all__ = [
    "ArgumentCorrectness",
    "Case",
    "CaseResult",
    "Contains",
    "Cost",
    "ErrorInfo",
    "ExactMatch",
    "ExpectedToolCall",
    "JsonSchema",
    "Latency",
    "MaxModelRequests",
    "MaxToolCalls",
    "Metric",
    "Passage",
    "Regex",
    "RetrievalMRR",
    "RetrievalPrecision",
    "RetrievalRecall",
    "RunConfig",
    "Score",
    "Status",
    "Step",
    "TokenUsage",
    "TargetReply",
    "TargetRequest",
    "ToolCall",
    "ToolCallAccuracy",
    "ToolCalls",
    "ToolCorrectness",
    "Trace",
    "TrajectoryMatch",
    "TransientTargetError",
    "Usage",
    "__version__",
    "load_config",
    "score_case",
]
