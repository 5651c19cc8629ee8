"""Config sections for aggregation and CI gates: `aggregate:` and `assertions:`.

```yaml
aggregate:
  group_by: [domain]        # metadata fields to break every metric down by (tags always are)
  seed: 0                   # seeds the reservoir and the bootstrap
  reservoir_size: 1000      # values kept per metric for the bootstrap (whole run)
  group_reservoir_size: 250 # ... and per metric in each breakdown group
  bootstrap_resamples: 1000
  max_groups: 100           # distinct values kept per breakdown; the rest fold into "(other)"
assertions:
  max_invalid_share: 0.0    # share of invalid_input results allowed (default 0: any unreadable record fails)
  max_target_error_share: 0.0  # share of target_error results allowed (default 0: any failed agent call fails)
  max_metric_error_share: 0.0  # per metric, share of its results whose metric raised or timed out (default 0: any fails)
  metrics:                  # per metric key; "*" applies to every metric, whose own entry overrides only the keys it sets
    writes_exact: {min_mean: 0.5, min_pass_rate: 0.4, max_error_share: 0.05}
    TaskCompletion: {min_kappa: 0.6}   # agreement with judge.labels (Cohen's kappa)
    TaskCompletion: {min_kappa: 0.6}   # agreement with judge.labels
    "pass@3(writes_exact)": {min_mean: 0.6}
  regression:
    baseline: ../runs/last-night   # a run directory (its results.jsonl is read)
    max_mean_drop: 0.02
    noise: ci                      # also require the drop to be beyond the paired 95% CI
    metrics: [writes_exact]        # default: every metric both runs have
    min_paired_share: 1.0          # least share of each run's results paired with the other's (default: all)
```

Neither section changes any result, so neither blocks resuming a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from tracejudge.core.record_fields import empty_list
from tracejudge.core.strict_numbers import NoBoolNumbers

__all__ = ["AggregateConfig", "AssertionsConfig", "MetricAssertion", "RegressionRule"]


class _Strict(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid")


class AggregateConfig(_Strict):
    """How `summary.json` is computed.

    `group_by` names metadata fields; each metric is also reported per value
    of each field, and per tag. Memory is bounded: at most `max_groups`
    values per field (and tags) are tracked, later ones fold into `(other)`;
    each metric keeps a reservoir of at most `reservoir_size` values for the
    whole run and `group_reservoir_size` per group. The bootstrap's cost is
    `bootstrap_resamples` × reservoir per CI, so these bound the summary's
    time too; the CI stays calibrated for the full count (see
    `tracejudge.stages.aggregate.stats.bootstrap_mean_ci`).
    """

    group_by: list[str] = Field(default_factory=empty_list)
    by_tags: bool = True
    seed: int = 0
    reservoir_size: int = Field(default=1000, ge=10, le=1_000_000)
    group_reservoir_size: int = Field(default=250, ge=10, le=1_000_000)
    bootstrap_resamples: int = Field(default=1000, ge=100, le=100_000)
    max_groups: int = Field(default=100, ge=1, le=100_000)


class MetricAssertion(_Strict):
    """Thresholds one metric must meet for the run to PASS.

    `min_mean` / `min_pass_rate` are in [0, 1] and compare against figures
    over scored results; `max_error_share` bounds the share of all results
    that were excluded (any non-`ok` status) or not computed for the metric.
    A metric with no scored result fails `min_mean` and `min_pass_rate`.
    `min_kappa` bounds the judge's agreement with reference labels (Cohen's κ,
    quadratic-weighted for graded labels; `judge.labels` or `tracejudge calibrate
    --labels`): a metric with no labelled verdict fails it. `max_metric_error_share`
    overrides `AssertionsConfig.max_metric_error_share` for this metric.
    """

    min_mean: float | None = Field(default=None, ge=0.0, le=1.0)
    min_pass_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    max_error_share: float | None = Field(default=None, ge=0.0, le=1.0)
    min_kappa: float | None = Field(default=None, ge=-1.0, le=1.0)
    max_metric_error_share: float | None = Field(default=None, ge=0.0, le=1.0)


class RegressionRule(_Strict):
    """The regression gate against a baseline run.

    A metric regresses, and the run FAILS, when its mean dropped by more
    than `max_mean_drop` (baseline mean − current mean > max_mean_drop) and,
    with `noise: ci`, the paired 95% bootstrap interval of the mean delta
    over the (case, trial) pairs both runs share lies entirely below zero
    (the drop is beyond noise). With `noise: none` the drop alone decides.

    `min_paired_share` (in [0, 1], default 1.0) is the least share of this run's results, and of the
    baseline's, that must be paired by (case, trial) with the other run's: results without a pair are
    not compared, so a baseline killed part-way or a run of a few of the baseline's cases would
    otherwise pass unchecked. Below it the `regression coverage` check fails; at or above it, any
    result left unpaired, or a baseline that did not finish, is a warning.
    """

    baseline: Path
    max_mean_drop: float = Field(default=0.0, ge=0.0, le=1.0)
    noise: Literal["ci", "none"] = "none"
    metrics: list[str] | None = None
    min_paired_share: float = Field(default=1.0, ge=0.0, le=1.0)


class AssertionsConfig(_Strict):
    """All assertions of a run: thresholds per metric, unreadable input, and an optional regression rule.

    `max_invalid_share` bounds the share of results that are `invalid_input`
    (a record that could not be read or validated, a repeated id): by default
    0.0, so one unreadable record fails the gate; a dataset known to hold some
    states its tolerance here. `max_target_error_share` does the same for
    `target_error` results (a live agent that raised, timed out or answered
    nothing usable): by default 0.0, so an agent failing a case fails the gate.
    `max_metric_error_share` bounds, per metric, the share of the results carrying
    it whose metric raised or was cut at `run.metric_timeout_s` (a bug in the
    metric, not a case it cannot score): by default 0.0, so a metric that raises
    fails the gate, as a scorer error fails an inspect-ai eval; a metric's own
    `max_metric_error_share` overrides it for that metric.
    """

    metrics: dict[str, MetricAssertion] = Field(default_factory=dict)
    max_invalid_share: float = Field(default=0.0, ge=0.0, le=1.0)
    max_target_error_share: float = Field(default=0.0, ge=0.0, le=1.0)
    max_metric_error_share: float = Field(default=0.0, ge=0.0, le=1.0)
    regression: RegressionRule | None = None


def assertion_problems(assertions: AssertionsConfig, metric_keys: list[str], pass_at_k_keys: list[str]) -> list[tuple[tuple[str, ...], str]]:
    """Assertions that cannot apply to this run's metrics: `[(key path under assertions, message)]`."""
    problems: list[tuple[tuple[str, ...], str]] = []
    if not metric_keys and not pass_at_k_keys:
        return problems  # no metric at all: that is the error (`config.require_metrics`, naming a `--set` that emptied the list)
    known = ", ".join([*metric_keys, *pass_at_k_keys])
    for key, rule in assertions.metrics.items():
        if key == "*":
            continue
        if key in pass_at_k_keys:
            if rule.min_pass_rate is not None or rule.max_error_share is not None or rule.max_metric_error_share is not None:
                problems.append((("metrics", key), "a pass@k figure takes min_mean only (its value is already a rate over cases)"))
        elif key not in metric_keys:
            problems.append((("metrics", key), f"no metric {key!r} in this run; expected one of: {known}{_nearest(key, [*metric_keys, *pass_at_k_keys])}"))
    if assertions.regression is not None:
        for i, key in enumerate(assertions.regression.metrics or []):
            if key not in metric_keys:
                problems.append((("regression", "metrics", str(i)),
                                 f"no metric {key!r} in this run; expected one of: {', '.join(metric_keys)}{_nearest(key, metric_keys)}"))
    return problems


def _nearest(key: str, names: list[str]) -> str:
    """`"; did you mean NAME?"` for a gate naming a metric one slip from a name of the run (`r_output` for `r_outputs`), else ""."""
    from tracejudge.core.suggest import did_you_mean

    hint = did_you_mean(key, names, n=1, typo=True)
    return f"; {hint}" if hint else ""
