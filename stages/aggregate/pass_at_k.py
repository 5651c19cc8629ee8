"""pass@k and pass^k of one metric over trials that arrive in any order, per breakdown group.

Two trackers fold the trials:

- `PassAtKTracker`: the trials of a case are its `run.trials` re-runs (`PassAtK`/`PassHatK` without
  `group_by`, and every metric's pass@1 and pass@trials); a case's estimate is added to the sums as
  soon as its trials are all in.
- `GroupedPassTracker`: the trials of a task are the results whose `metadata[group_by]` is equal
  (`group_by: task_id` over a recorded τ-bench file); how many a task has is known only at the end,
  so it keeps `[n, c, scored]` per (breakdown group, task) and computes the estimates when asked.

Both give a `_Snapshot` that `PassAtKTracker.figure` turns into a summary figure; `spec_figure`
does so for a configured `PassAtK`/`PassHatK` spec (with the grouped tracker's `results_without_key`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tracejudge.core.records import CaseResult, Score, score_counts
from tracejudge.engine.rendered import METRIC_ERRORS, NOT_APPLICABLE, Cell
from tracejudge.stages.aggregate.group_labels import metadata_key
from tracejudge.stages.aggregate.stats import pass_at_k, pass_hat_k

__all__ = ["GroupedPassTracker", "PassAtKTracker", "new_tracker", "spec_figure", "spec_tracker_key", "tracker_key"]

# The formula of each `estimator` (`PassAtK.estimator`): per case or task, from its n trials and c passes.
ESTIMATES: dict[str, Callable[[int, int, int], float]] = {"pass@k": pass_at_k, "pass^k": pass_hat_k}


@dataclass
class _KSum:
    total: float = 0.0
    cases: int = 0


# A breakdown group `(breakdown, value)`; `("", "")` is the whole run.
_Group = tuple[str, str]
# Per group, per k: the sum of the cases' pass@k and how many cases were summed.
_Sums = dict[_Group, dict[int, _KSum]]
# What `PassAtKTracker.snapshot` returns and `PassAtKTracker.figure` takes first:
# the sums, cases without a scored trial per group, cases with fewer than k trials per (group, k).
_Snapshot = tuple[_Sums, Counter[_Group], Counter[tuple[_Group, int]]]


def tracker_key(metric: str, threshold: float | None, group_by: str | None = None, estimator: str = "pass@k") -> tuple[Any, ...]:
    """The `Aggregator.trackers` key of a tracker: specs that count the same trials the same way share one.

    A per-case pass@k tracker keeps the key it always had, `(metric, threshold)` (the shape checkpoints and
    callers know); the other forms add what tells them apart, `(metric, threshold, group_by, estimator)`.
    """
    if group_by is None and estimator == "pass@k":
        return (metric, threshold)
    return (metric, threshold, group_by, estimator)


def spec_tracker_key(spec: Any) -> tuple[Any, ...]:
    """`tracker_key` of a `PassAtK`/`PassHatK` spec."""
    return tracker_key(spec.metric, spec.threshold, getattr(spec, "group_by", None), getattr(spec, "estimator", "pass@k"))


class _Tracker:
    """What both trackers share: the metric, its ks, how one trial is decided, and the estimator's formula."""

    group_by: str | None = None

    def __init__(self, metric: str, ks: set[int], trial_passed: Callable[[Score | None], bool], threshold: float | None, estimator: str) -> None:
        self.metric = metric
        self.ks = sorted(ks)
        self.trial_passed = trial_passed
        self.threshold = threshold
        self.estimator = estimator
        self.estimate = ESTIMATES[estimator]

    def _trial(self, result: CaseResult, status: str) -> tuple[bool, bool]:
        """`(scored, passed)` of one trial. An errored result (any status but `ok`) whose score did not count is a
        failure, scored: a crashed or timed-out agent is a failed sample, as in Chen et al.'s HumanEval harness, so a
        case whose every trial errored is a case with c = 0, not one left out. A score that counts (`score_counts`: a
        deterministic score of a result the judge failed on or skipped) is that trial's sample, as on an `ok` result. A score not computed because its metric
        raised, failed or timed out (`METRIC_ERRORS`) is a failure, scored, likewise. Unscored, and a failure: an `ok`
        result without the metric's value (not applicable, written before the metric was added), and a metric that
        does not apply to the case whatever the status; a case with only such trials has no scored trial."""
        score = result.scores.get(self.metric)
        if score is None:
            return status != "ok", self.trial_passed(score)
        if score_counts(status, score.value):
            return True, self.trial_passed(score)
        if type(score) is not Cell and score.value is None and type(score.reason) is str and score.reason.startswith(NOT_APPLICABLE):
            return False, self.trial_passed(None)
        if status != "ok":
            return True, self.trial_passed(None)
        if score.value is None:
            # (A `Cell` carries no reason: a rendered result holds no score whose metric raised, and names those that timed out.)
            raised = (self.metric in result.rendered.timed_out if type(score) is Cell
                      else type(score.reason) is str and score.reason.startswith(METRIC_ERRORS))
            return raised, self.trial_passed(score)
        return False, self.trial_passed(None)


class PassAtKTracker(_Tracker):
    """pass@k (or pass^k) of one metric for several k, folding trials that arrive in any order.

    Per case it keeps `[n, c, scored, groups]` only until the case's `trials`
    trials are all in; then the case's estimate for each k is added to the
    run's and its groups' sums and the entry is dropped. `trial_passed(score)`
    decides one trial (the score of an `ok` result, or `None`).
    """

    def __init__(self, metric: str, ks: set[int], trials: int, trial_passed: Callable[[Score | None], bool], *,
                 threshold: float | None = None, estimator: str = "pass@k") -> None:
        super().__init__(metric, ks, trial_passed, threshold, estimator)
        self.trials = trials
        self.pending: dict[str, list[Any]] = {}
        self.sums: _Sums = {}
        self.no_scored: Counter[_Group] = Counter()
        self.too_few: Counter[tuple[_Group, int]] = Counter()

    def fold(self, result: CaseResult, status: str, groups: tuple[tuple[str, str], ...]) -> None:
        entry = self.pending.get(result.case_id)
        if entry is None:
            entry = self.pending[result.case_id] = [0, 0, False, groups]
        entry[0] += 1
        scored, passed = self._trial(result, status)
        if scored:
            entry[2] = True
        if passed:
            entry[1] += 1
        if entry[0] >= self.trials:
            del self.pending[result.case_id]
            self._finish(entry, self.sums, self.no_scored, self.too_few)

    def _finish(self, entry: list[Any], sums: _Sums, no_scored: Counter[_Group], too_few: Counter[tuple[_Group, int]]) -> None:
        n, c, scored, groups = entry
        for g in (("", ""), *groups):
            if not scored:
                no_scored[g] += 1
                continue
            per_k = sums.setdefault(g, {})
            for k in self.ks:
                if n < k:
                    too_few[(g, k)] += 1
                    continue
                s = per_k.setdefault(k, _KSum())
                s.total += self.estimate(n, c, k)
                s.cases += 1

    def snapshot(self) -> _Snapshot:
        """Sums with the still-pending cases (interrupted runs) finished, without changing state."""
        sums = {g: {k: _KSum(s.total, s.cases) for k, s in per.items()} for g, per in self.sums.items()}
        no_scored, too_few = Counter(self.no_scored), Counter(self.too_few)
        for entry in self.pending.values():
            self._finish(entry, sums, no_scored, too_few)
        return sums, no_scored, too_few

    @staticmethod
    def figure(sums: _Sums, no_scored: Counter[_Group], too_few: Counter[tuple[_Group, int]], group: _Group, k: int) -> dict[str, Any]:
        s = sums.get(group, {}).get(k)
        return {
            # (Not rounded: pass@k is a metric's value, the mean of the cases' estimates as multivon's `suite_pass_k`
            # gives it, `0.7142857142857143`, not a rounded `0.714286`.)
            "value": s.total / s.cases if s and s.cases else None,
            "cases": s.cases if s else 0,
            "no_scored_trial": no_scored.get(group, 0),
            "too_few_trials": too_few.get((group, k), 0),
        }


class GroupedPassTracker(_Tracker):
    """pass@k or pass^k of one metric over tasks: the results whose `metadata[group_by]` is equal are one task's trials.

    Per breakdown group (and `("", "")`, the whole run) and task (the value's `metadata_key`: `1` and `"1"`
    are two tasks) it keeps `[n, c, scored]`: trials, passing trials, and whether any trial was scored. A
    task's trials may fall in several breakdown groups (a breakdown by `trial`): each group counts the
    trials it holds. A result whose metadata lacks the key, or holds null there, belongs to no task: it is
    counted per group in `without_key` and left out. Memory: a few integers per (group, task).
    """

    def __init__(self, metric: str, ks: set[int], group_by: str, trial_passed: Callable[[Score | None], bool], *,
                 threshold: float | None = None, estimator: str = "pass@k") -> None:
        super().__init__(metric, ks, trial_passed, threshold, estimator)
        self.group_by = group_by
        self.tasks: dict[_Group, dict[str, list[Any]]] = {}
        self.without_key: Counter[_Group] = Counter()

    def fold(self, result: CaseResult, status: str, groups: tuple[tuple[str, str], ...]) -> None:
        value = result.metadata.get(self.group_by)
        if value is None:
            for g in (("", ""), *groups):
                self.without_key[g] += 1
            return
        task = metadata_key(value)
        scored, passed = self._trial(result, status)
        for g in (("", ""), *groups):
            per_task = self.tasks.get(g)
            if per_task is None:
                per_task = self.tasks[g] = {}
            entry = per_task.get(task)
            if entry is None:
                entry = per_task[task] = [0, 0, False]
            entry[0] += 1
            entry[1] += passed
            entry[2] = entry[2] or scored

    def snapshot(self) -> _Snapshot:
        """The sums of the tasks' estimates, as `PassAtKTracker.snapshot` gives them, computed now from the counts.

        Each sum is exact (`math.fsum`, rounded once), so the figure is the same whatever order the trials
        arrived in: in one process or several, resumed or merged from shards.
        """
        sums: _Sums = {}
        no_scored: Counter[_Group] = Counter()
        too_few: Counter[tuple[_Group, int]] = Counter()
        for g, per_task in self.tasks.items():
            values: dict[int, list[float]] = {k: [] for k in self.ks}
            for n, c, scored in per_task.values():
                if not scored:
                    no_scored[g] += 1
                    continue
                for k in self.ks:
                    if n < k:
                        too_few[(g, k)] += 1
                    else:
                        values[k].append(self.estimate(n, c, k))
            sums[g] = {k: _KSum(math.fsum(v), len(v)) for k, v in values.items() if v}
        return sums, no_scored, too_few


def new_tracker(metric: str, threshold: float | None, passed: Callable[[Score | None], bool], ks: set[int], trials: int,
                group_by: str | None = None, estimator: str = "pass@k") -> PassAtKTracker | GroupedPassTracker:
    """The tracker of `tracker_key(metric, threshold, group_by, estimator)`."""
    if group_by is None:
        return PassAtKTracker(metric, ks, trials, passed, threshold=threshold, estimator=estimator)
    return GroupedPassTracker(metric, ks, group_by, passed, threshold=threshold, estimator=estimator)


def spec_figure(trackers: dict[tuple[Any, ...], Any], snaps: dict[tuple[Any, ...], _Snapshot], spec: Any, group: _Group) -> dict[str, Any]:
    """The figure of a `PassAtK`/`PassHatK` spec for `group` (`("", "")`: the whole run): `PassAtKTracker.figure`,
    and for a grouped spec `results_without_key` (the group's results left out for lacking `metadata[group_by]`)."""
    key = spec_tracker_key(spec)
    fig = PassAtKTracker.figure(*snaps[key], group, spec.k)
    tracker = trackers[key]
    if isinstance(tracker, GroupedPassTracker):
        fig["results_without_key"] = tracker.without_key.get(group, 0)
    return fig


def _passed_on_verdict(score: Score | None) -> bool:
    return score is not None and score.value is not None and bool(score.passed)
