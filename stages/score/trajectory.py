"""`TrajectoryMatch`: the ordered sequence of tool names against an expected one.

Source: pydantic-evals `TrajectoryMatch` (pydantic_evals/evaluators/agentic.py),
with cogitator's `trajectory` available as `score: min, include_failed: true`
(cogitator's trajectory holds every call of the run, failed ones too).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any, Literal

from tracejudge.core.records import Case, Score, ToolCall
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import ToolMetric, expected_names, no_expectation, no_trace
from tracejudge.stages.score.reasons import names_repr, ordinal
from tracejudge.stages.score.views import CaseViews, case_views

__all__ = ["TrajectoryMatch", "lcs_length"]


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two name lists.

    Bit-parallel (Allison–Dix / Hyyrö): one big-integer update per item of
    `a`, each over all of `b` at once, after trimming the common prefix and
    suffix — so equal or nearly equal trajectories cost almost nothing.
    """
    if len(a) == 1 or len(b) == 1:  # one item: in common at most once, found by a scan in C
        return int(a[0] in b) if len(a) == 1 else int(b[0] in a)
    lo = 0
    for x, y in zip(a, b):
        if x != y:
            break
        lo += 1
    if lo == len(a) or lo == len(b):
        return lo
    a, b = a[lo:], b[lo:]
    hi = 0
    for x, y in zip(reversed(a), reversed(b)):
        if x != y:
            break
        hi += 1
    if hi:
        a, b = a[: len(a) - hi], b[: len(b) - hi]
    if not a or not b:
        return lo + hi
    masks: dict[str, int] = {}
    for j, y in enumerate(b):
        masks[y] = masks.get(y, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for x in a:
        u = v & masks.get(x, 0)
        v = ((v + u) | (v - u)) & full
    return lo + hi + len(b) - v.bit_count()


def _f1(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


@lru_cache(maxsize=4096)
def _summary(label: str, k: int, n_actual: int, n_expected: int, score: str) -> tuple[float, str, float, float, float]:
    """`(value, the reason's figures, precision, recall, f1)` of k items in common: a function of five small values,
    so computed and formatted once, not once a case."""
    precision = k / n_actual
    recall = k / n_expected
    f1 = _f1(precision, recall)
    longest = max(n_actual, n_expected)
    value = f1 if score == "f1" else precision if score == "precision" else recall if score == "recall" else k / longest
    least = f", min={k}/{longest}={k / longest:.3f}" if score == "min" else ""
    head = (f"{label}={k}, precision={k}/{n_actual}={precision:.3f}, recall={k}/{n_expected}={recall:.3f}, "
            f"F1={f1:.3f}{least}; score={score}={value:.3f}")
    return value, head, precision, recall, f1


@register_metric
class TrajectoryMatch(ToolMetric):
    """Compare the ordered tool names the agent called with the expected ones.

    `order`:
      - `exact`: 1.0 iff the two name sequences are equal, else 0.0;
      - `in_order` (default, as in pydantic-evals): k = LCS length;
      - `any_order`: k = size of the multiset intersection.
    With k, precision = k/len(actual), recall = k/len(expected), and `score`
    picks the value: `f1` (default, pydantic-evals), `precision`, `recall`,
    or `min` = k / max(len(actual), len(expected)) (cogitator's
    `trajectory`, which counts failed calls: add `include_failed: true`).
    Example: expected a,b,c vs actual a,x,b in_order →
    LCS 2, precision 2/3, recall 2/3, F1 0.667.

    Edge cases: both sequences empty → 1.0 in every mode; exactly one empty
    → 0.0. Duplicates count (`[search, search]` vs `[search]` any_order →
    F1 0.667). Failed calls are left out unless `include_failed: true`.
    The expected names are `expected_trajectory` when given, else the names
    of the case's `expected_tool_calls` (no expectation → `value: null`).
    `threshold` defaults to 1.0: only a full match passes.

    A case with no trace is `invalid_input` (this metric `value: null`);
    pydantic-evals scores it 0.0 ("No span tree available"). `invalid_input` is
    the honest status: nothing was observed, so nothing passed or failed.
    """

    order: Literal["exact", "in_order", "any_order"] = "in_order"
    score: Literal["f1", "precision", "recall", "min"] = "f1"
    expected_trajectory: list[str] | None = None

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        p = self.__dict__  # (one attribute read for the options: each read on a pydantic model goes through its `__getattr__` hook)
        if p["expected_trajectory"] is None and p["include_tools"] is None and not p["exclude_tools"]:
            if case.expected_tool_calls is None:  # (`expected_names` without a parameter or filter, inline)
                return no_expectation(case=case)
            expected = [e.name for e in case.expected_tool_calls]
        else:
            expected = expected_names(self, case, self.expected_trajectory)
            if expected is None:
                return no_expectation(case=case)
        views = case_views(case)
        # (`counted_names`, read from the views when another metric of the case listed them: no method look-up.)
        actual = views.names.get((p["include_tools"], p["exclude_tools"], p["include_failed"])) or self.counted_names(views)
        order = p["order"]

        if order == "exact":
            if actual == expected:
                return self.verdict(1.0, f"trajectory equals expected: {names_repr(actual)}")
            where = _divergence(self, p, expected, actual, views)
            return self.verdict(0.0, f"trajectory {names_repr(actual)} does not equal expected {names_repr(expected)}; {where}")
        if not actual and not expected:
            return self.verdict(1.0, "both actual and expected trajectories are empty")
        if not actual or not expected:
            side = "actual" if not actual else "expected"
            return self.verdict(0.0, f"{side} trajectory is empty (expected: {names_repr(expected)}, actual: {names_repr(actual)})")

        if order == "any_order":
            k = sum((Counter(expected) & Counter(actual)).values())
            label = "multiset overlap"
        else:
            k = lcs_length(actual, expected)
            label = "LCS"
        value, head, precision, recall, f1 = _summary(label, k, len(actual), len(expected), p["score"])
        reason = f"{head} (expected: {names_repr(expected)}, actual: {names_repr(actual)})"
        if order == "in_order" and (k < len(actual) or k < len(expected)):
            reason += "; " + _divergence(self, p, expected, actual, views)
        return self.verdict(value, reason, {"k": k, "precision": precision, "recall": recall, "f1": f1})


def _divergence(metric: TrajectoryMatch, p: dict[str, Any], expected: list[str], actual: list[str], views: CaseViews) -> str:
    """First position where the two name sequences differ, with the call's step and arguments (`p`: `metric`'s fields)."""
    for pos, (e, a) in enumerate(zip(expected, actual)):
        if e != a:
            return f"first divergence at {_where(metric, p, views, pos)}: expected {e!r}, got {a!r}"
    pos = min(len(expected), len(actual))
    if len(actual) > len(expected):
        return f"first divergence at {_where(metric, p, views, pos)}: unexpected {actual[pos]!r} after the expected sequence"
    return f"first divergence at the {ordinal(pos + 1)} call: expected {expected[pos]!r}, but the trajectory ended"


def _where(metric: TrajectoryMatch, p: dict[str, Any], views: CaseViews, pos: int) -> str:
    idx, call = _counted_at(metric, p, views, pos)
    return f"the {ordinal(pos + 1)} call (trace call #{idx}, step {views.step_of(idx)}) {views.rendered(call)}"


def _counted_at(metric: TrajectoryMatch, p: dict[str, Any], views: CaseViews, pos: int) -> tuple[int, ToolCall]:
    """`metric.counted_calls(…)[pos]`: without a name filter, found by walking the calls to it rather than listing them
    all (the reason shows one call, most often one of the first)."""
    if p["include_tools"] is None and not p["exclude_tools"]:
        calls = views.calls
        if p["include_failed"]:
            return pos, calls[pos]
        for i, call in enumerate(calls):
            if call.error is None:
                if not pos:
                    return i, call
                pos -= 1
    return metric.counted_calls(views.case, views)[pos]
