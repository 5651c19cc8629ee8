"""promptfoo's `tool-call-f1` and its `not-` inverse: the F1 of the set of tools called against the set expected.

Source: promptfoo `src/assertions/toolCallF1.ts` (`handleToolCallF1`), after van Rijsbergen (1979) and ragas'
`ToolCallF1`. With E the expected tool names and A the names of the tools the agent called (sets: order and how
often a tool was called do not count):

    precision = |A ∩ E| / |A|   (0 when nothing was called)
    recall    = |A ∩ E| / |E|
    F1        = 2 · precision · recall / (precision + recall)   (0 when both are 0)

The score is F1; it passes when F1 ≥ `threshold` (default 1.0, as promptfoo's `assertion.threshold ?? 1.0`), and
the `not-` form passes exactly when that fails. The reason is promptfoo's, with its numbers as JavaScript prints
them (`toFixed(3)`, the threshold as `Number.toString`), so a user can recompute the score from the two lists:

    Tool Call F1: 0.667 (precision=0.500, recall=1.000). Expected: [get_weather], Called: [get_time, get_weather]

`value` is a list of names or one comma-separated string (`"get_weather, get_time"`); names are trimmed and blank
ones dropped; none left is a config error, as promptfoo refuses it.

What "called" is: promptfoo reads the tool calls out of one model response (`output`); an agent's trace holds every
response, so here A is the names of every tool call of the trace, failed calls included (the model asked for them).
A case without a trace scores null (promptfoo would find no call in an empty output and score 0).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, ClassVar

from pydantic_core import PydanticCustomError
from tracejudge.core.records import Case, Score
from tracejudge.llm.redact import redact_quoted
from tracejudge.stages.score.base import Metric, make_score, no_trace
from tracejudge.stages.score.promptfoo_steps import _JS_SPACE, _js_string, js_number
from tracejudge.stages.score.promptfoo_trajectory import _promptfoo_type
from tracejudge.stages.score.promptfoo_values import PromptfooSpec

__all__ = ["NotToolCallF1", "ToolCallF1", "expected_tools", "to_fixed"]


def expected_tools(value: Any) -> list[str]:
    """promptfoo's reading of the value: a list (each item as JavaScript's `String`) or a comma-separated string,
    each name trimmed, blank ones dropped. Raises `PydanticCustomError` for any other value or when no name is left."""
    if isinstance(value, list):
        if any(isinstance(v, (dict, list)) for v in value):  # (`String` would make "[object Object]" of it: no tool's name)
            raise PydanticCustomError("promptfoo_value", "tool-call-f1: value: each expected tool is a name, not an object or a list")
        names = [_js_string(v).strip(_JS_SPACE) for v in value]  # (JavaScript's `trim`: not Python's `strip`)
    elif isinstance(value, str):
        names = [part.strip(_JS_SPACE) for part in value.split(",")]
    else:
        raise PydanticCustomError("promptfoo_value", '"tool-call-f1" assertion requires a value: array of tool names or '
                                  "comma-separated string")
    names = [n for n in names if n]
    if not names:
        raise PydanticCustomError("promptfoo_value", '"tool-call-f1" assertion requires at least one expected tool name')
    return names


def to_fixed(x: float, digits: int = 3) -> str:
    """JavaScript's `Number.prototype.toFixed(digits)` of a finite number below 10²¹: the exact binary value rounded
    half away from zero (Python's `format` rounds an exact tie to even: 0.125 is "0.13" there, "0.12" here)."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def _sorted(names: set[str]) -> str:
    # JavaScript's default sort compares UTF-16 code units; for names outside the BMP it differs from Python's code points.
    return ", ".join(sorted(names, key=lambda n: n.encode("utf-16-be")))


@_promptfoo_type("tool-call-f1")
class ToolCallF1(PromptfooSpec, Metric):
    """promptfoo's `tool-call-f1` (`handleToolCallF1`): F1 of the set of tools called against the set expected.

    precision = |called ∩ expected| / |called| (0 when nothing was called), recall = |called ∩ expected| / |expected|,
    F1 = 2·precision·recall / (precision + recall); it passes at F1 ≥ `threshold` (default 1.0). `value`: a list of
    tool names or one comma-separated string. Called = every tool call of the trace, failed ones included.

    Example: `value: [get_weather]` on calls `get_weather, get_time, get_weather` scores 0.667 (precision 1/2,
    recall 1/1) and fails the default threshold 1.0. Edge cases: nothing called scores 0; a tool called twice
    counts once.
    """

    inverse: ClassVar[bool] = False
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(expected_tools)
    value: Any

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        expected = set(expected_tools(self.value))
        actual = {call.name for call in case.trace.tool_calls()}
        both = len(expected & actual)
        precision = both / len(actual) if actual else 0.0
        recall = both / len(expected)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
        threshold = 1.0 if self.threshold is None else self.threshold
        passed = (f1 >= threshold) != self.inverse
        lists = f"Expected: [{_sorted(expected)}], Called: [{_sorted(actual) or '(none)'}]"
        if passed:
            reason = f"Tool Call F1: {to_fixed(f1)} (precision={to_fixed(precision)}, recall={to_fixed(recall)}). {lists}"
        else:
            reason = (f"Tool Call F1 score {to_fixed(f1)} is {'above' if self.inverse else 'below'} threshold {js_number(threshold)}. "
                      f"{lists}. Precision={to_fixed(precision)}, Recall={to_fixed(recall)}")
        details = {"precision": precision, "recall": recall, "expected": sorted(expected), "called": sorted(actual), "inverse": self.inverse}
        return make_score(f1, passed, redact_quoted(reason), details)


@_promptfoo_type("not-tool-call-f1")
class NotToolCallF1(ToolCallF1):
    """promptfoo's `not-tool-call-f1`: `tool-call-f1` inverted (it passes when F1 is below the threshold)."""

    inverse: ClassVar[bool] = True
