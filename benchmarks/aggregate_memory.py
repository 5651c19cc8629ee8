"""Aggregate stage: memory stays flat as results grow; fold and summary cost per result.

Folds N synthetic results (3 metrics, tags, one metadata breakdown, 3 trials per
case arriving interleaved, pass@k on) and reports, side by side, the peak
memory the aggregator holds (tracemalloc) against a naive aggregator that
keeps every result's scores to compute the same figures at the end.

    python benchmarks/aggregate_memory.py [N ...]     (default: 10000 50000 200000)
"""

from __future__ import annotations

import random
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _procs import guarded  # noqa: E402

from tracejudge.core.evalconfig import AggregateConfig  # noqa: E402
from tracejudge.core.records import CaseResult, Score  # noqa: E402
from tracejudge.stages.aggregate.fold import Aggregator  # noqa: E402
from tracejudge.stages.score import PassAtK  # noqa: E402

METRICS = ["calls", "trajectory", "correct"]


def results(n: int, trials: int = 3):
    rng = random.Random(0)
    cases = n // trials
    window: list[CaseResult] = []
    for c in range(cases):
        for t in range(trials):
            scores = {m: Score(value=v, passed=v >= 0.7, reason="r") for m in METRICS for v in [rng.random()]}
            window.append(CaseResult(case_id=f"case-{c}", trial=t, tags=[f"t{c % 5}"], metadata={"domain": f"d{c % 7}"}, scores=scores))
        if len(window) >= 64:  # trials of ~20 cases in flight at once, shuffled like a worker pool would
            rng.shuffle(window)
            yield from window[:32]
            del window[:32]
    rng.shuffle(window)
    yield from window


def measure(n: int) -> tuple[float, float, float, float]:
    def fresh() -> Aggregator:
        return Aggregator(METRICS, trials=3, pass_at_k=[PassAtK(metric="calls", k=2)], settings=AggregateConfig(group_by=["domain"]))

    agg = fresh()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for r in results(n):
        agg.fold(r)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    # time without tracemalloc, which slows allocation-heavy code several-fold; result construction excluded
    items = list(results(min(n, 20_000)))
    timed = fresh()
    t0 = time.perf_counter()
    for r in items:
        timed.fold(r)
    fold_s = (time.perf_counter() - t0) * n / len(items)
    t0 = time.perf_counter()
    agg.summary()
    summary_s = time.perf_counter() - t0

    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = [{m: s.value for m, s in r.scores.items()} for r in results(n)]  # what a hold-everything aggregator keeps
    naive_peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del kept
    return peak / 2**20, naive_peak / 2**20, 1e6 * fold_s / n, summary_s


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sizes", type=int, nargs="*", metavar="N", help="results to fold per row (default: 10000 50000 200000)")
    sizes = p.parse_args().sizes or [10_000, 50_000, 200_000]
    print(f"{'results':>9} | {'streaming peak MiB':>18} | {'hold-all peak MiB':>17} | {'ratio':>6} | {'fold µs/result':>14} | {'summary s':>9}")
    print("-" * 89)

    def rows() -> None:
        # Each row is printed as soon as it is measured: a failed size leaves the rows above it.
        for n in sizes:
            peak, naive, per, summ = measure(n)
            print(f"{n:>9,} | {peak:>18.2f} | {naive:>17.2f} | {naive / peak:>6.1f} | {per:>14.1f} | {summ:>9.2f}", flush=True)

    guarded(rows, lambda: None)


if __name__ == "__main__":
    main()
