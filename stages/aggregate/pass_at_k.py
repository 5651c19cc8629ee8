"""pass@k of one metric over trials that arrive in any order (`PassAtKTracker`), per breakdown group."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tracejudge.core.records import CaseResult, Score, score_counts
from tracejudge.stages.aggregate.stats import pass_at_k

__all__ = ["PassAtKTracker"]


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


class PassAtKTracker:
    """pass@k of one metric for several k, folding trials that arrive in any order.

    Per case it keeps `[n, c, scored, groups]` only until the case's `trials`
    trials are all in; then the case's pass@k for each k is added to the
    run's and its groups' sums and the entry is dropped. `trial_passed(score)`
    decides one trial (the score of an `ok` result, or `None`).
    """

    def __init__(self, metric: str, ks: set[int], trials: int, trial_passed: Callable[[Score | None], bool]) -> None:
        self.metric = metric
        self.ks = sorted(ks)
        self.trials = trials
        self.trial_passed = trial_passed
        self.pending: dict[str, list[Any]] = {}
        self.sums: _Sums = {}
        self.no_scored: Counter[_Group] = Counter()
        self.too_few: Counter[tuple[_Group, int]] = Counter()

    def fold(self, result: CaseResult, status: str, groups: tuple[tuple[str, str], ...]) -> None:
        entry = self.pending.get(result.case_id)
        if entry is None:
            entry = self.pending[result.case_id] = [0, 0, False, groups]
        entry[0] += 1
        score = result.scores.get(self.metric)
        if score is not None and not score_counts(status, score.value):
            score = None
        if score is not None and score.value is not None:
            entry[2] = True
        if self.trial_passed(score):
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
                s.total += pass_at_k(n, c, k)
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


def _passed_on_verdict(score: Score | None) -> bool:
    return score is not None and score.value is not None and bool(score.passed)
