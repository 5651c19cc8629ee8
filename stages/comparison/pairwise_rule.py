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

**CI.** A 95% percentile bootstrap CI (Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, §13.3: the
endpoints are the B·α-th and B·(1 − α)-th of the B ordered replications, here B = 2000, α = 0.025: the 50th and
the 1950th). The pairs of one case (its trials) are not independent — the same request, often the same kind of
trajectory — so the resampling unit is the *case*, all its trials together (the cluster bootstrap of Davison &
Hinkley 1997, *Bootstrap Methods and their Application*, §3.8, resampling the first-stage units; Field & Welsh
2007, "Bootstrapping clustered data", JRSS B 69(3)), and each
replication's win rate is its pairs' points over its pairs. With one trial per case this is the ordinary
bootstrap over pairs. Seeded: the same comparison gives the same interval.
"""

from __future__ import annotations

import math
import random
from typing import Any

__all__ = ["B_SIDE", "case_bootstrap", "order_preference", "pair_point"]

B_SIDE = {1: 1.0, 0: 0.5, -1: 0.0}  # B's point for B's preference: +1 B better, 0 equal, −1 A better


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


def case_bootstrap(points: list[tuple[Any, float]], seed: int, resamples: int = 2000, level: float = 0.95) -> list[float] | None:
    """The percentile bootstrap CI of the mean point, resampling cases (see the module doc). `points` is
    `[(case_id, point)]`, one per judged pair, a case's trials under one case id. `None` without points."""
    if not points:
        return None
    by_case: dict[Any, list[float]] = {}
    for cid, p in points:
        by_case.setdefault(cid, []).append(p)
    clusters = [(sum(v), len(v)) for _, v in sorted(by_case.items(), key=lambda kv: str(kv[0]))]
    rng = random.Random(f"{seed}:pairwise")
    k = len(clusters)
    reps: list[float] = []
    for _ in range(resamples):
        s = n = 0.0
        for _ in range(k):
            cs, cn = clusters[rng.randrange(k)]
            s += cs
            n += cn
        reps.append(s / n)
    reps.sort()
    alpha = (1 - level) / 2
    lo = max(0, math.ceil(resamples * alpha - 1e-9) - 1)
    hi = min(resamples - 1, math.ceil(resamples * (1 - alpha) - 1e-9) - 1)
    return [round(reps[lo], 6), round(reps[hi], 6)]
