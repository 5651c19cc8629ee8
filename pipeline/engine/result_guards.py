"""The last guard before a result line is written (`RunJournal.record`): every score a `Score`, and a result of status
ok holding a score of each of the run's metrics. What slipped past the score stage's own guards is that metric's
failure, counted as raised (its reason starts `metric failed:`), never an internal error or a silent gap."""

from __future__ import annotations

from collections.abc import Sequence, Set

from tracejudge.core.records import CaseResult, Score, Status

__all__ = ["guard_scores"]

_SCORE = frozenset({Score})


def guard_scores(result: CaseResult, expected: Set[str], order: Sequence[str]) -> None:
    """Make `result.scores` safe to write, in place: a value that is not a `Score` (None: a metric ended without one),
    and, for a result of status ok, each key of `expected` (the run's per-result metric keys) it lacks, become that
    metric's failure, added in the run's metric `order` (which holds `expected`). Costs a type set and a key comparison when nothing is wrong."""
    scores = result.scores
    if scores and not {*map(type, scores.values())} <= _SCORE:
        # Written as it was, it ended the run, and each resume, with an internal error.
        scores = result.scores = {k: s if isinstance(s, Score) else _failed(k, f"({type(s).__name__})") for k, s in scores.items()}
    if result.status is Status.ok and not scores.keys() >= expected:
        # A case whose scores were lost on the way (a metric's cancellation taken for the run's) was written ok with
        # none, counted as unscored, and a resume took it as finished: the loss went unseen.
        result.scores = {**scores, **{k: _failed(k, "(none was recorded for the case)") for k in order if k in expected and k not in scores}}


def _failed(key: str, why: str) -> Score:
    return Score(value=None, passed=None, reason=f"metric failed: metric {key} gave no score {why}")
