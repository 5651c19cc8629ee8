"""`PassAtK`: pass@k of another metric over each case's trials.

Computed in the aggregate stage, not per case: `{type: PassAtK, metric:
writes_exact, k: 3}` in `metrics:` adds `pass@3(writes_exact)` to
`summary.json` (`pass_at_k` section), ready for assertions.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field
from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import Metric

__all__ = ["PassAtK"]


@register_metric
class PassAtK(Metric):
    """pass@k of metric `metric` over the trials of each case.

    Source: cogitator evals `passAtK(metric, {k, threshold})`, with the
    unbiased estimator `1 − C(n−c, k)/C(n, k)` (Chen et al. 2021): per case,
    `n` is the number of trials in the run and `c` the trials whose score
    passed; an errored trial (any status other than `ok`, or a score that
    could not be computed) counts as a failure. The run's figure is the
    average over the cases with at least one scored trial. With `trials: 1`
    and `k: 1` it equals the metric's pass rate.

    Parameters:
        metric: key of another metric of the run (not itself a `PassAtK`).
        k: 1 <= k <= `run.trials`; checked when the config loads.
        threshold: a trial passes when its value >= threshold. Deviation:
            cogitator defaults to 1; here the default (`None`) is the
            metric's own verdict (`passed`), which uses that metric's
            threshold, so pass@k agrees with the metric's pass rate.

    Edge cases: a case with fewer than k trials in the results (an
    interrupted run) is left out of the average and counted as
    `too_few_trials`; a case whose trials all errored counts as
    `no_scored_trial`.
    """

    over_trials: ClassVar[bool] = True

    metric: str
    k: int = Field(ge=1)

    @property
    def key(self) -> str:
        """`name`, else `pass@<k>(<metric>)`."""
        return self.name or f"pass@{self.k}({self.metric})"

    def trial_passed(self, score: Score | None) -> bool:
        """Did one trial's score pass? `score` is a `Score` of an `ok` result, or `None`."""
        if score is None or score.value is None:
            return False
        if self.threshold is not None:
            return score.value >= self.threshold  # exactly, as every metric's own verdict
        return bool(score.passed)

    def check_run(self, config: Any) -> list[tuple[tuple[Any, ...], str]]:
        """Problems with this spec in the context of the whole config: `[(loc, message)]`."""
        from tracejudge.core.registry import SpecError, build_metric

        problems: list[tuple[tuple[Any, ...], str]] = []
        keys = []
        for spec in config.metrics:
            try:
                m = build_metric(spec)
            except SpecError:
                continue
            if not getattr(m, "over_trials", False):
                keys.append(m.key)
        if self.metric not in keys:
            problems.append((("metric",), f"PassAtK: {self.metric!r} is not a metric of this run; expected one of: {', '.join(keys) or '(none)'}"))
        if self.k > config.run.trials:
            problems.append((("k",), f"PassAtK: k={self.k} is larger than run.trials={config.run.trials}; pass@k needs k <= trials"))
        return problems

    def evaluate(self, case: Case) -> Score:
        """Not a per-case metric: always `value: null` with the reason (the aggregate computes it)."""
        return Score(value=None, passed=None, reason="not computed per case: PassAtK is computed over trials in the aggregate")
