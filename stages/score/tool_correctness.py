"""`ToolCorrectness`: the multiset of tool names called, pass or fail.

Source: pydantic-evals `ToolCorrectness` (pydantic_evals/evaluators/agentic.py).
"""

from __future__ import annotations

from collections import Counter

from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import ToolMetric, expected_calls, no_expectation, no_trace

__all__ = ["ToolCorrectness"]


def _describe(counts: Counter[str]) -> str:
    return ", ".join(f"{name!r} (x{n})" for name, n in sorted(counts.items()))


@register_metric
class ToolCorrectness(ToolMetric):
    """Did the agent call exactly the expected multiset of tool names?

    Passes (value 1.0) when every expected name was called at least as often
    as it is expected and — unless `allow_extra: true` — nothing else was
    called; fails (0.0) otherwise. Order is ignored; duplicates are
    significant (`[search, search]` needs two `search` calls). Failed calls
    are left out unless `include_failed: true`. Expected `[]` passes iff no
    call counts. The expected names are `expected_tools` when given, else the
    names of the case's `expected_tool_calls` (no expectation → `value: null`).
    The reason names missing and unexpected tools with their counts.

    A case with no trace is `invalid_input` (this metric `value: null`);
    pydantic-evals scores it False ("No span tree available"). `invalid_input` is
    the honest status: nothing was observed, so nothing passed or failed.
    """

    allow_extra: bool = False
    expected_tools: list[str] | None = None

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        if self.expected_tools is not None:
            names = [n for n in self.expected_tools if self.wanted(n)]
        else:
            exp = expected_calls(self, case)
            if exp is None:
                return no_expectation()
            names = [e.name for _, e in exp]
        expected = Counter(names)
        actual = Counter(c.name for _, c in self.actual_calls(case))
        missing = expected - actual
        extra = actual - expected
        problems = []
        if missing:
            problems.append(f"missing tools: {_describe(missing)}")
        if extra and not self.allow_extra:
            problems.append(f"unexpected tools: {_describe(extra)}")
        details = {"missing": dict(missing), "unexpected": dict(extra)}
        if problems:
            return Score(value=0.0, passed=False, reason="; ".join(problems), details=details)
        note = f" (extra allowed: {_describe(extra)})" if extra else ""
        return Score(value=1.0, passed=True, reason=f"called the expected tools {sorted(expected.elements())}{note}", details=details)
