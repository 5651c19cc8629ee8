"""`PassAtK` and `PassHatK`: pass@k and pass^k of another metric over trials.

Computed in the aggregate stage, not per case: `{type: PassAtK, metric:
writes_exact, k: 3}` in `metrics:` adds `pass@3(writes_exact)` to
`summary.json` (`pass_at_k` section), ready for assertions; `{type: PassHatK,
metric: reward, k: 4, group_by: task_id}` adds `pass^4(reward)` there.

The trials of a case are its `run.trials` re-runs; with `group_by: KEY`, the
trials of a task are instead every result whose `metadata[KEY]` is equal (a
recorded file's trials, as τ-bench's `task_id`), each (case, trial) one trial.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field
from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import Metric

__all__ = ["PassAtK", "PassHatK"]


@register_metric
class PassAtK(Metric):
    """pass@k of metric `metric` over the trials of each case (or each `group_by` group).

    Source: cogitator evals `passAtK(metric, {k, threshold})`, with the
    unbiased estimator `1 − C(n−c, k)/C(n, k)` (Chen et al. 2021): per case,
    `n` is the number of trials in the run and `c` the trials whose score
    passed. Which trials fail, one rule for every status: a trial whose
    agent failed (`target_error`: it raised or timed out) fails for every
    metric, as a sample that crashed or timed out fails in Chen et al.'s
    HumanEval harness; a trial the judge failed (`judge_error`,
    `rate_limited`) or the judge budget skipped (`skipped_budget`) fails
    only for the metrics it left without a value, and its deterministic
    scores count as computed (a valid sample of those metrics); a trial
    whose metric raised, returned what no score can be or timed out
    (`raised`) fails for that metric; an `invalid_input` result (an
    unreadable record) fails its case's trial, and under `group_by`, as
    such a record has no metadata to read the key from, is left out. A
    failed trial is a scored one: a case whose every trial failed is a case
    with c = 0, never left out. The run's figure is the mean over the cases
    (tasks) with at least k trials, all but those whose metric does not
    apply on any trial (`no_scored_trial`). With `trials: 1` and `k: 1` it
    equals the metric's pass rate when no result errored (the pass rate
    leaves an errored result out; pass@1 counts a trial failed as above).

    Parameters:
        metric: key of another metric of the run (not itself a `PassAtK` or `PassHatK`).
        k: 1 <= k <= `run.trials` (without `group_by`); checked when the config loads.
        threshold: a trial passes when its value >= threshold. Deviation:
            cogitator defaults to 1; here the default (`None`) is the
            metric's own verdict (`passed`), which uses that metric's
            threshold, so pass@k agrees with the metric's pass rate.
        group_by: a metadata key (`task_id`): the trials of one task are the
            results whose `metadata[group_by]` is equal (compared as JSON: `1`
            and `"1"` are two tasks), each (case, trial) one trial, so a
            recorded file's trials (τ-bench's `0-0`, `0-1`, … of task 0) count
            as such; `n` is then the task's trial count and `k` is not checked
            against `run.trials`. A result without the key belongs to no task:
            it is left out and counted in `results_without_key`; so is an
            unreadable record (`invalid_input`), which is no sample of the
            agent, and its task, one trial short, may then count under
            `too_few_trials`.

    Edge cases: a case (task) with fewer than k trials in the results (an
    interrupted run, a task recorded fewer times) is left out of the average
    and counted as `too_few_trials`; one whose metric has no value on any
    trial and none failed as above (the metric does not apply to it, or its results
    were written before the metric was added) is left out and counted as
    `no_scored_trial`.
    """

    over_trials: ClassVar[bool] = True
    estimator: ClassVar[str] = "pass@k"  # the figure's `estimator` in summary.json; the aggregate picks its formula by it

    metric: str
    k: int = Field(ge=1)
    group_by: str | None = Field(default=None, min_length=1)

    @property
    def key(self) -> str:
        """`name`, else `pass@<k>(<metric>)` (`pass^<k>(<metric>)` for `PassHatK`)."""
        return self.name or f"{self.estimator[:-1]}{self.k}({self.metric})"  # (`pass@` or `pass^`, then k)

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

        kind = type(self).__name__
        problems: list[tuple[tuple[Any, ...], str]] = []
        keys: list[str] = []
        figures: list[str] = []  # (the keys of other pass@k / pass^k figures)
        for spec in config.metrics:
            try:
                m = build_metric(spec)
            except SpecError:
                continue
            (figures if getattr(m, "over_trials", False) else keys).append(m.key)
        if self.metric in figures:  # (a figure over trials has no per-trial score to count)
            problems.append((("metric",), f"{kind}: {self.metric!r} is itself a pass@k or pass^k figure, not a metric scored per "
                                          f"result; expected one of: {', '.join(keys) or '(none)'}"))
        elif self.metric not in keys:
            problems.append((("metric",), f"{kind}: {self.metric!r} is not a metric of this run; expected one of: {', '.join(keys) or '(none)'}"))
        if self.group_by is None and self.k > config.run.trials:
            problems.append((("k",), f"{kind}: k={self.k} is larger than run.trials={config.run.trials}; {self.estimator} needs k <= trials "
                                     "(or `group_by`: a metadata key whose equal values mark one task's recorded trials, as τ-bench's task_id)"))
        return problems

    def evaluate(self, case: Case) -> Score:
        """Not a per-case metric: always `value: null` with the reason (the aggregate computes it)."""
        return Score(value=None, passed=None, reason=f"not computed per case: {type(self).__name__} is computed over trials in the aggregate")


@register_metric
class PassHatK(PassAtK):
    """pass^k ("pass hat k") of metric `metric`: the chance that k trials of a task, drawn from its n, all pass.

    Sources: τ-bench (sierra-research/tau-bench `tau_bench/run.py`, `display_metrics`) and τ²-bench
    (sierra-research/tau2-bench `src/tau2/metrics/agent_metrics.py`, `pass_hat_k`), after Yao et al. 2024
    (arXiv 2406.12045): per task `C(c, k) / C(n, k)` for c passing trials of n, averaged over the tasks.
    τ-bench's headline reliability figure; pass^1 is the mean success.

    Parameters as `PassAtK`'s (`metric`, `k`, `threshold`, `group_by`); on a recorded τ-bench or
    τ²-bench file: `{type: PassHatK, metric: RecordedReward, k: 4, group_by: task_id}` with
    `RecordedReward` (a trial passes as upstream's `is_successful` decides it) gives upstream's figures.

    Differences from upstream, each where its results cannot occur in a complete file: a task with
    fewer than k trials is left out and counted in `too_few_trials` (τ²-bench lowers the largest k it
    reports to the fewest trials of a task; τ-bench divides by the run's trial count, counting a
    missing trial as a failure); n is the task's own trial count (τ-bench: the number of distinct
    trial numbers in the run); the tasks' values are summed exactly (`math.fsum`) when grouped, so
    the figure does not depend on the order trials arrive in — it equals upstream's running float
    sum wherever that sum is exact (the airline file's pass^1..4 are); a trial fails as `PassAtK` says
    (a judge failure only for the judge's metrics). τ²-bench drops its infrastructure errors from n: the `tau2-bench` format reads such a
    simulation as an `invalid_input`, which has no `task_id` and so is left out here as well; so is
    a τ-bench record too damaged to read (an unreadable record is no sample of the agent), and its
    task, one trial short, then counts under `too_few_trials` for a k above its trials left.
    """

    estimator: ClassVar[str] = "pass^k"
