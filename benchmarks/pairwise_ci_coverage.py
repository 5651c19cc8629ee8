"""How often the pairwise win rate's 95% interval holds the true win rate: percentile against BCa on the same resamples.

`tracejudge compare A --vs B --judge CONFIG` gives B's win rate, (wins + ties / 2) / judged pairs, a 95% interval from
a bootstrap over the judged cases, a case's trials together (`tracejudge.stages.comparison.pairwise_rule`). This draws
comparisons from a known population, many times over, and counts how often each interval holds the population's win
rate — a 95% interval should hold it 95% of the time. Both intervals are read off the very same case resamples
(`pairwise_rule.case_resamples`, 2000 of them, as `compare` draws): the percentile interval (the 50th and 1950th of
the 2000 ordered resamples' win rates, what the interval was before) and BCa (`label_stats.bca`, what it is now).

Populations: B's true win rate 0.5, 0.65, 0.8 and 0.9, a pair a B win, a tie or an A win with the probabilities
(0.4, 0.2, 0.4), (0.55, 0.2, 0.25), (0.7, 0.2, 0.1) and (0.85, 0.1, 0.05) — ties present at every rate — and beside
each a rate just off it, 0.51, 0.66, 0.81 and 0.91 ((0.41, 0.2, 0.39), (0.56, 0.2, 0.24), (0.71, 0.2, 0.09),
(0.86, 0.1, 0.04)). The first four lie on the grid a win rate over 10, 20, ... pairs takes (steps of 1 / (2 pairs)), so
an interval can end exactly on the true rate and hold it by touching it; a true rate is seldom on that grid (0.5, runs
equally good, is), and the rates off it show coverage without that luck. With one trial a case each pair is drawn
from the probabilities; with three trials a case, the case's own probabilities are drawn first (Dirichlet with these
means and concentration 1), then its three pairs from those: the trials of a case are alike (the intraclass
correlation of a pair's point is 1 / (1 + 1) = 0.5), as two runs' trials on one request are. (`--rates 0.965` runs a
population of few losses and ties, (0.945, 0.04, 0.015): where most comparisons are a few cases short of one outcome.)

Printed per population, trials a case and number of cases (10, 20, 30, 40, 50, 100): the share of comparisons whose
interval holds the true win rate, percentile and BCa, then the share the evidence rule (`pairwise_rule.uninformative`:
fewer than `MIN_CASES` cases, or every pair one outcome) leaves informative, and BCa's coverage over those. With
2000 comparisons a row a share near 95% has a standard error of about 0.5 points, so a row within 93.5%–96.5% holds
its 95%. Seeded: a run prints the same figures.

Run: `python benchmarks/pairwise_ci_coverage.py [--samples 2000] [--resamples 2000] [--seed 0] [--rates 0.5,0.65,...]
[--sizes 10,20,...]` (about 8 minutes of one core).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from tracejudge.stages.comparison.pairwise_rule import MIN_CASES, case_resamples, uninformative
from tracejudge.stages.judge.label_stats import bca

SIZES = (10, 20, 30, 40, 50, 100)
OUTCOMES = {  # true win rate: (B wins, ties, A wins)
    0.5: (0.4, 0.2, 0.4), 0.51: (0.41, 0.2, 0.39), 0.65: (0.55, 0.2, 0.25), 0.66: (0.56, 0.2, 0.24),
    0.8: (0.7, 0.2, 0.1), 0.81: (0.71, 0.2, 0.09), 0.9: (0.85, 0.1, 0.05), 0.91: (0.86, 0.1, 0.04), 0.965: (0.945, 0.04, 0.015),
}
RATES = (0.5, 0.51, 0.65, 0.66, 0.8, 0.81, 0.9, 0.91)
POINT = np.array([1.0, 0.5, 0.0])  # B's point for a win, a tie, a loss
CONCENTRATION = 1.0  # of the Dirichlet a case's own probabilities are drawn from (three trials a case)


def draw(rate: float, cases: int, trials: int, gen: np.random.Generator) -> list[tuple[int, float]]:
    """One comparison: `[(case, B's point)]`, `trials` pairs a case."""
    probs = np.array(OUTCOMES[rate])
    own = np.tile(probs, (cases, 1)) if trials == 1 else gen.dirichlet(CONCENTRATION * probs, size=cases)
    u = gen.random((cases, trials))
    kind = (u[:, :, None] > np.cumsum(own, axis=1)[:, None, :2]).sum(axis=2)  # 0 win, 1 tie, 2 loss
    return [(c, float(POINT[kind[c, t]])) for c in range(cases) for t in range(trials)]


def percentile(reps: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval as `compare` gave it before: the B·α-th and B·(1 − α)-th of the B ordered replications."""
    reps = np.sort(reps)
    alpha = (1 - level) / 2
    return reps[max(0, math.ceil(len(reps) * alpha - 1e-9) - 1)], reps[min(len(reps) - 1, math.ceil(len(reps) * (1 - alpha) - 1e-9) - 1)]


def coverage(rate: float, trials: int, cases: int, samples: int, resamples: int, seed: int) -> tuple[float, float, float, float, int]:
    """`(percentile holds, BCa holds, informative, BCa holds among the informative, comparisons without a BCa interval)`."""
    gen = np.random.default_rng([seed, int(rate * 100), trials, cases])
    held_p = held_b = informative = held_bi = none = 0
    for _ in range(samples):
        points = draw(rate, cases, trials, gen)
        sums = np.bincount([c for c, _ in points], weights=[p for _, p in points], minlength=cases)
        counts = np.full(cases, float(trials))
        estimate, reps, jack = case_resamples(sums, counts, resamples, gen)
        lo, hi = percentile(reps)
        held_p += lo <= rate <= hi
        ci, _ = bca(estimate, reps, jack)
        none += ci is None
        ok = ci is not None and ci[0] <= rate <= ci[1]
        held_b += ok
        if uninformative(points) is None:
            informative += 1
            held_bi += ok
    return held_p / samples, held_b / samples, informative / samples, held_bi / informative if informative else math.nan, none


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=int, default=2000, help="comparisons drawn per row (default 2000)")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples per comparison (default 2000, compare's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rates", default=",".join(map(str, RATES)), help="true win rates, of " + ", ".join(map(str, OUTCOMES)))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="numbers of cases")
    args = parser.parse_args()
    rates = [float(x) for x in args.rates.split(",")]
    sizes = [int(x) for x in args.sizes.split(",")]
    started = time.perf_counter()
    print(f"95% win-rate intervals over judged cases: share of {args.samples} comparisons holding the true win rate "
          f"({args.resamples} resamples each; informative: >= {MIN_CASES} cases and not every pair one outcome)")
    print(f"{'win rate':>8} {'(win, tie, loss)':>17} {'trials':>6} {'cases':>5} {'pctile':>7} {'BCa':>7}   {'inform':>7} {'BCa':>7}")
    for rate in rates:
        for trials in (1, 3):
            for cases in sizes:
                p, b, inf, bi, none = coverage(rate, trials, cases, args.samples, args.resamples, args.seed)
                probs = "(" + ", ".join(f"{x:g}" for x in OUTCOMES[rate]) + ")"
                print(f"{rate:8.3g} {probs:>17} {trials:6d} {cases:5d} {p:7.1%} {b:7.1%}   {inf:7.1%} {'n/a' if bi != bi else format(bi, '.1%'):>7}"
                      + (f"  ({none} without a BCa interval)" if none else ""), flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
