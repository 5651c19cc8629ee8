"""Stage `aggregate`: fold results into a summary, one result at a time.

Memory is per metric, not per case: running counts and sums. Every figure
states its denominator: a metric's `mean` and `pass_rate` cover `scored`
results (status `ok` and a non-null value); results excluded by status and
scores that could not be computed are counted beside it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline.records import CaseResult, Status

__all__ = ["Aggregator", "MetricStats"]


@dataclass
class MetricStats:
    """Running figures of one metric."""

    scored: int = 0
    total: float = 0.0
    passed: int = 0
    with_verdict: int = 0
    not_computed: int = 0
    excluded: Counter[str] = field(default_factory=Counter)

    def as_dict(self, results: int) -> dict[str, Any]:
        mean = self.total / self.scored if self.scored else None
        pass_rate = self.passed / self.with_verdict if self.with_verdict else None
        return {
            "results": results,
            "scored": self.scored,
            "not_computed": self.not_computed,
            "excluded": dict(sorted(self.excluded.items())),
            "mean": None if mean is None else round(mean, 6),
            "passed": self.passed,
            "pass_rate": None if pass_rate is None else round(pass_rate, 6),
        }


class Aggregator:
    """Fold `CaseResult`s into per-metric stats and status counts.

    `metric_keys` fixes the metrics reported (in order) even when no result
    has a score for them, so an all-error run still lists each metric with
    its exclusions.
    """

    def __init__(self, metric_keys: list[str]) -> None:
        self.metrics: dict[str, MetricStats] = {k: MetricStats() for k in metric_keys}
        self.status: Counter[str] = Counter()
        self.results = 0
        self.duration_s = 0.0

    def fold(self, result: CaseResult) -> None:
        self.results += 1
        status = result.status.value if isinstance(result.status, Status) else str(result.status)
        self.status[status] += 1
        self.duration_s += result.duration_s
        for key in result.scores:
            if key not in self.metrics:
                self.metrics[key] = MetricStats()
        for key, stats in self.metrics.items():
            score = result.scores.get(key)
            if status != Status.ok.value:
                stats.excluded[status] += 1
            elif score is None:
                # A metric that only some cases carry (case-level `metrics`) does not apply here;
                # counting it "not computed" would make the figure depend on the order results came in.
                continue
            elif score.value is None:
                stats.not_computed += 1
            else:
                stats.scored += 1
                stats.total += score.value
                if score.passed is not None:
                    stats.with_verdict += 1
                    stats.passed += bool(score.passed)

    def summary(self) -> dict[str, Any]:
        """The `summary.json` body (without run-level figures the runner adds)."""
        return {
            "results": self.results,
            "status": dict(sorted(self.status.items())),
            "metrics": {k: s.as_dict(self.results) for k, s in self.metrics.items()},
        }
