"""tracejudge: evaluate AI agents by what they did.

The public API. Import from here, not from `pipeline` or `stages`, so that
internals can move without breaking user code::

    import tracejudge
    case = tracejudge.Case(id="c1", expected_tool_calls=[...], trace=...)
    score = tracejudge.ToolCalls(arguments="exact").evaluate(case)
    report = tracejudge.evaluate([case], [tracejudge.ToolCalls()])
"""

from pipeline.api import Evaluator, aevaluate, evaluate
from pipeline.assertions import assert_called_tool, assert_score, assert_trajectory
from pipeline.config import BudgetConfig, CacheConfig, JudgeConfig, LimitsConfig, RunConfig, load_config
from pipeline.errors import ConfigError, TracejudgeError
from pipeline.records import Case, CaseResult, ErrorInfo, ExpectedToolCall, Passage, Score, Status, Step, ToolCall, Trace, Usage
from pipeline.run_report import Failure, MetricSummary, RunReport
from pipeline.version import __version__
from stages.score import Metric, ToolCalls, ToolCorrectness, ToolMetric, TrajectoryMatch, score_case
from stages.score.custom import FunctionMetric, metric

__all__ = [
    "BudgetConfig",
    "CacheConfig",
    "Case",
    "CaseResult",
    "ConfigError",
    "ErrorInfo",
    "Evaluator",
    "ExpectedToolCall",
    "Failure",
    "FunctionMetric",
    "JudgeConfig",
    "LimitsConfig",
    "Metric",
    "MetricSummary",
    "Passage",
    "RunConfig",
    "RunReport",
    "Score",
    "Status",
    "Step",
    "ToolCall",
    "ToolCalls",
    "ToolCorrectness",
    "ToolMetric",
    "Trace",
    "TracejudgeError",
    "TrajectoryMatch",
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
