"""The bootstrap drawn over distinct values gives the interval the per-draw bootstrap gives.

`bootstrap_mean_ci` draws each resample as multinomial counts of the sample's
distinct values when there are few of them; the reference below draws every
value of every resample, as the bootstrap did before. Both are seeded, with
many resamples so that their Monte Carlo noise is small next to the
tolerance: the 2.5% and 97.5% points of 20,000 resampled means each vary by
about 0.02 standard errors, and the endpoints must agree within 0.15.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from tracejudge.stages.aggregate.stats import _resampled_means, bootstrap_mean_ci, quantile, rng_for

B = 20_000


def per_draw_ci(sample: list[float], n_total: int, mean_total: float, seed: int, resamples: int = B) -> tuple[float, float]:
    """The percentile bootstrap drawing m indices per resample (the bootstrap before distinct-value draws)."""
    data = sorted(sample)
    m = len(data)
    centre = math.fsum(data) / m
    scale = math.sqrt(m / n_total) if n_total > m else 1.0
    values = np.asarray(data)
    gen = np.random.default_rng(seed)
    means = np.sort(np.concatenate([values[gen.integers(0, m, size=(100, m))].mean(axis=1) for _ in range(resamples // 100)]))
    lo, hi = quantile(means.tolist(), 0.025), quantile(means.tolist(), 0.975)
    return mean_total + (lo - centre) * scale, mean_total + (hi - centre) * scale


def _binary(rng: random.Random, m: int) -> list[float]:
    return [float(rng.random() < 0.3) for _ in range(m)]


def _forty_seven(rng: random.Random, m: int) -> list[float]:
    # 47 distinct values k/46, weighted unevenly (a trajectory ratio's shape: many near the ends)
    weights = [1 + abs(23 - k) for k in range(47)]
    return [k / 46 for k in rng.choices(range(47), weights=weights, k=m)]


def _three_levels(rng: random.Random, m: int) -> list[float]:
    return [rng.choice((0.0, 0.5, 1.0)) for _ in range(m)]


def _continuous(rng: random.Random, m: int) -> list[float]:
    return [rng.betavariate(2, 5) for _ in range(m)]


@pytest.mark.parametrize("make", [_binary, _forty_seven, _three_levels, _continuous])
@pytest.mark.parametrize(("m", "n_total"), [(1000, 1000), (1000, 25_000), (40, 40)])
def test_interval_matches_the_per_draw_bootstrap(make, m: int, n_total: int) -> None:
    rng = random.Random(f"{make.__name__}:{m}")
    sample = make(rng, m)
    mean_total = math.fsum(sample) / m
    se = (np.std(sample, ddof=1) / math.sqrt(n_total)) or 1e-9
    got = bootstrap_mean_ci(sample, n_total=n_total, mean_total=mean_total, rng=rng_for(7, make.__name__), resamples=B)
    want = per_draw_ci(sample, n_total, mean_total, seed=11)
    assert got is not None
    assert abs(got[0] - want[0]) < 0.15 * se, (got, want, se)
    assert abs(got[1] - want[1]) < 0.15 * se, (got, want, se)
    assert got[0] <= mean_total <= got[1]


@pytest.mark.parametrize("make", [_binary, _forty_seven])
def test_resampled_means_have_the_per_draw_distribution(make) -> None:
    # Beyond the two endpoints: the resampled means' mean, spread and deciles agree.
    sample = np.sort(np.asarray(make(random.Random(5), 1000)))
    fast = _resampled_means(sample, np.random.default_rng(1), B)
    slow = sample[np.random.default_rng(2).integers(0, len(sample), size=(B, len(sample)))].mean(axis=1)
    se = sample.std(ddof=1) / math.sqrt(len(sample))
    assert abs(fast.mean() - slow.mean()) < 0.05 * se
    assert fast.std() == pytest.approx(slow.std(), rel=0.03)
    for q in (0.1, 0.3, 0.5, 0.7, 0.9):
        assert abs(np.quantile(fast, q) - np.quantile(slow, q)) < 0.1 * se


def test_all_distinct_values_fall_back_to_drawing_indices() -> None:
    # Continuous scores: a multinomial over 1,000 distinct values would cost more than the indices,
    # so the draws are the per-draw bootstrap's own, value for value.
    sample = np.sort(np.asarray(_continuous(random.Random(3), 1000)))
    got = _resampled_means(sample, np.random.default_rng(4), 1000)
    want = sample[np.random.default_rng(4).integers(0, 1000, size=(1000, 1000))].mean(axis=1)
    assert np.array_equal(got, want)


def test_a_single_value_gives_a_zero_width_interval() -> None:
    assert bootstrap_mean_ci([0.5] * 300, n_total=300, mean_total=0.5, rng=rng_for(0, "x")) == (0.5, 0.5)
