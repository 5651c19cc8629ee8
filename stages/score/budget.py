"""`MaxToolCalls`, `MaxModelRequests`: did the agent stay within a call budget?

Source: pydantic-evals `MaxToolCalls` / `MaxModelRequests`
(pydantic_evals/evaluators/agentic.py).
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import Metric, ToolMetric, make_score, no_trace
from tracejudge.stages.score.views import case_views

__all__ = ["MaxModelRequests", "MaxToolCalls"]


def _within(count: int, budget: int, what: str, source: str = "") -> Score:
    ok, reason = _said(count, budget, what, source)
    return make_score(1.0 if ok else 0.0, ok, reason, {"count": count, "budget": budget})


@lru_cache(maxsize=4096)
def _said(count: int, budget: int, what: str, source: str) -> tuple[bool, str]:
    # Counts and budgets are small and repeat from case to case: each verdict's text is written once.
    ok = count <= budget
    return ok, f"{count} {what}{source}, budget={budget}" if ok else f"{count} {what}{source}, budget={budget} (over by {count - budget})"


@register_metric
class MaxToolCalls(ToolMetric):
    """Pass (1.0) when the trace has at most `max_calls` tool calls, else fail (0.0).

    Failed calls **do** count by default (`include_failed: true`, as in
    pydantic-evals: they still cost time and tokens); `include_tools` /
    `exclude_tools` narrow what counts. Edge cases: no call → 0 ≤ budget,
    passes; `max_calls: 0` passes only a trace without calls. `details`
    carry `count` and `budget`.

    A case with no trace is `invalid_input` (`value: null`); pydantic-evals
    scores it False ("No span tree available").
    """

    max_calls: int = Field(ge=0)
    include_failed: bool = True

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        p = self.__dict__  # (one attribute read for the options: each read on a pydantic model goes through its `__getattr__` hook)
        if p["include_tools"] is None and not p["exclude_tools"] and p["include_failed"]:
            return _within(case_views(case).call_count, p["max_calls"], "tool call(s)")  # every call counts: no list of pairs to build
        return _within(len(self.counted_calls(case)), p["max_calls"], "tool call(s)")


@register_metric
class MaxModelRequests(Metric):
    """Pass (1.0) when the run made at most `max_requests` model requests, else fail (0.0).

    The count is the recorded `usage.requests` when the trace has it (as
    pydantic-evals prefers its `requests` metric); otherwise it is counted
    from the trace, one request per step (each step is one model turn).
    The reason names which source was used. `details`: `count`, `budget`.

    A case with no trace is `invalid_input` (`value: null`); pydantic-evals
    scores it False ("No span tree available").
    """

    max_requests: int = Field(ge=0)

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        usage = case.trace.usage
        if usage is not None and usage.requests is not None:
            return _within(usage.requests, self.max_requests, "model request(s)", " (from usage.requests)")
        return _within(len(case.trace.steps), self.max_requests, "model request(s)", " (counted from the trace's steps)")
