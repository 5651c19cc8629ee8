"""The intervals of label agreement (`tracejudge.stages.judge.agreement.metric_agreement`), and when they say little.

The unit is the labelled case, not the verdict: a label without `trial` answers every trial of its case, and the
verdicts of one case's trials are not independent draws (the same trace, the same label), so counting each as one
observation made the intervals too narrow.

- accuracy's 95% CI: the Wilson score interval (E. B. Wilson, "Probable inference, the law of succession, and
  statistical inference", JASA 22 (1927) 209–212; recommended over the Wald and bootstrap intervals at small n by
  Agresti & Coull, The American Statistician 52 (1998) 119–126, and Brown, Cai & DasGupta, Statistical Science 16
  (2001) 101–133); it is statsmodels' `proportion_confint(k, n, method="wilson")`, computed here so a run needs no
  statsmodels. With one verdict a case it is over the verdicts; with several, over the effective sample size
  `p(1 − p) / v` (Kish's n / design effect), `v` the between-case (ratio-estimator) variance of the agreement share, as
  Korn & Graubard (Survey Methodology 24 (1998) 193–201) take a clustered proportion's interval — kept between the
  number of cases and of verdicts, and the number of cases when every verdict agrees (or none does: `v` is then 0 and
  says nothing of how alike a case's trials are).
- κ's 95% CI (a graded metric's weighted κ's, and Spearman's ρ's, alike): BCa, the bias-corrected and accelerated
  bootstrap interval (B. Efron, "Better bootstrap confidence intervals", JASA 82 (1987) 171–185; Efron & Tibshirani,
  An Introduction to the Bootstrap (1993) §14.3, the acceleration from the jackknife, eq. 14.15), over cases (the
  cluster bootstrap, Davison & Hinkley, Bootstrap Methods and their Application (1997) §3.8; Field & Welsh, JRSS B 69
  (2007) 369–390): each resample draws the labelled cases with replacement and takes every verdict of each, and the
  jackknife leaves out one case, all its verdicts (`case_resamples`, `bca`). It is `scipy.stats.bootstrap(data,
  method='BCa')` with the cases as the one sample, given the same generator (the same resamples): tests compare them.
  Why not the percentile interval it replaced: κ's sampling distribution is skewed and bounded at 1, and over few cases
  the percentile interval misses its 95% — `benchmarks/label_ci_coverage.py`, balanced labels, κ 0.6: percentile 85%,
  92%, 90%, 94% of samples holding the true κ at 10, 20, 30, 50 cases, BCa on the same resamples 85%, 95%, 92%, 96.5%
  (200 samples a row, ±1.5 points; with 20% of labels fail, percentile 90%, 90.5% at 20 and 30 cases, BCa 94.5%,
  96.5%). Where BCa is undefined (scipy's is then NaN) `bca` says what is done: every resample equal gives that value
  at both ends (200 of 200 agreeing: [1, 1]); a jackknife without spread gives no acceleration (`a = 0`); a resample
  with κ undefined (one class only: 0/0) is dropped and counted (`kappa_ci_dropped`), the interval read off the others
  — the distribution of κ where it is defined, as the percentile interval was; a case whose leaving out leaves κ
  undefined is left out of the acceleration; resamples all on one side of the figure give no interval
  (`kappa_ci_note`).
- the intervals are *not informative* (`kappa_ci_informative: false`, `spearman_ci_informative: false`, with
  `_ci_why`; one rule, `uninformative`) when fewer than `MIN_CASES` cases are labelled — a bootstrap resamples the few
  cases there are and no interval holds its 95% (at 10 cases BCa's neither: 85% with balanced labels, 78% with 20% of
  them fail) — or when fewer than `MIN_OTHER` cases are labelled other than the most common label (one case labelled
  fail among 50: κ turns on that case, and 79% of intervals hold the true κ; with 2, 97% there but 91% among 100
  cases; with 3, 99%: the benchmark's rows by fail labels), or none is: every label of one class (one grade) makes κ
  0 whatever the verdicts (or 0/0), and says nothing of the judge. The rule is about the evidence, not the interval's width: 2 of 2 agreeing
  gives [1, 1] and is not informative (2 cases), while 200 of 200 agreeing with labels of both classes gives [1, 1]
  too, every resample agreeing, and is. The gate's `min_kappa` fails on a κ that is not informative: 2 labels cannot
  show a judge is good.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["MIN_CASES", "MIN_OTHER", "Z95", "accuracy", "accuracy_ci", "bca", "case_bootstrap", "case_resamples", "effective_n", "kappa_of", "rng",
           "spearman", "uninformative", "wilson"]

MIN_CASES = 20  # labelled cases below which an interval is not informative (see the module doc)
MIN_OTHER = 3  # cases labelled other than the most common label below which an interval is not informative
Z95 = 1.959963984540054  # the 0.975 quantile of the standard normal (scipy.stats.norm.ppf(0.975))


def rng(seed: int, metric: str) -> Any:
    """The bootstrap's generator for `metric`: the same inputs give the same interval."""
    import numpy as np

    return np.random.default_rng(int(hashlib.sha256(f"{seed}:{metric}".encode()).hexdigest()[:12], 16))


def wilson(share: float, n: float, z: float = Z95) -> list[float] | None:
    """The Wilson score interval of a proportion `share` observed over `n` (Wilson 1927): the `p` with
    |share − p| <= z·sqrt(p(1 − p)/n); `None` for n = 0."""
    if n <= 0:
        return None
    denom = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return [round(max(0.0, centre - half), 6), round(min(1.0, centre + half), 6)]


def effective_n(agree: list[int], counts: list[int]) -> float:
    """The effective sample size of an agreement share over cases with `agree[i]` of `counts[i]` verdicts agreeing (see
    the module doc): the verdicts when each case has one, else p(1 − p) / v within [cases, verdicts]."""
    k, n = len(counts), sum(counts)
    if all(c == 1 for c in counts):
        return float(n)
    p = sum(agree) / n
    if p in (0.0, 1.0) or k < 2:
        return float(k)
    v = k / (k - 1) * sum((a - p * c) ** 2 for a, c in zip(agree, counts, strict=True)) / (n * n)
    if v <= 0:
        return float(n)
    return float(min(n, max(k, p * (1 - p) / v)))


def case_resamples(stat: Callable[[Any, Any], float | None], y: Any, v: Any, groups: list[list[int]], resamples: int,
                   gen: Any) -> tuple[float | None, Any, int, Any]:
    """`(estimate, replicates, dropped, jackknife)` of `stat(y, v)` over the cases (`groups`: each case's indices into `y`
    and `v`, in case order): the estimate on every case; `resamples` case resamples drawn with `gen` (the cases with
    replacement, every verdict of a drawn case taken, as `scipy.stats.bootstrap` draws them), the undefined ones (`None`,
    NaN) dropped and counted; and the leave-one-case-out values, `None` where undefined. A NaN estimate is `None`."""
    import numpy as np

    def value(idx: Any) -> float | None:
        x = stat(y[idx], v[idx])
        return None if x is None or not np.isfinite(x) else float(x)

    order = np.fromiter((i for g in groups for i in g), dtype=int)
    single = order if all(len(g) == 1 for g in groups) else None
    got: list[float] = []
    for draw in gen.integers(0, len(groups), size=(resamples, len(groups))):
        x = value(single[draw] if single is not None else np.fromiter((i for g in draw for i in groups[g]), dtype=int))
        if x is not None:
            got.append(x)
    fast = getattr(stat, "jackknife", None)  # (κ's and ρ's: the same values without n calls over n cases, `kappa_of`, `spearman`)
    if fast is not None:
        jack = [None if x is None or not np.isfinite(x) else float(x) for x in fast(y, v, groups)]
    else:
        ends = np.cumsum([0] + [len(g) for g in groups])
        jack = [value(np.concatenate((order[:ends[i]], order[ends[i + 1]:]))) for i in range(len(groups))]
    return value(order), np.array(got, dtype=float), resamples - len(got), jack


def bca(estimate: float, replicates: Any, jackknife: list[float | None], level: float = 0.95) -> tuple[list[float] | None, str | None]:
    """`(interval, why none)`: the bias-corrected and accelerated (BCa) bootstrap interval of `estimate` (B. Efron,
    "Better bootstrap confidence intervals", JASA 82 (1987) 171–185; Efron & Tibshirani, An Introduction to the
    Bootstrap (1993) §14.3, eqs. 14.9–14.15): with `z0 = Φ⁻¹(share of replicates below the estimate, ties counting
    half)` and the acceleration `a = Σd³ / (6 (Σd²)^{3/2})`, `d` the jackknife values' mean minus each, the ends are
    the replicates' (linear) quantiles at `Φ(z0 + (z0 + z) / (1 − a (z0 + z)))` for `z = Φ⁻¹(α/2)` and `Φ⁻¹(1 − α/2)`.
    It is `scipy.stats.bootstrap(method='BCa')` given the same replicates and jackknife values (tests compare them), but
    where scipy's is NaN or folds over:

    - every replicate equal: the interval is that value at both ends (scipy: NaN), as a percentile interval would be;
    - jackknife values all equal (no skew to measure), or fewer than two defined: `a = 0`, the bias-corrected interval
      (scipy: NaN); undefined jackknife values (`None`: a case whose removal leaves κ 0/0) are left out of `a`;
    - `1 − a (z0 + z) <= 0` (|a| is under 1/6, so only where |z0 + z| > 6: tens of thousands of resamples with the
      estimate at their edge): that end's level is taken at its limit, 1 (or 0 for a negative `a`), the largest
      (smallest) replicate — scipy's formula would fold that end back past the other;
    - every replicate above the estimate, or every one below (`z0` infinite): no interval — the resamples do not
      surround the figure, and BCa's correction is unbounded (scipy: an interval of width 0 beside the estimate, or NaN).
    """
    import numpy as np
    from scipy.special import ndtr, ndtri

    reps = np.asarray(replicates, dtype=float)
    if reps.size == 0:
        return None, None
    if reps.min() == reps.max():
        return [float(reps[0]), float(reps[0])], None
    share = (np.count_nonzero(reps < estimate) + np.count_nonzero(reps <= estimate)) / (2 * reps.size)
    if share in (0.0, 1.0):
        side = "above" if share == 0.0 else "below"
        return None, f"every resample's figure is {side} the sample's: no BCa interval (the bias correction is unbounded)"
    z0 = float(ndtri(share))
    jack = np.array([x for x in jackknife if x is not None], dtype=float)
    d = jack.mean() - jack if jack.size > 1 else np.zeros(1)
    spread = float((d ** 2).sum())
    a = float((d ** 3).sum()) / (6 * spread ** 1.5) if spread > 0 else 0.0
    levels = []
    for z in (float(ndtri((1 - level) / 2)), float(ndtri((1 + level) / 2))):
        num = z0 + z
        room = 1 - a * num
        levels.append(float(ndtr(z0 + num / room)) if room > 0 else (1.0 if a > 0 else 0.0))
    lo, hi = np.quantile(reps, levels)
    return [float(lo), float(hi)], None


def case_bootstrap(stat: Callable[[Any, Any], float | None], y: Any, v: Any, groups: list[list[int]], resamples: int,
                   gen: Any) -> tuple[list[float] | None, int, str | None]:
    """`(95% BCa interval, resamples dropped, why no interval)` of `stat(y, v)` over resamples of the cases
    (`case_resamples`, `bca`; see the module doc), rounded to 6 places; no interval (`None`) when the figure is
    undefined on the whole sample or on every resample, or as `bca` says."""
    estimate, reps, dropped, jack = case_resamples(stat, y, v, groups, resamples, gen)
    if estimate is None or not len(reps):
        return None, dropped, None
    ci, why = bca(estimate, reps, jack)
    return (None if ci is None else [round(ci[0], 6), round(ci[1], 6)]), dropped, why


def uninformative(y: Any, groups: list[list[int]], figure: str = "kappa") -> str | None:
    """Why an interval over the labelled cases (`groups`: each case's indices into its labels `y`, pass/fail or grades)
    does not hold its 95% — fewer than `MIN_CASES` cases, or fewer than `MIN_OTHER` labelled other than the most common
    label, or none (see the module doc) — or `None` when it is informative. The one rule for κ's interval (the gate's
    `min_kappa` fails on it) and ρ's (`figure` "spearman": the words for labels of one class differ). Not the
    interval's width: a judge agreeing with every one of many labels of both classes has the interval [1, 1], and that
    is evidence."""
    from collections import Counter

    cases = len(groups)
    if cases < MIN_CASES:
        return (f"only {cases} labelled case{'s' if cases != 1 else ''} (fewer than {MIN_CASES}): a bootstrap interval over "
                "so few cases holds the true figure well under 95% of the time; label more cases")
    kinds = [set(y[g].tolist()) for g in groups]
    top = Counter(c for k in kinds for c in k).most_common(1)[0][0]
    other = sum(1 for k in kinds if k - {top})
    yes_no = isinstance(top, bool)
    shown = ("pass" if top else "fail") if yes_no else top
    wanted = f"cases that should {'fail' if top else 'pass'}" if yes_no else "cases of other grades"
    if not other:
        says = "kappa is 0 whatever the verdicts (or undefined)" if figure == "kappa" else f"{figure} is undefined"
        return f"every label is {shown}: {says}, it says nothing of the judge; add labels for {wanted}"
    if other < MIN_OTHER:
        which = f"labelled {'fail' if top else 'pass'}" if yes_no else f"labelled other than {shown}"
        return (f"only {other} case{'s' if other != 1 else ''} {which} (fewer than {MIN_OTHER}): the figure turns on so few, "
                f"and its interval holds the true figure well under 95% of the time; add labels for {wanted}")
    return None


def kappa_of(weights: str | None, labels: list[Any]) -> Callable[[Any, Any], float | None]:
    """Cohen's κ (`sklearn.metrics.cohen_kappa_score`), quadratic-weighted with `weights`; `labels` is the metric's whole
    scale (sorted), so a grade's weight is its distance on the scale, not its rank among the grades present.

    The function returned has `resampled`: the same κ for the bootstrap's resamples, computed from the resample's
    confusion counts with scikit-learn's own arithmetic (float64 counts, expected = outer(column sums, row sums) / n,
    1 − Σ w·observed / Σ w·expected), NaN where scikit-learn's is undefined: a thousand calls of scikit-learn's
    validated function took seconds a metric. Every value must equal scikit-learn's (tests compare them)."""
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    scale = np.asarray(labels)
    n = len(scale)
    if weights is None:
        w = np.ones((n, n))
        np.fill_diagonal(w, 0)
    else:
        w = np.zeros((n, n)) + np.arange(n)
        w = (w - w.T) ** 2

    def k(y: Any, v: Any) -> float | None:
        if len(set(y.tolist()) | set(v.tolist())) < 2:
            return None  # one class only: κ is 0/0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(cohen_kappa_score(y, v, weights=weights, labels=labels))

    def counts(y: Any, v: Any) -> Any:
        return np.bincount(np.searchsorted(scale, y) * n + np.searchsorted(scale, v), minlength=n * n).reshape(n, n).astype(np.float64)

    def of_counts(confusion: Any) -> float | None:
        sum0, sum1 = confusion.sum(axis=0), confusion.sum(axis=1)
        if np.count_nonzero(sum0 + sum1) < 2:
            return None
        expected = np.outer(sum0, sum1) / sum0.sum()
        denominator = (w * expected).sum()
        return float("nan") if denominator == 0 else float(1 - (w * confusion).sum() / denominator)

    def resampled(y: Any, v: Any) -> float | None:
        return of_counts(counts(y, v))

    def jackknife(y: Any, v: Any, groups: list[list[int]]) -> list[float | None]:
        """κ with each case left out: the whole confusion counts less the case's (the same counts, so the same κ, as
        `resampled` over the other cases)."""
        whole = counts(y, v)
        return [of_counts(whole - counts(y[g], v[g])) for g in groups]

    resampled.jackknife = jackknife  # type: ignore[attr-defined]
    k.resampled = resampled  # type: ignore[attr-defined]
    return k


def spearman(y: Any, v: Any) -> float | None:
    """Spearman's ρ of labels `y` and verdicts `v` (`scipy.stats.spearmanr`); None when either holds one value only."""
    from scipy.stats import spearmanr

    if len(set(y.tolist())) < 2 or len(set(v.tolist())) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(spearmanr(y, v).statistic)


def _spearman_jackknife(y: Any, v: Any, groups: list[list[int]]) -> list[float | None]:
    """`spearman` with each case (`groups`: its indices) left out, in O(n) a case: a remaining value's average rank falls
    by the left-out values below it and by half those equal to it, so the ranks are those `scipy.stats.rankdata` gives the
    rest, and ρ is their Pearson correlation (as `spearmanr` takes it); `None` where the rest holds one value only."""
    import numpy as np
    from scipy.stats import rankdata

    ry, rv = rankdata(y), rankdata(v)
    keep = np.ones(len(y), dtype=bool)
    out: list[float | None] = []
    for g in groups:
        a = ry - (y[:, None] > y[g]).sum(axis=1) - 0.5 * (y[:, None] == y[g]).sum(axis=1)
        b = rv - (v[:, None] > v[g]).sum(axis=1) - 0.5 * (v[:, None] == v[g]).sum(axis=1)
        keep[g] = False
        a, b = a[keep], b[keep]
        keep[g] = True
        out.append(None if a.size < 2 or a.min() == a.max() or b.min() == b.max() else float(np.corrcoef(a, b)[0, 1]))
    return out


spearman.jackknife = _spearman_jackknife  # type: ignore[attr-defined]


def accuracy(y: Any, v: Any) -> float:
    """The share of verdicts `v` that equal their labels `y` (numpy arrays of one length)."""
    return float((y == v).mean())


def accuracy_ci(y: Any, v: Any, groups: list[list[int]]) -> list[float] | None:
    """Wilson score interval of the agreement share over the cases' effective sample size (`effective_n`)."""
    agree = [int((y[g] == v[g]).sum()) for g in groups]
    return wilson(accuracy(y, v), effective_n(agree, [len(g) for g in groups]))
