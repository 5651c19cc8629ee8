"""The running figures of one metric in one group of the aggregate (`MetricStats`), folded in batches.

Per metric and group: count, total, the exact sum (for the mean), Welford moments, a 10-bin histogram, verdict counts and a sample
of at most `reservoir_size` values for the bootstrap (the values whose (case, trial) keys hash lowest
under the seed, so it does not depend on the order results arrive in) (`tracejudge.stages.aggregate.stats`).
Scored values wait in `pending` and are folded together (`MetricStats.settle`), with the same
arithmetic, in the same order, as folding them one by one.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from tracejudge.core.records import Score, Status, score_counts
from tracejudge.engine.rendered import METRIC_ERRORS, NOT_APPLICABLE, Cell
from tracejudge.stages.aggregate.stats import KeyedSample, Moments, bootstrap_mean_ci, rng_for

__all__ = ["HIST_BINS", "MetricStats", "bin_of"]

HIST_BINS = 10
_EDGE = 1e-9  # (in tenths) a value up to 1e-10 below a bin's lower edge counts in that bin: 0.19999999999999998 as 0.2


def bin_of(value: float) -> int:
    """The histogram bin (0 to `HIST_BINS - 1`, 10 equal bins over [0, 1]) of a score value.

    Values are kept as computed, so a ratio whose exact value is a bin's edge may come out a few ulps under it; a value
    up to 1e-10 under an edge is counted in the bin above it (no ratio of small counts falls that close without being
    the edge). Out-of-range values go to the end bins.
    """
    b = int(value * HIST_BINS + _EDGE)
    return HIST_BINS - 1 if b >= HIST_BINS else (0 if b < 0 else b)
_first = itemgetter(0)
_OK = Status.ok.value  # read once: an enum member's `.value` is a descriptor call, per score per result


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6) + 0.0  # (+ 0.0: a bound a rounding error put below zero prints 0, not -0)


# The exact sum of values is kept as an integer count of 2**-1074 (the least subnormal, a unit every finite float is a
# whole number of): sums of such integers are exact, so the mean does not depend on the order results were folded in,
# and is the true mean correctly rounded.
_UNIT = 1074


def _fixed(v: float) -> int | None:
    """`v` in units of 2**-1074 (exact), or None for a value that is not finite."""
    try:
        num, den = v.as_integer_ratio()
    except (OverflowError, ValueError):
        return None
    return num << (_UNIT + 1 - den.bit_length())


def exact_mean(exact: int | None, n: int) -> float | None:
    """The mean of `n` values whose exact sum is `exact` (units of 2**-1074), correctly rounded; None for none."""
    if exact is None or n <= 0:
        return None
    return float(Fraction(exact, n << _UNIT))


def _pair(score: Any) -> tuple[Any, Any]:
    """`(value, passed)` of a score: a `Cell` (a result rendered where it was scored) already is that pair."""
    return score if type(score) is Cell else (score.value, score.passed)


@dataclass(slots=True)
class _Settled:
    """One `MetricStats.settle`: the running figures it started from, the values it folded, what they gave."""

    start: tuple[int, float, float, float]
    values: list[tuple[Any, Any]]
    figures: tuple[tuple[int, float, float, float], list[int], int, int, int | None]


def _fold_values(pend: list[tuple[Any, Any]], n: int, mean: float, m2: float, total: float
                 ) -> tuple[tuple[int, float, float, float], list[int], int, int, int | None]:
    """Fold `(value, passed)` pairs into count, mean and M2 (Welford) and total, in order.

    Returns `((n, mean, m2, total), histogram counts to add, verdicts, passed, the values' exact sum to add (None when
    one is not finite))`.
    """
    hist = [0] * HIST_BINS
    verdicts = passed = 0
    exact: int | None = 0
    # Counts do not depend on order: the histogram, verdicts and exact sum are taken per distinct pair (counted in C), so
    # the loop over every value does only the sums that do. (Pairs that compare equal fall in the same bin and verdict,
    # and are the same number: 0.0 and -0.0 are both 0.)
    for (v, p), times in Counter(pend).items():
        fv = float(v)
        hist[bin_of(fv)] += times
        if exact is not None:
            exact = None if (unit := _fixed(fv)) is None else exact + unit * times
        if p is not None:
            verdicts += times
            passed += bool(p) * times
    # The count as a float: float / float is a cheaper operation than float / int, and the same division (a count
    # is a whole number far below 2**53, exact as a float).
    count = float(n)
    for v in map(float, map(_first, pend)):
        total += v
        count += 1.0
        d = v - mean
        mean += d / count
        m2 += d * (v - mean)
    return (n + len(pend), mean, m2, total), hist, verdicts, passed, exact


@dataclass(slots=True)
class MetricStats:
    """Running figures of one metric (in one group).

    `rng_seed` names the bootstrap's random stream; the sample is chosen by
    the key hashes `Aggregator.fold` computes. `own`: a metric of the run's
    own list (the config's `metrics`), which every result scored with it
    carries: a result without it was written before the metric was in the
    config (`--force` keeps such results) and counts as not computed
    (`written_before`), not as a case-level metric's "not applicable".
    `raised`: of `not_computed`, the results whose metric raised or timed out (its reason starts with one of
    `rendered.METRIC_ERRORS`), not a value the case lacks: the gate's `max_metric_error_share` bounds them.
    """

    reservoir_size: int = 1000
    rng_seed: str = "0"
    own: bool = False
    scored: int = 0
    total: float = 0.0
    exact: int | None = 0  # the scored values' exact sum in units of 2**-1074 (`_fixed`); None once one was not finite
    passed: int = 0
    with_verdict: int = 0
    not_computed: int = 0
    not_applicable: int = 0
    written_before: int = 0  # of `not_computed`: results without the score of an `own` metric
    raised: int = 0  # of `not_computed`: results whose metric raised or timed out (see the class docstring)
    excluded: Counter[str] = field(default_factory=Counter)
    moments: Moments = field(default_factory=Moments)
    histogram: list[int] = field(default_factory=lambda: [0] * HIST_BINS)
    sample: KeyedSample | None = None

    # Scored values not yet in the moments, histogram and sample (see `settle`): `(value, passed)` pairs
    # (a score's `Cell`, or the two fields of a `Score`), in the order they were folded, and beside them
    # the key hash of each one's result.
    pending: list[tuple[Any, Any]] = field(default_factory=list, repr=False, compare=False)
    pending_keys: list[int] = field(default_factory=list, repr=False, compare=False)

    def fold(self, status: str, score: Score | None, key: int = 0) -> None:
        """Count one result's score for this metric (`score` may be absent); `key`: the result's key hash."""
        if status != _OK and not (score is not None and score_counts(status, score.value)):
            self.excluded[status] += 1
            return
        if score is None:
            self.count_absent(1)
            return
        if score.value is None:
            if type(score) is not Cell and score.reason.startswith(NOT_APPLICABLE):  # (`render` leaves such a case to the general path)
                self.not_applicable += 1
                return
            self.not_computed += 1
            # A `Cell` carries no reason: a rendered result never holds a score whose metric raised (`render` leaves
            # such a case to the general path) and names those that timed out (`Rendered.timed_out`, `Aggregator`).
            if type(score) is not Cell and score.reason.startswith(METRIC_ERRORS):
                self.raised += 1
            return
        self.pending.append(_pair(score))
        self.pending_keys.append(key)

    def count_absent(self, n: int) -> None:
        """Count `n` ok results that carry no score for this metric at all."""
        if self.own:
            # Every result scored with a metric of the run's own list carries it: these predate it, and a gate
            # must not read them as a case-level metric that does not apply.
            self.not_computed += n
            self.written_before += n
        else:
            # A case-level metric other cases lack: "not computed" would make the figure
            # depend on the order results arrive in.
            self.not_applicable += n

    def settle(self, like: _Settled | None = None) -> _Settled | None:
        """Fold the pending scored values into count, total, moments, histogram, sample and verdicts.

        One plain loop over the values with the running figures in local
        variables: folding them one call at a time cost most of a deterministic
        run's aggregate time in attribute reads and writes. Values are taken
        in the order they were folded, with the same arithmetic, so every
        figure is what folding them one by one gives.

        `like`: what settling another metric stats gave (its return value). When
        that one started from the same count, mean, M2 and total and folded the
        same values (a breakdown group every result falls in has the whole
        run's), its figures are taken instead of folding the values again: the
        same arithmetic on the same inputs gives the same floats. The
        sample is always offered the values. Returns what this call
        settled, or None when nothing was pending.
        """
        pend = self.pending
        if not pend:
            return None
        sample = self.sample
        if sample is None:
            sample = self.sample = KeyedSample(self.reservoir_size)
        m = self.moments
        start = (m.n, m.mean, m.m2, self.total)
        if like is not None and like.start == start and like.values == pend:
            got = like.figures
        else:
            got = _fold_values(pend, *start)
        (n, mean, m2, total), hist, verdicts, passed, exact = got
        for i, c in enumerate(hist):
            self.histogram[i] += c
        sample.add_many(self.pending_keys, pend)
        m.n, m.mean, m.m2 = n, mean, m2
        self.total = total
        self.exact = None if exact is None or self.exact is None else self.exact + exact
        self.scored += len(pend)
        self.with_verdict += verdicts
        self.passed += passed
        self.pending = []
        self.pending_keys = []
        return _Settled(start, pend, got)

    def as_dict(self, results: int, resamples: int = 1000) -> dict[str, Any]:
        """The metric's summary block.

        Keys: `results` (denominator of the whole run or group), `scored`,
        `not_computed`, `written_before` (only when some are: the not computed results that were written
        before a metric of the run's own list was in the config), `raised` (only when some are: the not computed
        results whose metric raised or timed out), `not_applicable` (results without a case-level metric, or whose score
        says the metric does not apply: `rendered.NOT_APPLICABLE`), `excluded` (by status), `error_share`
        ((results − not_applicable − scored) / (results − not_applicable)), `mean`, `std` (sample), `ci95` ([low, high] or
        null below two scored values), `passed`, `with_verdict`, `pass_rate`
        (passed / with_verdict), `histogram` (10 equal bins over [0, 1]).
        """
        self.settle()
        # The mean exact (what `sum(values) / len(values)` gives with exact sums: pydantic-evals' and deepeval's averages, to
        # their last digit wherever their float sum is exact), whatever order the values came in; Welford's for a value
        # that is not finite.
        mean = (exact_mean(self.exact, self.scored) if self.exact is not None else self.moments.mean) if self.scored else None
        ci = None
        if self.sample is not None and self.scored >= 2:
            # The kept values as the heap holds them: the bootstrap sorts them by value first, so putting them in
            # key-hash order (`KeyedSample.values`, a sort of the pairs) would cost more than the rest of the interval.
            got = bootstrap_mean_ci(
                # Centred on the exact mean the summary gives (Welford's running mean differs in its last bits with the
                # order results came in, and put a bound at -5.6e-17: "-0.000").
                [v for _, v in self.sample.heap], n_total=self.scored, mean_total=mean,
                rng=rng_for(self.rng_seed, "bootstrap"), resamples=resamples,
            )
            ci = None if got is None else [_r(got[0]), _r(got[1])]
        pass_rate = self.passed / self.with_verdict if self.with_verdict else None
        return {
            "results": results,
            "scored": self.scored,
            "not_computed": self.not_computed,
            **({"written_before": self.written_before} if self.written_before else {}),
            **({"raised": self.raised} if self.raised else {}),
            "not_applicable": self.not_applicable,
            "excluded": dict(sorted(self.excluded.items())),
            "error_share": (applicable - self.scored) / applicable if (applicable := results - self.not_applicable) else None,
            "mean": mean,
            "std": _r(self.moments.std),
            "ci95": ci,
            "passed": self.passed,
            "with_verdict": self.with_verdict,
            "pass_rate": pass_rate,
            "histogram": list(self.histogram),
        }
