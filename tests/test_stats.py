"""Streaming statistics: pass@k, Welford moments, keyed bottom-k sample, bootstrap CI coverage, sign-flip test."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from tracejudge.stages.aggregate.stats import (
    KeyedSample,
    Moments,
    bootstrap_mean_ci,
    pass_at_k,
    quantile,
    rng_for,
    seed_bits,
    sign_flip_pvalue,
)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 0, 1, 0.0),
        (5, 5, 5, 1.0),
        (5, 2, 1, 0.4),  # pass@1 is c/n
        (5, 2, 2, 1 - math.comb(3, 2) / math.comb(5, 2)),  # 1 - 3/10 = 0.7
        (5, 2, 4, 1.0),  # fewer than k failed: n - c = 3 < 4
        (10, 1, 3, 1 - math.comb(9, 3) / math.comb(10, 3)),  # 0.3
        (1, 1, 1, 1.0),
        (1, 0, 1, 0.0),
    ],
)
def test_pass_at_k_unbiased_estimator(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_is_the_chance_that_k_drawn_trials_contain_a_pass() -> None:
    # The estimator equals the exact probability over all k-subsets of the n trials.
    from itertools import combinations

    trials = [True, False, False, True, False, False]
    for k in range(1, 7):
        subsets = list(combinations(trials, k))
        exact = sum(any(s) for s in subsets) / len(subsets)
        assert pass_at_k(6, 2, k) == pytest.approx(exact, abs=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (3, 1, 0), (3, 4, 1), (0, 0, 1)])
def test_pass_at_k_refuses_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="pass@k needs"):
        pass_at_k(n, c, k)


def test_moments_match_statistics_module() -> None:
    rng = random.Random(1)
    xs = [rng.random() ** 3 for _ in range(1000)]
    m = Moments()
    for x in xs:
        m.add(x)
    assert m.n == 1000
    assert m.mean == pytest.approx(statistics.fmean(xs), abs=1e-12)
    assert m.std == pytest.approx(statistics.stdev(xs), abs=1e-12)
    one = Moments()
    one.add(0.5)
    assert one.std is None


def test_keyed_sample_is_bounded_and_uniform() -> None:
    # Each of 100 keys should land in a 10-value sample ~10% of the time over 2000 seeds.
    hits = [0] * 100
    runs = 2000
    for r in range(runs):
        sample = KeyedSample(10)
        for i in range(100):
            sample.add(seed_bits(r, "case", i), float(i))
        assert len(sample.values) == 10 and sample.seen == 100
        for v in sample.values:
            hits[int(v)] += 1
    shares = [h / runs for h in hits]
    assert min(shares) > 0.06 and max(shares) < 0.14
    assert abs(statistics.fmean(shares[:50]) - statistics.fmean(shares[50:])) < 0.01


def test_keyed_sample_does_not_depend_on_arrival_order() -> None:
    # The same keyed values in three orders, offered one by one or in batches: the same sample, in the same order.
    pairs = [(seed_bits(0, "c", i), float(i % 97) / 97) for i in range(5000)]
    samples = []
    for order in (pairs, pairs[::-1], sorted(pairs, key=lambda p: p[1])):
        one, batched = KeyedSample(50), KeyedSample(50)
        for h, v in order:
            one.add(h, v)
        for start in range(0, len(order), 700):
            chunk = order[start:start + 700]
            batched.add_many([h for h, _ in chunk], [(v, None) for _, v in chunk])
        samples += [one.values, batched.values]
        assert one.pairs() == sorted(pairs)[:50]
    assert all(s == samples[0] for s in samples)


def test_quantile_type_7() -> None:
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.0) == 1.0
    assert quantile([1.0, 2.0, 3.0, 4.0], 1.0) == 4.0
    assert quantile([5.0], 0.3) == 5.0


def test_bootstrap_ci_is_seeded_and_order_independent() -> None:
    rng = random.Random(3)
    xs = [rng.random() for _ in range(50)]
    mean = statistics.fmean(xs)
    a = bootstrap_mean_ci(xs, n_total=50, mean_total=mean, rng=rng_for(0, "m"), resamples=500)
    b = bootstrap_mean_ci(list(reversed(xs)), n_total=50, mean_total=mean, rng=rng_for(0, "m"), resamples=500)
    c = bootstrap_mean_ci(xs, n_total=50, mean_total=mean, rng=rng_for(1, "m"), resamples=500)
    assert a == b
    assert a != c
    assert a is not None and a[0] < mean < a[1]
    assert bootstrap_mean_ci([0.3], n_total=1, mean_total=0.3, rng=rng_for(0)) is None


def test_bootstrap_ci_of_the_whole_stream_stays_inside_its_values() -> None:
    # 199 unchanged pairs and one improved: no resample mean is below 0, and a running mean an ulp off the exact
    # one (Moments gives 0.0011111111111111096 for 0.0011111111111111111) must not move the interval below it.
    xs = [0.6666666666666666 - 0.4444444444444444] + [0.0] * 199
    m = Moments()
    for x in xs:
        m.add(x)
    assert m.mean != math.fsum(xs) / len(xs)  # the inexact mean a caller may pass
    lo, hi = bootstrap_mean_ci(xs, n_total=len(xs), mean_total=m.mean, rng=rng_for(0, "ulp"), resamples=500)
    assert lo == 0.0 and math.copysign(1.0, lo) == 1.0 and 0.0 < hi <= max(xs)


def _coverage(draw, true_mean: float, n: int, sims: int, reservoir: int | None, resamples: int) -> float:
    covered = 0
    for s in range(sims):
        rng = random.Random(f"sim:{s}")
        m = Moments()
        res = KeyedSample(reservoir or n)
        for i in range(n):
            x = draw(rng)
            m.add(x)
            res.add(seed_bits("cov", s, i), x)
        ci = bootstrap_mean_ci(res.values, n_total=n, mean_total=m.mean, rng=rng_for(0, "cov-boot", s), resamples=resamples)
        assert ci is not None
        covered += ci[0] <= true_mean <= ci[1]
    return covered / sims


def test_bootstrap_ci_covers_the_true_mean_at_about_the_nominal_rate() -> None:
    # Skewed continuous scores (Beta(2, 5), mean 2/7), 60 per run, 300 seeded simulated runs.
    cov = _coverage(lambda r: r.betavariate(2, 5), 2 / 7, n=60, sims=300, reservoir=None, resamples=400)
    assert 0.91 <= cov <= 0.98, cov
    # Pass/fail scores (Bernoulli 0.7), 80 per run.
    cov = _coverage(lambda r: 1.0 if r.random() < 0.7 else 0.0, 0.7, n=80, sims=300, reservoir=None, resamples=400)
    assert 0.91 <= cov <= 0.98, cov


def test_bootstrap_ci_from_a_small_reservoir_keeps_nominal_coverage() -> None:
    # 2000 values per run but only 150 kept: the rescaled interval still covers ~95%.
    cov = _coverage(lambda r: r.betavariate(2, 5), 2 / 7, n=2000, sims=150, reservoir=150, resamples=300)
    assert 0.90 <= cov <= 0.99, cov


def test_bootstrap_ci_width_reflects_the_full_stream_not_the_reservoir() -> None:
    rng = random.Random(5)
    xs = [rng.random() for _ in range(20000)]
    m = Moments()
    res = KeyedSample(200)
    for i, x in enumerate(xs):
        m.add(x)
        res.add(seed_bits("w", i), x)
    lo, hi = bootstrap_mean_ci(res.values, n_total=len(xs), mean_total=m.mean, rng=rng_for(0, "wb"), resamples=1000)
    expected_half = 1.96 * statistics.stdev(xs) / math.sqrt(len(xs))  # ~0.004
    assert (hi - lo) / 2 == pytest.approx(expected_half, rel=0.25)
    assert lo < m.mean < hi


def test_sign_flip_exact_for_small_samples() -> None:
    # Four equal positive deltas: only all-plus and all-minus reach |sum| = 4 → p = 2/16.
    assert sign_flip_pvalue([0.5, 0.5, 0.5, 0.5], rng=rng_for(0)) == pytest.approx(2 / 16)
    assert sign_flip_pvalue([0.0, 0.0], rng=rng_for(0)) is None
    # zeros are dropped: same p as without them
    assert sign_flip_pvalue([0.5, 0, 0.5, 0, 0.5, 0.5], rng=rng_for(0)) == pytest.approx(2 / 16)


def test_sign_flip_monte_carlo_detects_a_shift_and_not_noise() -> None:
    rng = random.Random(11)
    shifted = [rng.gauss(-0.1, 0.2) for _ in range(200)]
    noise = [rng.gauss(0.0, 0.2) for _ in range(200)]
    assert sign_flip_pvalue(shifted, rng=rng_for(0, "a"), resamples=1000) < 0.01
    assert sign_flip_pvalue(noise, rng=rng_for(0, "b"), resamples=1000) > 0.05
