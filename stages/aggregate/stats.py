"""Streaming statistics for the aggregate stage and run comparison.

Everything here is pure and seeded, with no third-party numerics:

- `Moments`: count, mean and sample standard deviation by Welford's update
  (numerically stable over millions of values, O(1) memory);
- `KeyedSample`: a uniform sample of at most `size` values of a stream, the
  values whose keys hash lowest (a bottom-k sample), so the same keyed values
  give the same sample in whatever order they arrive;
- `bootstrap_mean_ci`: a percentile bootstrap confidence interval of a mean,
  computed from a sample and rescaled to the full stream's size;
- `pass_at_k`: the unbiased pass@k estimator; `pass_hat_k`: τ-bench's pass^k;
- `sign_flip_pvalue`: a paired sign-flip (randomization) test of a mean delta.

Randomness always comes from a `random.Random` seeded by the caller with a
string naming what is being estimated, so the same results give the same
figures in `run` and in `report`.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import random
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from math import comb
from operator import itemgetter
from typing import Any

from tracejudge.core.lazy_numpy import numpy

__all__ = [
    "KeyedSample",
    "Moments",
    "bootstrap_mean_ci",
    "pass_at_k",
    "pass_hat_k",
    "quantile",
    "rank",
    "ranks",
    "rng_for",
    "seed_bits",
    "sign_flip_pvalue",
]


def rng_for(seed: int | str, *parts: object) -> random.Random:
    """A `random.Random` seeded by `seed` and the names of what it estimates.

    `seed` is an integer or an already composed string seed (the aggregate
    passes `"<seed>:<group>:<metric>"`); both are used as their `str()`.

    Seeding with a string is stable across processes and Python versions
    (it hashes with SHA-512), unlike `hash()`.
    """
    return random.Random(":".join([str(seed), *map(str, parts)]))


@dataclass
class Moments:
    """Running count, mean and sum of squared deviations (Welford).

    `std` is the sample standard deviation (n − 1 in the denominator); it is
    `None` below two values.
    """

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        d = x - self.mean
        self.mean += d / self.n
        self.m2 += d * (x - self.mean)

    @property
    def std(self) -> float | None:
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else None


_M64 = (1 << 64) - 1
_first = itemgetter(0)


def seed_bits(seed: int | str, *parts: object) -> int:
    """A 64-bit unsigned hash of `seed` and `parts` (joined by ":" as their `str()`), stable across processes.

    BLAKE2b, so it is the same in every process, run and Python version (unlike `hash()`).
    """
    text = ":".join([str(seed), *map(str, parts)])
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def rank(key: int, seed: int) -> int:
    """The rank of a result under a seed, for `KeyedSample`: a 64-bit unsigned int.

    `key` is the result's 64-bit key (`engine.keyset.result_key` of its case and trial, uniform
    already), `seed` a `seed_bits`. SplitMix64's output function of `key ^ seed` (Steele, Lea and
    Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014): a bijection of 64-bit
    ints that mixes every bit, so another seed gives an unrelated order, and distinct keys distinct ranks.
    """
    z = (key ^ seed) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)



def ranks(keys: Iterable[int], seed: int) -> list[int]:
    """`[rank(key, seed) for key in keys]`, with `rank`'s arithmetic written out: a call per key cost as much as the rest."""
    m = _M64
    out = []
    for z in keys:
        z = (z ^ seed) & m
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        out.append(z ^ (z >> 31))
    return out

@dataclass
class KeyedSample:
    """A uniform sample of at most `size` values from a stream of `(key hash, value)` pairs (bottom-k).

    It keeps the `size` values whose key hashes (`rank` of each value's
    result key under the seed) are lowest. The hashes are uniform and independent of the
    values, so every value is in the sample with probability
    `min(1, size / seen)`, as in a reservoir; but the kept set depends only on
    which pairs were added, not on their order, so worker processes, resumed
    runs and rebuilt summaries that fold the same results in another order
    get the same sample and the same bootstrap interval. Ties of hash (the
    same key added twice) are broken by value, again whatever the order.
    Cost: one comparison per value once full, a heap update (O(log size))
    for the `size * ln(seen / size)` or so that enter. Memory: one
    `(int, float)` pair per kept value.

    Source: E. Cohen and H. Kaplan, "Summarizing data using bottom-k
    sketches", PODC 2007.

    `heap` holds `(-hash, value)` pairs as a min-heap, so its root is the
    kept pair of highest hash: the one a lower hash replaces.
    """

    size: int
    seen: int = 0
    heap: list[tuple[int, float]] = field(default_factory=list)

    def add(self, h: int, x: float) -> None:
        """Offer the value `x` whose key hashes to `h` (an unsigned 64-bit int)."""
        self.add_many([h], [(x, None)])

    def add_many(self, hashes: Sequence[int], pairs: Sequence[tuple[Any, Any]]) -> None:
        """Offer `pairs[i][0]` under the hash `hashes[i]` for every i (the pairs' second items are ignored)."""
        heap, size, n = self.heap, self.size, len(pairs)
        if len(hashes) != n:
            raise ValueError(f"{len(hashes)} hashes for {n} values")
        self.seen += n
        if size <= 0:
            return
        i = max(0, min(n, size - len(heap)))
        if i:  # not full yet: the first values go in as they are, the heap then put in order at once
            heap += [(-h, float(p[0])) for h, p in zip(hashes[:i], pairs[:i])]
            heapq.heapify(heap)
        if i == n:
            return
        # Full: a value enters only with a hash at most the highest kept one (the root's), and most do not (about
        # size * ln(seen / size) of them enter in all): those are passed over on the hash alone, without a pair made.
        replace, top = heapq.heapreplace, heap[0]
        highest = -top[0]
        if i:
            hashes, pairs = hashes[i:], pairs[i:]
        for h, p in zip(hashes, pairs):  # (not sliced once full: most calls)
            if h > highest:
                continue
            item = (-h, float(p[0]))
            if item > top:
                replace(heap, item)
                top = heap[0]
                highest = -top[0]

    @property
    def values(self) -> list[float]:
        """The kept values, in the order of their key hashes (so independent of arrival order)."""
        return [v for _, v in self.kept()]

    def pairs(self) -> list[tuple[int, float]]:
        """The kept `(hash, value)` pairs, lowest hash first: a canonical form for saving."""
        return [(-nh, v) for nh, v in self.kept()]

    def kept(self) -> list[tuple[int, float]]:
        """The heap's `(-hash, value)` items, lowest hash first (of two items of one hash, the higher value first)."""
        # Sorted on the hash alone (a tuple comparison costs twice an int's), unless a hash is kept twice (the same key
        # added twice): then the tuples' order breaks the tie by value.
        out = sorted(self.heap, key=_first, reverse=True)
        if len({nh for nh, _ in out}) != len(out):
            out = sorted(self.heap, reverse=True)
        return out


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (type 7, numpy's default) of sorted values."""
    if not sorted_values:
        raise ValueError("quantile of an empty sequence")
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def bootstrap_mean_ci(
    sample: Iterable[float],
    *,
    n_total: int,
    mean_total: float,
    rng: random.Random,
    resamples: int = 1000,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the mean of a stream, from a sample of it.

    Args:
        sample: a uniform sample (a `KeyedSample`) of the stream's values; when
            the stream fit in the sample, the stream itself.
        n_total: how many values the stream had (>= len(sample)).
        mean_total: the exact mean of the whole stream.
        rng: seeded generator (the interval is a function of the seed).
        resamples: bootstrap resamples (B).
        level: confidence level, e.g. 0.95.

    Returns `(low, high)`, or `None` below two values. The sample is sorted
    first, so the interval does not depend on the order values arrived in.
    When the stream was larger than the sample, the resampled means'
    deviations from the sample mean are scaled by sqrt(m / n_total) (the
    standard error of a mean shrinks as 1/sqrt(n)) and centred on the exact
    mean; with the whole stream in the sample this is the plain percentile
    bootstrap.
    """
    np = numpy()  # imported here: only a summary needs it, not every worker

    data = sorted(sample)
    m = len(data)
    if m < 2 or n_total < 2:
        return None
    centre = math.fsum(data) / m
    scale = math.sqrt(m / n_total) if n_total > m else 1.0
    gen = np.random.default_rng(rng.getrandbits(128))
    means = _resampled_means(np.asarray(data, dtype=np.float64), gen, resamples)
    means.sort()
    alpha = (1.0 - level) / 2
    ordered = means.tolist()
    lo = quantile(ordered, alpha)
    hi = quantile(ordered, 1 - alpha)
    if n_total <= m:
        # The whole stream: the resampled means' own quantiles. Re-centring them on `mean_total` would move them by
        # its difference from `centre`, nothing when both are exact, but a caller's running mean is off by an ulp
        # or so: deltas all >= 0 then got an interval from -1.3e-18, printed `[-0.0000, …]`.
        return (lo, hi)
    return (mean_total + (lo - centre) * scale, mean_total + (hi - centre) * scale)


# Above this many distinct values per value, drawing indices is cheaper than a multinomial draw over the
# distinct values (numpy draws a multinomial as one binomial per distinct value): at 1,000 values x 1,000
# resamples, 2 distinct values cost 0.6 ms against 11 ms of indices, 47 cost 8.5 ms, 100 about the same as
# indices, 250 twice as much. Continuous scores (every value distinct) take the index path.
_DISTINCT_SHARE = 0.1


def _resampled_means(values: Any, gen: Any, resamples: int) -> Any:
    """`resamples` bootstrap means of `values` (a sorted float64 array of m values), as a float64 array.

    A resample is m draws with replacement; its mean depends only on how many
    times each distinct value was drawn, and those counts are multinomial(m,
    share of each distinct value). So with few distinct values (scores of 0/1,
    or of k/n for a small n) the counts are drawn directly: k binomials per
    resample instead of m indices, the same distribution of means. With many
    distinct values, every resample's indices are drawn at once (at most a
    million, 8 MB, at a time).
    """
    np = numpy()
    m = len(values)
    distinct, counts = np.unique(values, return_counts=True)
    if len(distinct) <= _DISTINCT_SHARE * m:
        drawn = gen.multinomial(m, counts / m, size=resamples)
        return (drawn @ distinct) / m
    means = np.empty(resamples)
    rows = max(1, 1_000_000 // m)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        means[start:stop] = values[gen.integers(0, m, size=(stop - start, m))].mean(axis=1)
    return means


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of k of the n trials passed.

    `1 − C(n − c, k) / C(n, k)` (Chen et al. 2021, "Evaluating Large Language
    Models Trained on Code"; cogitator's `passAtK`). It is 1 when fewer than
    k trials failed (n − c < k). Raises `ValueError` unless 0 <= c <= n and
    1 <= k <= n.
    """
    if not (1 <= k <= n) or not (0 <= c <= n):
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that k trials drawn without replacement from the n all passed.

    `C(c, k) / C(n, k)`, as τ-bench computes it per task (sierra-research/tau-bench `tau_bench/run.py`,
    `display_metrics`, after Yao et al. 2024, arXiv 2406.12045) and τ²-bench too (sierra-research/tau2-bench
    `src/tau2/metrics/agent_metrics.py`, `pass_hat_k`): one float division of the two exact binomials, so the
    value is upstream's to the last bit. 0 when fewer than k trials passed. Raises `ValueError` unless
    0 <= c <= n and 1 <= k <= n (τ²-bench raises for n < k too).
    """
    if not (1 <= k <= n) or not (0 <= c <= n):
        raise ValueError(f"pass^k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    return comb(c, k) / comb(n, k)


def sign_flip_pvalue(deltas: Sequence[float], *, rng: random.Random, resamples: int = 2000) -> float | None:
    """Two-sided p-value of a paired sign-flip (randomization) test of mean delta = 0.

    Under the null the sign of each paired difference is exchangeable; the
    p-value is the share of random sign assignments whose |sum| reaches the
    observed |sum|, with the observed assignment counted (so it is never 0:
    `(hits + 1) / (resamples + 1)`). Zero deltas carry no sign and are
    dropped, which also makes the test cheap for mostly-unchanged runs.
    Exact enumeration is used when at most 12 deltas are nonzero. Returns
    `None` when every delta is zero (nothing to test).
    """
    nz = [d for d in deltas if d != 0.0]
    if not nz:
        return None
    observed = abs(math.fsum(nz)) - 1e-12
    if len(nz) <= 12:
        total = 1 << len(nz)
        hits = 0
        for mask in range(total):
            s = math.fsum(d if (mask >> i) & 1 else -d for i, d in enumerate(nz))
            hits += abs(s) >= observed
        return hits / total
    hits = 0
    getbits = rng.getrandbits
    n = len(nz)
    for _ in range(resamples):
        bits = getbits(n)
        s = math.fsum(d if (bits >> i) & 1 else -d for i, d in enumerate(nz))
        hits += abs(s) >= observed
    return (hits + 1) / (resamples + 1)
