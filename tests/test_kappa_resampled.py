"""The bootstrap's κ of a resample (`label_stats.kappa_of(...).resampled`, computed from the resample's confusion counts) is
scikit-learn's `cohen_kappa_score` to the last bit: plain κ over pass/fail, quadratic-weighted κ over a whole scale
with grades absent from the sample, one class only (undefined), and labels and verdicts of no class in common."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from tracejudge.stages.judge.label_stats import kappa_of
from tracejudge.stages.judge.label_stats import case_bootstrap


def _same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60))
def test_pass_fail_kappa_of_a_resample_is_sklearns(pairs: list[tuple[bool, bool]]) -> None:
    y, v = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
    k = kappa_of(None, [False, True])
    assert _same(k.resampled(y, v), k(y, v)), pairs  # type: ignore[attr-defined]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 10).flatmap(lambda top: st.tuples(st.just(top), st.lists(st.tuples(st.integers(0, top), st.integers(0, top)), min_size=1, max_size=60))))
def test_quadratic_kappa_of_a_resample_is_sklearns_over_the_whole_scale(drawn: tuple[int, list[tuple[int, int]]]) -> None:
    top, pairs = drawn
    y, v = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
    scale = list(range(top + 1))
    k = kappa_of("quadratic", scale)
    got = k.resampled(y, v)  # type: ignore[attr-defined]
    assert _same(got, k(y, v)), pairs
    if got is not None and not math.isnan(got):
        assert got == cohen_kappa_score(y, v, weights="quadratic", labels=scale)


def test_one_class_is_undefined_and_no_class_in_common_is_sklearns_zero() -> None:
    k = kappa_of(None, [False, True])
    assert k.resampled(np.array([True, True]), np.array([True, True])) is None  # type: ignore[attr-defined]
    apart = k.resampled(np.array([True, True]), np.array([False, False]))  # type: ignore[attr-defined]
    assert apart == cohen_kappa_score([True, True], [False, False], labels=[False, True]) == 0.0


def test_the_interval_is_the_one_sklearn_per_resample_gives() -> None:
    gen = np.random.default_rng(3)
    y = gen.integers(1, 6, 80)
    v = np.clip(y + gen.integers(-1, 2, 80), 1, 5)
    groups = [[i, i + 1] for i in range(0, 80, 2)]
    k = kappa_of("quadratic", [1, 2, 3, 4, 5])
    fast = case_bootstrap(k.resampled, y, v, groups, 400, np.random.default_rng(7))  # type: ignore[attr-defined]
    slow = case_bootstrap(k, y, v, groups, 400, np.random.default_rng(7))
    assert fast == slow and fast[0] is not None
