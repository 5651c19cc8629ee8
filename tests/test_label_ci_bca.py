"""κ's and ρ's intervals over the labelled cases are BCa — `scipy.stats.bootstrap(method='BCa')` on the same case
resamples — and say when there is too little evidence.

The percentile interval they replaced held the true κ in about 90% of samples at 20 labelled cases
(`benchmarks/label_ci_coverage.py`); an interval over 19 labelled cases, or over 20 of which 2 are labelled fail, was
called informative, and ρ's interval never was called anything.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from scipy.special import ndtr, ndtri
from scipy.stats import bootstrap
from tracejudge.entrypoints.calibrate import kappa_lines
from tracejudge.stages.aggregate.gate import _kappa_check
from tracejudge.stages.judge.agreement import Pair, metric_agreement
from tracejudge.stages.judge.label_stats import MIN_CASES, MIN_OTHER, bca, case_bootstrap, case_resamples, kappa_of, spearman


def _scipy(stat: Any, y: Any, v: Any, groups: list[list[int]], resamples: int, seed: int, given: Any = None) -> Any:
    """scipy's BCa with the cases as the one sample (a statistic of the case indices, every verdict of a case taken)."""
    cases = [np.array(g) for g in groups]

    def of(idx: Any) -> float:
        ix = np.concatenate([cases[i] for i in idx])
        x = stat(y[ix], v[ix])
        return np.nan if x is None else x

    more = {} if given is None else {"n_resamples": 0, "bootstrap_result": given}
    return bootstrap((np.arange(len(groups)),), of, vectorized=False, method="BCa", confidence_level=0.95,
                     rng=np.random.default_rng(seed), **({"n_resamples": resamples} | more))


def _samples() -> list[tuple[str, Any, Any, Any, list[list[int]]]]:
    gen = np.random.default_rng(11)
    out = []
    for n in (35, 60):  # pass/fail, one verdict a case, κ 0.6-ish
        y = gen.random(n) < 0.4
        out.append(("cohen", kappa_of(None, [False, True]).resampled, y, np.where(gen.random(n) < 0.8, y, ~y), [[i] for i in range(n)]))
    for n, trials in ((25, 1), (30, 3)):  # grades 1..5, several trials a case; κ weighted on the whole scale, and ρ (ties)
        y = np.repeat(gen.integers(1, 6, n), trials)
        v = np.clip(y + gen.integers(-1, 2, n * trials), 1, 5)
        groups = [list(range(i * trials, (i + 1) * trials)) for i in range(n)]
        out.append(("quadratic", kappa_of("quadratic", [1, 2, 3, 4, 5]).resampled, y, v, groups))
        if trials > 1:
            out.append(("spearman", spearman, y, v, groups))
    return out


@pytest.mark.parametrize("k", range(5))
def test_the_interval_is_scipys_bca_on_the_same_resamples(k: int) -> None:
    name, stat, y, v, groups = _samples()[k]
    estimate, reps, dropped, jack = case_resamples(stat, y, v, groups, 1000, np.random.default_rng(k))
    assert dropped == 0 and None not in jack, (name, dropped)
    theirs = _scipy(stat, y, v, groups, 1000, k)
    assert np.array_equal(reps, theirs.bootstrap_distribution), name  # the same resamples, in the same order
    ci, why = bca(estimate, reps, jack)
    assert why is None and ci is not None
    assert ci == pytest.approx([theirs.confidence_interval.low, theirs.confidence_interval.high], abs=1e-12), name
    rounded, _, _ = case_bootstrap(stat, y, v, groups, 1000, np.random.default_rng(k))
    assert rounded == [round(ci[0], 6), round(ci[1], 6)]


def test_bca_is_not_the_percentile_interval_under_another_name() -> None:
    moved = 0
    for _, stat, y, v, groups in _samples():
        estimate, reps, _, jack = case_resamples(stat, y, v, groups, 1000, np.random.default_rng(0))
        ci, _ = bca(estimate, reps, jack)
        moved += max(abs(a - b) for a, b in zip(ci, np.percentile(reps, [2.5, 97.5]), strict=True)) > 1e-3
    assert moved >= 3, moved


def test_fast_jackknives_are_the_leave_one_case_out_values() -> None:
    for name, stat, y, v, groups in _samples():
        plain = (lambda a, b, s=stat: s(a, b))  # (no `jackknife` attribute: every case left out in turn)
        fast = case_resamples(stat, y, v, groups, 10, np.random.default_rng(0))[3]
        slow = case_resamples(plain, y, v, groups, 10, np.random.default_rng(0))[3]
        if name == "spearman":
            assert fast == pytest.approx(slow, abs=1e-12), name
        else:
            assert fast == slow, name  # (the same confusion counts: the same κ to the last bit)


def test_resamples_with_kappa_undefined_are_dropped_and_bca_is_scipys_over_the_rest() -> None:
    # 2 cases labelled (and judged) fail among 24: a resample drawing neither has one class only (κ 0/0).
    y = np.array([False, False] + [True] * 22)
    v = np.array([False, True, False] + [True] * 21)
    groups = [[i] for i in range(24)]
    stat = kappa_of(None, [False, True]).resampled
    estimate, reps, dropped, jack = case_resamples(stat, y, v, groups, 2000, np.random.default_rng(4))
    assert 0 < dropped < 2000 and len(reps) == 2000 - dropped and None not in jack, dropped
    ci, _ = bca(estimate, reps, jack)
    theirs = _scipy(stat, y, v, groups, 0, 0, given=SimpleNamespace(bootstrap_distribution=reps))  # scipy's BCa of these replicates
    assert ci == pytest.approx([theirs.confidence_interval.low, theirs.confidence_interval.high], abs=1e-12)


def test_where_scipys_bca_is_undefined() -> None:
    gen = np.random.default_rng(0)
    reps = gen.normal(0.5, 0.1, 1000)
    # Every resample alike (200 of 200 agreeing): that value at both ends; scipy's is NaN.
    y = np.array([True, False] * 100)
    stat = kappa_of(None, [False, True]).resampled
    assert case_bootstrap(stat, y, y.copy(), [[i] for i in range(200)], 500, np.random.default_rng(1)) == ([1.0, 1.0], 0, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = _scipy(stat, y, y.copy(), [[i] for i in range(200)], 500, 1)
    assert np.isnan(theirs.confidence_interval.low)
    # A jackknife without spread: no acceleration, the bias-corrected interval.
    z0 = float(ndtri(np.mean(reps < 0.52)))  # (no resample equals 0.52: no ties to count half)
    want = np.quantile(reps, [ndtr(2 * z0 - 1.959963984540054), ndtr(2 * z0 + 1.959963984540054)])
    got, _ = bca(0.52, reps, [0.3] * 40)
    assert got == pytest.approx(list(want), abs=1e-12)
    # Undefined jackknife values are left out of the acceleration.
    assert bca(0.52, reps, [0.3, None, 0.5, 0.4, None]) == bca(0.52, reps, [0.3, 0.5, 0.4])
    # Every resample above the figure: z0 is infinite, no interval, and why.
    none, why = bca(0.1, reps, [0.3, 0.5, 0.4])
    assert none is None and "every resample's figure is above the sample's" in why
    # An end past where the formula folds (1 - a(z0 + z) <= 0: tens of thousands of resamples, one at the figure):
    # taken at its limit, the smallest resample, not folded over to the largest as scipy's formula would.
    many = np.concatenate(([0.0], 1 + gen.random(99_999)))
    skewed = [0.0] * 30 + [10.0]  # a = -0.158
    (lo, hi), _ = bca(0.0, many, skewed)
    assert lo == 0.0 and lo <= hi < many.max()


def _yes_no(labels: list[bool], verdicts: list[bool]) -> dict[str, Any]:
    pairs = [Pair(f"c{i:03d}", 0, a, b, float(b), float(b)) for i, (a, b) in enumerate(zip(labels, verdicts, strict=True))]
    return metric_agreement("TaskCompletion", pairs, yes_no=True, resamples=200)


def _gate(m: dict[str, Any]) -> Any:
    return _kappa_check("TaskCompletion", 0.5, {"labels": {"metrics": {"TaskCompletion": m}}})


def test_too_few_cases_or_too_few_of_a_second_class_is_not_informative_and_the_gate_says_why() -> None:
    assert (MIN_CASES, MIN_OTHER) == (20, 3)
    labels = [i % 2 == 0 for i in range(MIN_CASES - 1)]
    few = _yes_no(labels, labels)
    assert few["kappa_ci_informative"] is False and "only 19 labelled cases (fewer than 20)" in few["kappa_ci_why"], few
    check = _gate(few)
    assert not check.ok and "not informative, only 19 labelled cases (fewer than 20): a bootstrap interval" in check.detail, check.detail
    enough = _yes_no(labels + [True], labels + [True])
    assert enough["kappa_ci_informative"] is True and _gate(enough).ok
    # 20 cases, 2 of them labelled fail: κ turns on those 2.
    rare = [i >= 2 for i in range(40)]
    two = _yes_no(rare, rare)
    assert two["kappa_ci_informative"] is False, two
    assert "only 2 cases labelled fail (fewer than 3)" in two["kappa_ci_why"] and "add labels for cases that should fail" in two["kappa_ci_why"]
    assert not _gate(two).ok and "not informative, only 2 cases labelled fail" in _gate(two).detail
    three = [i >= 3 for i in range(40)]
    assert _yes_no(three, three)["kappa_ci_informative"] is True
    assert two["kappa_ci_method"] == "case bootstrap, BCa"


def test_spearman_takes_the_same_rule() -> None:
    def graded(n: int, labels: Any = None) -> dict[str, Any]:
        pairs = [Pair(f"c{i:03d}", 0, float(1 + i % 5 if labels is None else labels[i]), None, 0.0, float(1 + (i + i // 4) % 5)) for i in range(n)]
        return metric_agreement("quality", pairs, scale=(1.0, 4.0), resamples=200)

    small = graded(12)
    assert small["spearman_ci_informative"] is False and "only 12 labelled cases" in small["spearman_ci_why"], small
    assert small["spearman_ci_method"] == "case bootstrap, BCa"
    lines = kappa_lines(small)
    assert any(line.startswith("* kappa and spearman CIs not informative: only 12 labelled cases") for line in lines), lines
    big = graded(30)
    assert big["spearman_ci_informative"] is True and "spearman_ci_why" not in big and big["spearman_ci"] is not None, big
    # Grades that are not whole numbers: no weighted κ, ρ alone, and ρ's flag still said.
    odd = [Pair(f"c{i:03d}", 0, 0.25 + 0.5 * (i % 2), None, 0.0, 0.1 * (i % 7)) for i in range(10)]
    m = metric_agreement("quality", odd, resamples=200)
    assert m["kappa_kind"] is None and m["spearman_ci_informative"] is False, m
    assert any(line.startswith("* spearman CI not informative: only 10 labelled cases") for line in kappa_lines(m)), kappa_lines(m)
    # Grades: "other than" the most common one.
    mostly = graded(30, [4.0] * 28 + [2.0, 5.0])
    assert "only 2 cases labelled other than 4 (fewer than 3)" in mostly["kappa_ci_why"] == mostly["spearman_ci_why"], mostly
    # Labels of one grade: ρ is undefined, and the words say so (not "kappa is 0").
    one = graded(30, [3.0] * 30)
    assert one["spearman"] is None and "every label is 3: spearman is undefined" in one["spearman_ci_why"], one
