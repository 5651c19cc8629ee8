"""`ToolCallAccuracy`: were the expected tool *names* called (optionally in order)?

Source: multivon-eval `ToolCallAccuracy` (multivon_eval/evaluators/agent.py),
its behaviour as released.
"""

from __future__ import annotations

from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.stages.extract.multivon import NO_AGENT_TRACE
from tracejudge.engine.rendered import NOT_APPLICABLE
from tracejudge.stages.score.base import ToolMetric, call_steps, expected_names, no_expectation, no_trace
from tracejudge.stages.score.reasons import ordinal

__all__ = ["ToolCallAccuracy"]


@register_metric
class ToolCallAccuracy(ToolMetric):
    """Fraction of the expected tool names the agent called; arguments are ignored.

    Every call counts, failed ones too (`include_failed` defaults to true,
    as multivon-eval reads every call of the trace).

    - Unordered (default): names are a *set* on both sides.
      value = |distinct expected names called| / |distinct expected names|.
      Expected `[search, search]`, called `[search]` → 1.0.
    - `require_order: true`: walk the actual calls once, advancing a cursor
      through the expected list each time the call's name is the next
      expected name; value = names reached / len(expected) (duplicates
      count). Expected `[a, b, c]`, called `[b, c, a]` → 1/3; expected
      `[search, fetch, lookup]`, called `[fetch, lookup]` → 0.0 (the walk
      never passes `search`); `[search, search]` vs `[search]` → 0.5.
    - `penalize_unexpected: true`, when some call's name is not expected at
      all: unordered → matched / |expected names ∪ called names|; ordered →
      reached / (len(expected) + number of unexpected calls).

    Edge cases: expected `[]` → 1.0 iff no call counts, else 0.0 (whatever
    `penalize_unexpected` says); expected non-empty, no call → 0.0; no
    expectation → `value: null` (multivon-eval skips the case too), and so is a
    multivon record without `agent_trace` (`extract.multivon.NO_AGENT_TRACE`). The
    expected names are `expected_tools` when given, else the names of the
    case's `expected_tool_calls`. `threshold` defaults to 0.7, as there.

    `details`: `matched` (count), `missing` (expected names not reached, in
    order) and `unexpected` (called names not expected at all).
    """

    default_threshold = 0.7
    require_order: bool = False
    penalize_unexpected: bool = False
    include_failed: bool = True
    expected_tools: list[str] | None = None

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        if case.metadata.get(NO_AGENT_TRACE) is True and not case.trace.steps:
            return Score(value=None, passed=None, reason=f"{NOT_APPLICABLE}the case has no agent_trace (multivon-eval skips it)")
        expected = expected_names(self, case, self.expected_tools)
        if expected is None:
            return no_expectation(case=case)
        calls = self.actual_calls(case)
        actual = [c.name for _, c in calls]

        if not expected:
            details = {"matched": 0, "missing": [], "unexpected": sorted(set(actual))}
            if not actual:
                return self.verdict(1.0, "no tool expected and none called", details)
            return self.verdict(0.0, f"no tool expected, but called {actual}", details)

        expected_set = set(expected)
        if self.require_order:
            reached, last_used = 0, -1
            for pos, name in enumerate(actual):
                if reached < len(expected) and name == expected[reached]:
                    reached += 1
                    last_used = pos
            matched = reached
            missing = expected[reached:]
            unexpected = [a for a in actual if a not in expected_set]
            value = reached / len(expected)
            if self.penalize_unexpected and unexpected:
                value = reached / (len(expected) + len(unexpected))
            head = f"reached {reached}/{len(expected)} expected tools in order"
            if missing:
                steps = call_steps(case)
                if last_used >= 0:
                    idx = calls[last_used][0]
                    where = f"after the {ordinal(last_used + 1)} call (trace call #{idx}, step {steps[idx]}) no later call is {missing[0]!r}"
                else:
                    where = f"no call is {missing[0]!r}"
                head += f"; first divergence at expected [{reached}] {missing[0]!r}: {where}"
        else:
            called = set(actual)
            matched = len(called & expected_set)
            missing = sorted(expected_set - called)
            unexpected = sorted(called - expected_set)
            value = matched / len(expected_set)
            if self.penalize_unexpected and unexpected:
                value = matched / len(expected_set | called)
            head = f"called {matched}/{len(expected_set)} distinct expected tools"
        parts = [head, f"called: {actual}", f"expected: {expected}"]
        if missing:
            parts.append(f"missing: {missing}")
        if unexpected:
            parts.append(f"unexpected: {unexpected}" + (" (penalized)" if self.penalize_unexpected else ""))
        return self.verdict(value, "; ".join(parts), {"matched": matched, "missing": missing, "unexpected": unexpected})
