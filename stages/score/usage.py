"""`Latency`, `Cost`, `TokenUsage`: what a recorded run consumed, from the trace's usage.

Source: cogitator evals `latency()` / `cost()` / `tokenUsage()`
(packages/evals/src/metrics/statistical.ts). Cogitator reports them only as
run-level statistics (score 0, with mean / median / p50 / p95 / totals in
metadata). Here each is a per-case score so it can gate a case: the measured
number goes to `details` (where the aggregate stage can fold it into the same
statistics) and `value` says whether it stays within an optional budget.
"""

from __future__ import annotations

from pydantic import Field
from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import Metric, no_trace

__all__ = ["Cost", "Latency", "TokenUsage"]


def _budgeted(measured: float, budget: float | None, unit: str, details: dict[str, float]) -> Score:
    shown = f"{measured:g} {unit}"
    if budget is None:
        return Score(value=1.0, passed=True, reason=f"{shown} (no budget set)", details=details)
    ok = measured <= budget
    return Score(value=1.0 if ok else 0.0, passed=ok, reason=f"{shown}, budget {budget:g} {unit}" + ("" if ok else " exceeded"), details=details)


def _missing(field: str) -> Score:
    return Score(value=None, passed=None, reason=f"not computed: the trace's usage has no {field}")


@register_metric
class Latency(Metric):
    """Wall-clock seconds of the recorded run (`usage.latency_s`), within `max_seconds`.

    `value` 1.0 when within the budget (or no budget is set), 0.0 over it;
    `details.latency_s` carries the measure. No recorded latency → `value: null`.
    A negative latency (a span that ends before it starts: clocks out of step
    between the hosts that recorded it) measures nothing → `value: null`, the
    reason naming it and `details.latency_s` keeping it; it used to pass any budget.
    """

    max_seconds: float | None = Field(default=None, ge=0)

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        usage = case.trace.usage
        if usage is None or usage.latency_s is None:
            return _missing("latency_s")
        if usage.latency_s < 0:
            return Score(value=None, passed=None, details={"latency_s": usage.latency_s},
                         reason=f"not computed: the trace's latency_s is negative ({usage.latency_s:g} s; its clock is out of step)")
        return _budgeted(usage.latency_s, self.max_seconds, "s", {"latency_s": usage.latency_s})


@register_metric
class Cost(Metric):
    """Dollars the recorded run spent (`usage.cost_usd`), within `max_usd`.

    `value` 1.0 within the budget (or without one), 0.0 over it;
    `details.cost_usd` carries the measure. No recorded cost → `value: null`.
    """

    max_usd: float | None = Field(default=None, ge=0)

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        usage = case.trace.usage
        if usage is None or usage.cost_usd is None:
            return _missing("cost_usd")
        return _budgeted(usage.cost_usd, self.max_usd, "USD", {"cost_usd": usage.cost_usd})


@register_metric
class TokenUsage(Metric):
    """Tokens the recorded run used (input + output), within `max_tokens`.

    `details` carry `input_tokens`, `output_tokens` and `total_tokens`; a side
    that was not recorded counts 0, and neither recorded → `value: null`.
    `value` 1.0 within the budget (or without one), 0.0 over it.
    """

    max_tokens: int | None = Field(default=None, ge=0)

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        usage = case.trace.usage
        lacking = case.metadata.get("requests_without_usage")
        if isinstance(lacking, int) and lacking > 0 and usage is not None and (usage.input_tokens is None or usage.output_tokens is None):
            # the other requests' sum is a part of the total: no budget can pass on it
            return Score(value=None, passed=None, reason=f"not computed: {lacking} of the trace's {usage.requests} model requests recorded no "
                                                         "token usage, so the total is unknown")
        if usage is None or (usage.input_tokens is None and usage.output_tokens is None):
            return _missing("input_tokens or output_tokens")
        i, o = usage.input_tokens or 0, usage.output_tokens or 0
        details: dict[str, float] = {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}
        return _budgeted(i + o, self.max_tokens, "tokens", details)
