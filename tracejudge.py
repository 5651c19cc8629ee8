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
from stages.score import Metric, ToolCalls, ToolCorrectness, TrajectoryMatch, score_case
from stages.target import TargetReply, TargetRequest, TransientTargetError

__all__ = [
    "Case",
    "CaseResult",
    "ErrorInfo",
    "ExpectedToolCall",
    "Metric",
    "Passage",
    "RunConfig",
    "Score",
    "Status",
    "Step",
    "TargetReply",
    "TargetRequest",
    "ToolCall",
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
