"""`RecordedReward`: the reward a benchmark recorded for a run, as a metric.

A recorded τ-bench or τ²-bench file carries each trial's reward (the `tau-bench` and `tau2-bench`
formats keep it in `metadata.reward`). pass^k over these rewards (`PassHatK` grouped by `task_id`)
is then the benchmark's own published figure, not a tracejudge metric's.

Source of the verdict: `is_successful(reward)` = `(1 - 1e-6) <= reward <= (1 + 1e-6)`, the same in
sierra-research/tau-bench `tau_bench/run.py` (`display_metrics`) and sierra-research/tau2-bench
`src/tau2/metrics/agent_metrics.py`.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field
from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import Metric, make_score

__all__ = ["RecordedReward", "is_successful"]

_TOLERANCE = 1e-6  # upstream's: a reward within a millionth of 1.0 is a success


def is_successful(reward: float) -> bool:
    """τ-bench's and τ²-bench's `is_successful`: the reward is 1.0 within 1e-6 (either side)."""
    return (1 - _TOLERANCE) <= reward <= (1 + _TOLERANCE)


def _not_computed(reason: str) -> Score:
    return Score(value=None, passed=None, reason=f"not computed: {reason}")


@register_metric
class RecordedReward(Metric, defer_build=True):
    """The reward the benchmark recorded (`metadata.reward`) as the value; passed as τ-bench's `is_successful` decides.

    Value: `metadata[field]` as a float. Passed: without `threshold`, upstream's `is_successful`
    (`1 - 1e-6 <= reward <= 1 + 1e-6`, so 0.9999995 passes); with one, `value >= threshold` as any metric.
    `value: null` with the reason when the key is absent or null (a τ²-bench simulation without
    `reward_info`), not a number (a bool, a text), not finite, or outside [0, 1] by more than 1e-6 (every
    figure of a run assumes values in [0, 1]; τ-bench's and τ²-bench's rewards are products of 0/1
    checks); within 1e-6 outside it, the value is kept as 0.0 or 1.0 and the verdict is upstream's.

    Parameters:
        field: the metadata key holding the reward (default `reward`, where both formats keep it).
    """

    field: str = Field(default="reward", min_length=1)

    def evaluate(self, case: Case) -> Score:
        if self.field not in case.metadata:
            return _not_computed(f"the case has no metadata.{self.field} (a recorded reward)")
        reward: Any = case.metadata[self.field]
        if reward is None:
            return _not_computed(f"metadata.{self.field} is null (no reward was recorded)")
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):  # (True is no reward of 1.0)
            return _not_computed(f"metadata.{self.field} is {type(reward).__name__} {reward!r:.60}, not a number")
        try:
            value = float(reward)
        except OverflowError:  # (an integer too large for a float)
            value = math.inf
        if not math.isfinite(value) or not -_TOLERANCE <= value <= 1 + _TOLERANCE:
            return _not_computed(f"metadata.{self.field} = {reward!r:.60} is not a reward in [0, 1]")
        # A reward within upstream's tolerance outside [0, 1] (float noise of a product) is upstream's success or
        # failure all the same: kept as 1.0 or 0.0, since every figure of a run assumes values in [0, 1].
        value = min(max(value, 0.0), 1.0) if not 0.0 <= value <= 1.0 else value
        if self.threshold is not None:
            return self.verdict(value, f"recorded reward {value!r} (threshold {self.threshold})")
        ok = is_successful(float(reward))
        return make_score(value, ok, f"recorded reward {value!r}: {'a success' if ok else 'no success'} (τ-bench's is_successful: "
                                     "within 1e-6 of 1.0)")
