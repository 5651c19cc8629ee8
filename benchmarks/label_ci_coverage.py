"""How often the label-agreement intervals hold the true figure: percentile against BCa on the same case resamples.

`tracejudge calibrate` gives κ (and a graded metric's quadratic-weighted κ and Spearman's ρ) a 95% interval from a
bootstrap over the labelled cases (`tracejudge.stages.judge.label_stats`). This draws samples of labelled cases from a
known population, many times over, and counts how often each interval holds the population's figure — a 95% interval
should hold it 95% of the time. Both intervals are read off the very same resamples (`label_stats.case_resamples`):
the percentile interval (the 2.5th and 97.5th percentiles, what the intervals were before) and BCa (`label_stats.bca`,
what they are now).

Populations (one verdict a case):

- `balanced`: labels pass/fail half and half, the judge right 80% of the time on either: Cohen's κ 0.6;
- `lopsided`: 20% of labels fail, the judge right 80% of the time on either: κ 0.49;
- `graded`: grades 1..5 equally often, the judge's grade the label's, or one off (20% each way, kept on the scale):
  quadratic-weighted κ and Spearman's ρ (the population's: the correlation of the mid-ranks, which the sample ρ with
  average ranks estimates).

Printed per population and number of labelled cases (10, 20, 30, 50): the share of samples whose interval holds the
true figure, percentile and BCa (over the samples with an interval: a sample of one class has none), then the share of
samples the evidence rule (`label_stats.uninformative`: fewer than `MIN_CASES` cases, or fewer than `MIN_OTHER` cases
labelled other than the most common label) leaves informative, and BCa's coverage over those. Then, for 50 cases of
a population with 6% of labels fail (the judge right 80% of the time: κ 0.25), the same shares by how many cases
are labelled fail: where `MIN_OTHER` comes from (with one, about 80% hold the true κ). Those rows are shares among the
samples that happened to have so many fail labels, and a sample with many more than the population's 3 has a κ far
off, so the last row misses more too. With 200 samples a share near 95% has a standard error of about 1.5 points; the
rows by fail labels hold fewer samples each (their count is printed). Seeded: a run prints the same figures.

Run: `python benchmarks/label_ci_coverage.py [--samples 200] [--resamples 1000] [--seed 0] [--rho]` (about 40 s of
one core; `--rho` adds Spearman's ρ of the graded population, a few minutes more).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from tracejudge.stages.judge.label_stats import MIN_CASES, MIN_OTHER, bca, case_resamples, kappa_of, spearman, uninformative

SIZES = (10, 20, 30, 50)
GRADES = np.arange(1, 6)


def binary_kappa(prevalence: float, right: float) -> float:
    """The population's Cohen's κ: labels pass with `prevalence`, the verdict equal to the label with `right`."""
    said = prevalence * right + (1 - prevalence) * (1 - right)  # the verdict's pass share
    chance = prevalence * said + (1 - prevalence) * (1 - said)
    return (right - chance) / (1 - chance)


def graded_joint() -> np.ndarray:
    """P(label grade i, verdict grade j) of the graded population."""
    joint = np.zeros((5, 5))
    for i in range(5):
        for step, p in ((-1, 0.2), (0, 0.6), (1, 0.2)):
            joint[i, min(4, max(0, i + step))] += p / 5
    return joint


def graded_truth() -> tuple[float, float]:
    """The graded population's quadratic-weighted κ and Spearman's ρ."""
    joint = graded_joint()
    rows, cols = joint.sum(axis=1), joint.sum(axis=0)
    w = (GRADES[:, None] - GRADES[None, :]) ** 2
    kappa = 1 - (w * joint).sum() / (w * np.outer(rows, cols)).sum()
    mid_y = np.cumsum(rows) - rows / 2  # mid-distribution function: P(X < x) + P(X = x) / 2
    mid_v = np.cumsum(cols) - cols / 2
    ey, ev = (rows * mid_y).sum(), (cols * mid_v).sum()
    cov = (joint * np.outer(mid_y - ey, mid_v - ev)).sum()
    rho = cov / np.sqrt((rows * (mid_y - ey) ** 2).sum() * (cols * (mid_v - ev) ** 2).sum())
    return float(kappa), float(rho)


PASS_SHARE = {"balanced": 0.5, "lopsided": 0.8, "rare": 0.94}  # the share of labels that pass, by population


def draw(population: str, n: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if population == "graded":
        cells = gen.choice(25, size=n, p=graded_joint().ravel())
        return GRADES[cells // 5], GRADES[cells % 5]
    y = gen.random(n) < PASS_SHARE[population]
    return y, np.where(gen.random(n) < 0.8, y, ~y)


def intervals(population: str, figure: str, truth: float, n: int, samples: int, resamples: int, seed: int) -> list[tuple[int, bool, bool, bool]]:
    """Per sample with an interval: `(fail labels, percentile holds truth, BCa holds it, informative)`."""
    gen = np.random.default_rng([seed, n, len(population), len(figure)])
    stat = (spearman if figure == "rho" else
            kappa_of("quadratic", GRADES.tolist()).resampled if population == "graded" else kappa_of(None, [False, True]).resampled)
    got = []
    for _ in range(samples):
        y, v = draw(population, n, gen)
        groups = [[i] for i in range(n)]
        estimate, reps, _, jack = case_resamples(stat, y, v, groups, resamples, gen)
        if estimate is None or not len(reps):
            continue  # (one class only: no figure, no interval)
        lo, hi = np.percentile(reps, [2.5, 97.5])
        ci, _ = bca(estimate, reps, jack)
        got.append((int(np.count_nonzero(y == 0)) if population != "graded" else -1, bool(lo <= truth <= hi),
                    ci is not None and ci[0] <= truth <= ci[1], uninformative(y, groups) is None))
    return got


def _share(k: int, of: int) -> str:
    return f"{k / of:6.1%}" if of else "   n/a"


def coverage(population: str, figure: str, truth: float, n: int, samples: int, resamples: int, seed: int) -> str:
    got = intervals(population, figure, truth, n, samples, resamples, seed)
    informative = [g for g in got if g[3]]
    held = _share(sum(g[2] for g in informative), len(informative))
    return (f"{population:9} {figure:6} {truth:5.2f} {n:5d} {len(got):8d} {_share(sum(g[1] for g in got), len(got))} "
            f"{_share(sum(g[2] for g in got), len(got))}   {_share(len(informative), samples)} {held}")


def by_fail_labels(samples: int, resamples: int, seed: int) -> list[str]:
    truth = binary_kappa(PASS_SHARE["rare"], 0.8)
    got = intervals("rare", "kappa", truth, 50, samples, resamples, seed)
    lines = [f"50 cases, {1 - PASS_SHARE['rare']:.0%} of labels fail (kappa {truth:.2f}), by cases labelled fail:",
             f"{'fail labels':>11} {'samples':>8} {'pctile':>6} {'BCa':>6}"]
    for lo, hi in ((1, 1), (2, 2), (3, 3), (4, 5), (6, 50)):
        rows = [g for g in got if lo <= g[0] <= hi]
        name = str(lo) if lo == hi else f"{lo}-{hi}" if hi < 50 else f"{lo}+"
        lines.append(f"{name:>11} {len(rows):8d} {_share(sum(g[1] for g in rows), len(rows))} {_share(sum(g[2] for g in rows), len(rows))}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=int, default=200, help="samples drawn per row (default 200)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples per sample (default 1000, calibrate's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rho", action="store_true", help="add Spearman's rho of the graded population (slower)")
    args = parser.parse_args()
    kappa_w, rho = graded_truth()
    rows = [("balanced", "kappa", binary_kappa(0.5, 0.8)), ("lopsided", "kappa", binary_kappa(0.8, 0.8)),
            ("graded", "kappa", kappa_w), *([("graded", "rho", rho)] if args.rho else [])]
    started = time.perf_counter()
    print(f"95% intervals over labelled cases: share of {args.samples} samples holding the true figure "
          f"({args.resamples} resamples each; informative: >= {MIN_CASES} cases and >= {MIN_OTHER} not of the most common label)")
    print(f"{'population':9} {'figure':6} {'true':>5} {'cases':>5} {'with CI':>8} {'pctile':>6} {'BCa':>6}   {'inform':>6} {'BCa':>6}")
    for population, figure, truth in rows:
        for n in SIZES:
            print(coverage(population, figure, truth, n, args.samples, args.resamples, args.seed), flush=True)
    print()
    for line in by_fail_labels(2 * args.samples, args.resamples, args.seed):
        print(line)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
