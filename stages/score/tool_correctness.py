"""`ToolCorrectness`: the multiset of tool names called, pass or fail.

Source: pydantic-evals `ToolCorrectness` (pydantic_evals/evaluators/agentic.py).
"""

from __future__ import annotations

from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import ToolMetric, expected_calls, make_score, no_expectation, no_trace
from tracejudge.stages.score.reasons import names_repr
from tracejudge.stages.score.views import case_views

try:
    from _collections import _count_elements  # what `Counter` counts with, in C
except ImportError:  # pragma: no cover - a Python without the C helper
    def _count_elements(mapping: dict[str, int], names: list[str]) -> None:  # type: ignore[misc]
        for n in names:
            mapping[n] = mapping.get(n, 0) + 1

__all__ = ["ToolCorrectness"]


def _describe(counts: dict[str, int]) -> str:
    return ", ".join([f"{name!r} (x{n})" for name, n in sorted(counts.items())])


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
        p = self.__dict__  # (one attribute read for the options: each read on a pydantic model goes through its `__getattr__` hook)
        allow_extra = p["allow_extra"]
        if p["expected_tools"] is not None:
            names = [n for n in p["expected_tools"] if self.wanted(n)]
        elif p["include_tools"] is None and not p["exclude_tools"]:
            if case.expected_tool_calls is None:
                return no_expectation(case=case)
            names = [e.name for e in case.expected_tool_calls]
        else:
            exp = expected_calls(self, case)
            if exp is None:
                return no_expectation(case=case)
            names = [e.name for _, e in exp]
        expected = _count(names)
        views = case_views(case)
        # (`counted_names`, read from the views when another metric of the case listed them: no method look-up.)
        actual = _count(views.names.get((p["include_tools"], p["exclude_tools"], p["include_failed"]))
                        or self.counted_names(views))
        # As `Counter` subtraction orders them: missing in the expected names' order, extra in the calls'. (Loops, each
        # count read once: a comprehension makes a function each time, which costs more than these few names.)
        missing: dict[str, int] = {}
        get = actual.get
        for n, c in expected.items():
            c -= get(n, 0)
            if c > 0:
                missing[n] = c
        extra: dict[str, int] = {}
        get = expected.get
        for n, c in actual.items():
            c -= get(n, 0)
            if c > 0:
                extra[n] = c
        details = {"missing": missing, "unexpected": extra}
        if missing or (extra and not allow_extra):
            problems = []
            if missing:
                problems.append(f"missing tools: {_describe(missing)}")
            if extra and not allow_extra:
                problems.append(f"unexpected tools: {_describe(extra)}")
            return make_score(0.0, False, "; ".join(problems), details)
        names.sort()
        if extra:
            return make_score(1.0, True, f"called the expected tools {names_repr(names)} (extra allowed: {_describe(extra)})", details)
        return make_score(1.0, True, f"called the expected tools {names_repr(names)}", details)


def _count(names: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    _count_elements(counts, names)
    return counts
