"""The running figures of one metric in one group of the aggregate (`MetricStats`), folded in batches.

Per metric and group: count, total, Welford moments, a 10-bin histogram, verdict counts and a seeded
reservoir of at most `reservoir_size` values for the bootstrap (`tracejudge.stages.aggregate.stats`).
Scored values wait in `pending` and are folded together (`MetricStats.settle`), with the same
arithmetic, in the same order, as folding them one by one.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tracejudge.core.records import Score, Status, score_counts
from tracejudge.engine.rendered import Cell
from tracejudge.stages.aggregate.stats import Moments, Reservoir, bootstrap_mean_ci, rng_for

__all__ = ["HIST_BINS", "MetricStats"]

HIST_BINS = 10
_OK = Status.ok.value  # read once: an enum member's `.value` is a descriptor call, per score per result


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _pair(score: Any) -> tuple[Any, Any]:
    """`(value, passed)` of a score: a `Cell` (a result rendered where it was scored) already is that pair."""
    return score if type(score) is Cell else (score.value, score.passed)


@dataclass(slots=True)
class _Settled:
    """One `MetricStats.settle`: the running figures it started from, the values it folded, what they gave."""

    start: tuple[int, float, float, float]
    values: list[tuple[Any, Any]]
    figures: tuple[tuple[int, float, float, float], list[int], int, int]


def _fold_values(pend: list[tuple[Any, Any]], n: int, mean: float, m2: float, total: float) -> tuple[tuple[int, float, float, float], list[int], int, int]:
    """Fold `(value, passed)` pairs into count, mean and M2 (Welford) and total, in order.

    Returns `((n, mean, m2, total), histogram counts to add, verdicts, passed)`.
    """
    hist = [0] * HIST_BINS
    top = HIST_BINS - 1
    verdicts = passed = 0
    for v, p in pend:
        v = float(v)
        total += v
        n += 1
        d = v - mean
        mean += d / n
        m2 += d * (v - mean)
        b = int(v * HIST_BINS)
        hist[top if b > top else (0 if b < 0 else b)] += 1
        if p is not None:
            verdicts += 1
            passed += bool(p)
    return (n, mean, m2, total), hist, verdicts, passed


def _replacements(res: Reservoir, pend: list[tuple[Any, Any]], start: int, end: int) -> None:
    """Make a full reservoir's replacements among the stream positions `start + 1 .. end` (values `pend`).

    `Reservoir.replace` and `Reservoir.plan` inlined, with the same draws in the same order and the
    same arithmetic, so the sample and the generator's state are what one call per replacement leaves.
    """
    rng = res.rng.random
    values, size, w, at = res.values, res.size, res.w, res.next_at
    root = 1.0 / size
    cap = 1 << 62
    while at <= end:
        values[int(rng() * size)] = float(pend[at - start - 1][0])
        w *= (1.0 - rng()) ** root
        skip = 0 if w >= 1.0 else (math.inf if w <= 0.0 else math.floor(math.log(1.0 - rng()) / math.log1p(-w)))
        at = at + 1 + int(min(skip, cap))
    res.w, res.next_at = w, at


@dataclass(slots=True)
class MetricStats:
    """Running figures of one metric (in one group).

    `rng_seed` names the reservoir's and bootstrap's random streams.
    """

    reservoir_size: int = 1000
    rng_seed: str = "0"
    scored: int = 0
    total: float = 0.0
    passed: int = 0
    with_verdict: int = 0
    not_computed: int = 0
    not_applicable: int = 0
    excluded: Counter[str] = field(default_factory=Counter)
    moments: Moments = field(default_factory=Moments)
    histogram: list[int] = field(default_factory=lambda: [0] * HIST_BINS)
    reservoir: Reservoir | None = None

    # Scored values not yet in the moments, histogram and reservoir (see `settle`): `(value, passed)` pairs
    # (a score's `Cell`, or the two fields of a `Score`), in the order they were folded.
    pending: list[tuple[Any, Any]] = field(default_factory=list, repr=False, compare=False)

    def fold(self, status: str, score: Score | None) -> None:
        """Count one result's score for this metric (`score` may be absent)."""
        if status != _OK and not (score is not None and score_counts(status, score.value)):
            self.excluded[status] += 1
            return
        if score is None:
            # A case-level metric other cases lack: "not computed" would make the figure
            # depend on the order results arrive in.
            self.not_applicable += 1
            return
        if score.value is None:
            self.not_computed += 1
            return
        self.pending.append(_pair(score))

    def settle(self, like: _Settled | None = None) -> _Settled | None:
        """Fold the pending scored values into count, total, moments, histogram, reservoir and verdicts.

        One plain loop over the values with the running figures in local
        variables: folding them one call at a time cost most of a deterministic
        run's aggregate time in attribute reads and writes. Values are taken
        in the order they were folded, with the same arithmetic, so every
        figure (and the reservoir's random stream) is what folding them one by
        one gives.

        `like`: what settling another metric stats gave (its return value). When
        that one started from the same count, mean, M2 and total and folded the
        same values (a breakdown group every result falls in has the whole
        run's), its figures are taken instead of folding the values again: the
        same arithmetic on the same inputs gives the same floats. The
        reservoir, seeded per group, is always drawn. Returns what this call
        settled, or None when nothing was pending.
        """
        pend = self.pending
        if not pend:
            return None
        res = self.reservoir
        if res is None:
            res = self.reservoir = Reservoir(self.reservoir_size, rng_for(self.rng_seed, "reservoir"))
        m = self.moments
        start = (m.n, m.mean, m.m2, self.total)
        if like is not None and like.start == start and like.values == pend:
            got = like.figures
        else:
            got = _fold_values(pend, *start)
        (n, mean, m2, total), hist, verdicts, passed = got
        for i, c in enumerate(hist):
            self.histogram[i] += c
        # The reservoir: filled by its own `add`; once full, only the stream positions it drew
        # (`next_at`) are visited, as `add` would reach them one value at a time.
        first = res.seen
        i = 0
        while i < len(pend) and len(res.values) < res.size:
            res.add(float(pend[i][0]))
            i += 1
        end = first + len(pend)
        if i < len(pend) and res.size > 0:  # (a reservoir of size 0 keeps nothing and draws nothing)
            _replacements(res, pend, first, end)
        res.seen = end
        m.n, m.mean, m.m2 = n, mean, m2
        self.total = total
        self.scored += len(pend)
        self.with_verdict += verdicts
        self.passed += passed
        self.pending = []
        return _Settled(start, pend, got)

    def as_dict(self, results: int, resamples: int = 1000) -> dict[str, Any]:
        """The metric's summary block.

        Keys: `results` (denominator of the whole run or group), `scored`,
        `not_computed`, `not_applicable`, `excluded` (by status), `error_share`
        ((results − not_applicable − scored) / (results − not_applicable)), `mean`, `std` (sample), `ci95` ([low, high] or
        null below two scored values), `passed`, `with_verdict`, `pass_rate`
        (passed / with_verdict), `histogram` (10 equal bins over [0, 1]).
        """
        self.settle()
        mean = self.moments.mean if self.scored else None
        ci = None
        if self.reservoir is not None and self.scored >= 2:
            got = bootstrap_mean_ci(
                self.reservoir.values, n_total=self.scored, mean_total=self.moments.mean,
                rng=rng_for(self.rng_seed, "bootstrap"), resamples=resamples,
            )
            ci = None if got is None else [_r(got[0]), _r(got[1])]
        pass_rate = self.passed / self.with_verdict if self.with_verdict else None
        return {
            "results": results,
            "scored": self.scored,
            "not_computed": self.not_computed,
            "not_applicable": self.not_applicable,
            "excluded": dict(sorted(self.excluded.items())),
            "error_share": _r((applicable - self.scored) / applicable) if (applicable := results - self.not_applicable) else None,
            "mean": _r(mean),
            "std": _r(self.moments.std),
            "ci95": ci,
            "passed": self.passed,
            "with_verdict": self.with_verdict,
            "pass_rate": _r(pass_rate),
            "histogram": list(self.histogram),
        }
