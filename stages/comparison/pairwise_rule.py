"""How a pairwise comparison's verdicts become B's wins, ties and losses, its win rate and that rate's CI.

**One order's preference.** A pairwise score's value is (3 − grade) / 2: 1 when the run shown first is better,
0.5 equal, 0 the run shown second. With `judge.samples` N the score's value is the mean of its N sample values
(`tracejudge.stages.judge.repeat.combine_samples`); with a panel and `judge.aggregate: mean` it is the mean of the
members' values, each itself a mean of its samples. The order's *preference* is the sign of the mean preference,
value − 0.5: +1 (the first shown is better) when more of the (equally weighted) verdicts prefer the first run than
the second, −1 the other way, 0 (equal) when they are split evenly or all say "equally good". For samples this is
the majority of the verdicts that prefer a run, a verdict of "equal" pulling neither way. So 5 of 5 samples and
4 of 5 samples saying "the first" are the same preference: how strongly an order prefers is not a disagreement
between the orders. (A panel's `majority`, `all` and `any` give a value whose sign is read the same way; for a side
they favour no position, `tracejudge.stages.judge.repeat._sides`: `majority` the side more members prefer, equal
when as many prefer each; `all` a side every member prefers, else equal; `any` a side some member prefers and none
opposes, else equal. A member's side is the sign of its value − 0.5, a sampled member's of its samples' mean.)

**Both orders.** Each pair is asked with A first and with B first. B's preference in an order is the preference
for B's position in it. When the two orders give the same preference it is the pair's verdict (B wins, A wins,
or a tie); when they differ the verdict flips with the order: the pair is a tie and is counted in
`position_bias_rate` = flipped pairs / judged pairs. This is the conservative swap rule of Zheng et al. (2023),
"Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena" (NeurIPS Datasets and Benchmarks), §3.4 "Swapping
positions": call the judge in both orders, declare a win only when a run is preferred in both, and call an
inconsistent pair a tie. A preference against "equal" (one order prefers a run, the other calls them equal) is
inconsistent too.

**Win rate.** B's win rate = (wins + ties / 2) / judged pairs: each pair scores 1, 0.5 or 0 for B, and the win
rate is their mean (ties counting half, as AlpacaEval's win rate counts a tie, Dubois et al. 2024, "Length-Controlled
AlpacaEval"). The README's definition is the same.

**CI.** A 95% BCa interval: the bias-corrected and accelerated bootstrap (B. Efron, "Better bootstrap confidence
intervals", JASA 82 (1987) 171–185; Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, §14.3, the
acceleration from the jackknife, eq. 14.15), B = 2000 resamples. The pairs of one case (its trials) are not
independent — the same request, often the same kind of trajectory — so the resampling unit is the *case*, all its
trials together (the cluster bootstrap of Davison & Hinkley 1997, *Bootstrap Methods and their Application*, §3.8,
resampling the first-stage units; Field & Welsh 2007, "Bootstrapping clustered data", JRSS B 69(3) 369–390): each
resample draws the judged cases with replacement and its win rate is its pairs' points over its pairs, and the
jackknife leaves out one case, all its pairs (`case_resamples`). The ends are `tracejudge.stages.judge.label_stats.bca`'s,
the κ interval's, with its rules where BCa is undefined (every resample equal: that value at both ends). It is
`scipy.stats.bootstrap(method='BCa')` with the cases as the one sample, given the same generator (the same
resamples): tests compare them. With one trial per case this is the ordinary bootstrap over pairs. Seeded
(`label_stats.rng(seed, "pairwise")`): the same comparison gives the same interval.

Why not the percentile interval it replaced (the 50th and 1950th of the 2000 ordered resamples, Efron & Tibshirani
1993 §13.3): a win rate is a mean of points bounded by 0 and 1, skewed near either end and over few cases, and the
percentile interval holds it too seldom. `benchmarks/pairwise_ci_coverage.py` draws 2000 comparisons a row from known
win rates (0.5 to 0.91, ties present, one trial a case or three alike ones) and counts the intervals holding the true
rate, both read off the same resamples. From 10 to 40 cases the percentile interval held it in 74.6–96.2% of
comparisons, under 93.5% in 39 of the 64 rows; BCa in 72.5–98.0%, under 93.5% in 14 (8 of them at 10 cases, the
others at true rates of 0.81 or more) and over 96.5% in 5 (rates 0.5 and 0.65, one trial a case, up to 30 cases: a
rate a win rate over so few pairs can equal exactly, which an end then touches). At 50 cases the percentile interval
held 92.6–95.7% (2 rows under 93.5%), BCa 94.3–96.4%; at 100, 94.0–95.8% and 94.5–96.0%. BCa held less than the
percentile interval in two rows only, at 10 cases and rates of 0.9 and 0.91, where neither holds (80%, 73–75%).

**Evidence.** The interval is *not informative* (`uninformative`: `win_rate_ci_informative: false` and
`win_rate_ci_why`, the report printing why instead of the interval) when fewer than `MIN_CASES` (50) cases are
judged — the fewest at which every row of the benchmark held 95% within ±1.5 points (about three standard errors:
a share near 95% over 2000 comparisons has one of 0.5 point); at 30 cases BCa held 92.9% and 93.3% with three alike
trials a case and true rates of 0.81 and 0.9, at 40 cases 92.7% at 0.91, at 20 cases 92.0–92.8% at rates of 0.81
or more, at 10 cases as little as 72.5% — or when every pair has one outcome (every pair won by B, or by A, or every one a
tie): every resample then has the same win rate and the interval has no width, [1.000, 1.000] over 3 cases as over
300, which says nothing of how far the true rate may be. A single pair of another outcome gives the interval width,
and over enough cases it is informative. Where nearly every pair has one outcome the interval turns on the few
that differ, and the rule does not look at how few: with B winning 94.5% of pairs and losing 1.5% (`--rates 0.965`),
three alike trials a case and 50 cases, 92.6% of the informative intervals hold the true rate (with one trial a case,
97.2%; at 100 cases, 94.3%).

**The gate.** `min_win_rate` is a threshold on the win rate itself, B's point estimate, not on a bound of its
interval, as a run's `min_mean` is on its mean: "B wins at least this share", not "B wins it beyond noise" (a bound
is a different question). But a win rate whose interval is not informative is no evidence of that share either —
3 cases all won by B are a win rate of 1.000 — so the gate FAILS then, whatever the rate, as the label gate's
`min_kappa` fails on a κ that is not informative (`tracejudge.stages.aggregate.gate`): its line says why and how many
judged cases to add (`uninformative`'s text), and `--json` has `win_rate_ok: false` beside `win_rate_ci_informative:
false` and `win_rate_ci_why`. A pass needs at least `MIN_CASES` judged cases and pairs of more than one outcome.
"""

from __future__ import annotations

from typing import Any

__all__ = ["B_SIDE", "CI_METHOD", "MIN_CASES", "RESAMPLES", "case_bootstrap", "case_resamples", "clusters", "order_preference", "pair_point",
           "uninformative"]

B_SIDE = {1: 1.0, 0: 0.5, -1: 0.0}  # B's point for B's preference: +1 B better, 0 equal, −1 A better
CI_METHOD = "case bootstrap, BCa"
MIN_CASES = 50  # judged cases below which the win rate's interval is not informative (see the module doc)
RESAMPLES = 2000  # bootstrap resamples of the win rate's interval


def order_preference(value: float | None, eps: float = 1e-9) -> int | None:
    """The preference of one order's score `value` (see the module doc): +1 the run shown first is better,
    −1 the run shown second, 0 equal; `None` without a value."""
    if value is None:
        return None
    d = float(value) - 0.5
    return 0 if abs(d) <= eps else (1 if d > 0 else -1)


def pair_point(ab: float, ba: float) -> tuple[float, bool]:
    """B's point for a pair whose A-first score has value `ab` and B-first score `ba`, and whether it flipped with
    the order: `(1.0 | 0.5 | 0.0, flipped)` by the both-orders rule of the module doc."""
    b_ab = -order_preference(ab)  # type: ignore[operator]  # A shown first: B's preference is the second's
    b_ba = order_preference(ba)
    if b_ab != b_ba:
        return 0.5, True
    return B_SIDE[b_ab], False


def clusters(points: list[tuple[Any, float]]) -> tuple[Any, Any]:
    """`(sums, counts)`: each case's points summed and counted (numpy arrays, the cases in the order of their ids as
    text), from `points` `[(case_id, point)]`, a case's trials under one case id."""
    import numpy as np

    by_case: dict[Any, list[float]] = {}
    for cid, p in points:
        by_case.setdefault(cid, []).append(float(p))
    ordered = [v for _, v in sorted(by_case.items(), key=lambda kv: str(kv[0]))]
    return np.array([sum(v) for v in ordered], dtype=float), np.array([len(v) for v in ordered], dtype=float)


def case_resamples(sums: Any, counts: Any, resamples: int, gen: Any) -> tuple[float, Any, list[float]]:
    """`(win rate, replicates, jackknife)` over cases with these point `sums` and pair `counts` (`clusters`): the win
    rate on every case; `resamples` resamples drawn with `gen` (the cases with replacement, every pair of a drawn case
    taken, as `scipy.stats.bootstrap` draws them), each one's points over its pairs; and the win rate with each case
    left out in turn (its pairs together)."""
    total, pairs = float(sums.sum()), float(counts.sum())
    draws = gen.integers(0, len(sums), size=(resamples, len(sums)))
    reps = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    jack = ((total - sums) / (pairs - counts)).tolist() if len(sums) > 1 else []  # (one case: no jackknife, `bca` takes a = 0)
    return total / pairs, reps, jack


def case_bootstrap(points: list[tuple[Any, float]], seed: int, resamples: int = RESAMPLES, level: float = 0.95) -> list[float] | None:
    """The BCa bootstrap CI of the win rate, resampling cases (`case_resamples`, `label_stats.bca`; see the module
    doc), rounded to 6 places. `points` is `[(case_id, point)]`, one per judged pair, a case's trials under one case
    id. `None` without points, or where BCa gives no interval (every resample on one side of the win rate). Seeded
    (`label_stats.rng(seed, "pairwise")`): the same comparison gives the same interval."""
    from tracejudge.stages.judge.label_stats import bca, rng

    if not points:
        return None
    estimate, reps, jack = case_resamples(*clusters(points), resamples, rng(seed, "pairwise"))
    ci, _ = bca(estimate, reps, jack, level)
    return None if ci is None else [round(ci[0], 6), round(ci[1], 6)]


def uninformative(points: list[tuple[Any, float]]) -> str | None:
    """Why the win rate's interval does not hold its 95% (see the module doc) — fewer than `MIN_CASES` judged cases,
    or every pair one outcome (every resample the same win rate) — and what to add; `None` when it is informative.
    `points` as `case_bootstrap` takes them. Not the interval's width: 60 cases all won by B give [1, 1] and are not
    informative, while 60 cases with a single tie give an interval that is."""
    if not points:
        return "no pair judged in both orders"
    cases = len({cid for cid, _ in points})
    more = MIN_CASES - cases
    add = f"compare at least {more} more case{'s' if more != 1 else ''}"
    outcomes = {p for _, p in points}
    if len(outcomes) == 1:
        (p,) = outcomes
        what = "won by B" if p > 0.5 else "won by A" if p < 0.5 else "a tie"
        every = "the one pair judged is" if len(points) == 1 else f"every one of the {len(points)} pairs judged is"
        return (f"{every} {what}: every resample has win rate {p:.3f}, so a bootstrap interval has no width and cannot say "
                f"how far the true win rate may be from it; {add if more > 0 else 'compare more cases'}")
    if more > 0:
        return (f"only {cases} judged case{'s' if cases != 1 else ''} (fewer than {MIN_CASES}): over so few cases a bootstrap "
                f"interval can miss the true win rate more than 5% of the time; {add}")
    return None
