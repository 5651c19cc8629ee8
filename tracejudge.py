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
from stages.score import Metric, PassAtK, ToolCalls, ToolCorrectness, TrajectoryMatch, score_case

__all__ = [
    "Case",
    "CaseResult",
    "ErrorInfo",
    "ExpectedToolCall",
    "Metric",
    "PassAtK",
    "Passage",
    "RunConfig",
    "Score",
    "Status",
    "Step",
    "ToolCall",
    "ToolCalls",
    "ToolCorrectness",
    "Trace",
    "TrajectoryMatch",
    "Usage",
    "__version__",
    "load_config",
    "score_case",
]
