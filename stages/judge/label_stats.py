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
- κ's 95% CI: a percentile bootstrap over cases (the cluster bootstrap, Davison & Hinkley, Bootstrap Methods and their
  Application (1997) §3.8; Field & Welsh, JRSS B 69 (2007) 369–390): each resample draws the labelled cases with
  replacement and takes every verdict of each. A resample with κ undefined (one class only: 0/0) is dropped and
  counted (`kappa_ci_dropped`).
- the κ CI is *not informative* (`kappa_ci_informative: false`, with `kappa_ci_why`) when fewer than `MIN_CASES`
  cases are labelled — a bootstrap resamples the few cases there are, its κ takes a handful of values, and its
  percentile interval covers the true κ well under 95% of the time (Efron & Tibshirani, An Introduction to the
  Bootstrap (1993) §13: percentile intervals are too narrow at small n) — or when every label is of one class (one
  grade): κ is then 0 whatever the verdicts (or 0/0), and says nothing of the judge. The rule is about the evidence,
  not the interval's width: 2 of 2 agreeing gives [1, 1] and is not informative (2 cases), while 200 of 200 agreeing
  with labels of both classes gives [1, 1] too, every resample agreeing, and is. The gate's `min_kappa` fails on a κ
  that is not informative: 2 labels cannot show a judge is good.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["MIN_CASES", "Z95", "accuracy", "accuracy_ci", "case_bootstrap", "effective_n", "kappa_of", "rng", "spearman", "uninformative", "wilson"]

MIN_CASES = 10  # labelled cases below which a κ interval is not informative (see the module doc)
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


def case_bootstrap(stat: Callable[[Any, Any], float | None], y: Any, v: Any, groups: list[list[int]], resamples: int,
                   gen: Any) -> tuple[list[float] | None, int]:
    """`(95% percentile interval, resamples dropped)` of `stat(y, v)` over resamples of the cases (`groups`: each case's
    indices into `y` and `v`), every verdict of a drawn case taken; a resample where `stat` is undefined is dropped."""
    import numpy as np

    got: list[float] = []
    dropped = 0
    single = np.array([g[0] for g in groups]) if all(len(g) == 1 for g in groups) else None
    for draw in gen.integers(0, len(groups), size=(resamples, len(groups))):
        idx = single[draw] if single is not None else np.fromiter((i for g in draw for i in groups[g]), dtype=int)
        x = stat(y[idx], v[idx])
        if x is None or not np.isfinite(x):
            dropped += 1
            continue
        got.append(x)
    if not got:
        return None, dropped
    lo, hi = np.percentile(got, [2.5, 97.5])
    return [round(float(lo), 6), round(float(hi), 6)], dropped


def uninformative(cases: int, label_classes: list[Any]) -> str | None:
    """Why a κ over `cases` labelled cases whose labels are of the classes `label_classes` (pass/fail, or grades) says
    nothing (see the module doc), or `None` when it is informative. Not the interval's width: a judge agreeing with
    every one of many labels of both classes has the interval [1, 1], and that is evidence."""
    if cases < MIN_CASES:
        return (f"only {cases} labelled case{'s' if cases != 1 else ''} (fewer than {MIN_CASES}): a bootstrap over so few "
                "cases does not give a 95% interval")
    if len(label_classes) < 2:
        only = label_classes[0] if label_classes else None
        shown = ("pass" if only else "fail") if isinstance(only, bool) else only
        other = "cases that should " + ("fail" if only else "pass") if isinstance(only, bool) else "cases of other grades"
        return (f"every label is {shown}: kappa is 0 whatever the verdicts (or undefined), it says nothing of the judge; "
                f"add labels for {other}")
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

    def resampled(y: Any, v: Any) -> float | None:
        confusion = np.bincount(np.searchsorted(scale, y) * n + np.searchsorted(scale, v), minlength=n * n).reshape(n, n).astype(np.float64)
        sum0, sum1 = confusion.sum(axis=0), confusion.sum(axis=1)
        if np.count_nonzero(sum0 + sum1) < 2:
            return None
        expected = np.outer(sum0, sum1) / sum0.sum()
        denominator = (w * expected).sum()
        return float("nan") if denominator == 0 else float(1 - (w * confusion).sum() / denominator)

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


def accuracy(y: Any, v: Any) -> float:
    """The share of verdicts `v` that equal their labels `y` (numpy arrays of one length)."""
    return float((y == v).mean())


def accuracy_ci(y: Any, v: Any, groups: list[list[int]]) -> list[float] | None:
    """Wilson score interval of the agreement share over the cases' effective sample size (`effective_n`)."""
    agree = [int((y[g] == v[g]).sum()) for g in groups]
    return wilson(accuracy(y, v), effective_n(agree, [len(g) for g in groups]))
