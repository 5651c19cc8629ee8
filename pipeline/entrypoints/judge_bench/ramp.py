"""The ramp: concurrency 1, 2, 4, … until throughput stops growing, a 429 comes back or latency doubles."""

from __future__ import annotations

import time
from typing import Any

from tracejudge.entrypoints.judge_bench.sender import Attempt, Bench

__all__ = ["GROWTH", "MIN_SAMPLES", "STEP_S", "pct", "ramp"]

GROWTH = 1.25
# A ramp level ends after its requests or this many seconds (a paced level is a plateau).
STEP_S = 2.0
# Fewest answers that measure a ramp level: a level cut short with fewer is never recommended.
MIN_SAMPLES = 8


def pct(values: list[float], p: float) -> float | None:
    """The `p` quantile of `values`: the sorted value at index floor(p × n), capped at the last; None for no values."""
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))]


def _step(level: int, attempts: list[Attempt]) -> dict[str, Any]:
    ok = [a for a in attempts if a.outcome == "ok"]
    span = (max(a.start_s + a.latency_s for a in attempts) - min(a.start_s for a in attempts)) if attempts else 0.0
    return {"level": level, "requests": len(attempts), "answered": len(ok), "rate_limited": sum(a.outcome in ("rate_limited", "quota") for a in attempts),
            "throughput_rps": len(ok) / span if span > 0 else 0.0, "p95_s": pct([a.latency_s for a in ok], 0.95)}


async def ramp(bench: Bench, start_level: int, max_level: int) -> tuple[int, list[dict[str, Any]], str]:
    """Levels 1, 2, 4, …: (best level, per-level figures, why the ramp stopped).

    A level recommended has at least `MIN_SAMPLES` answers: one cut short by `--requests` or the cost cap is
    reported but never chosen over the last level measured in full (its one or two requests say nothing of its
    throughput), and the reason says the bench ran out.
    """
    steps: list[dict[str, Any]] = []
    level = start_level
    while True:
        until = time.monotonic() - bench.t0 + STEP_S
        got = _step(level, await bench.level("ramp", level, max(12, 3 * level), until))
        steps.append(got)
        prev = steps[-2] if len(steps) > 1 else None
        if got["answered"] == 0 and got["requests"]:
            # (before the caps: no answer at all is the server's doing, which more requests or dollars would not change)
            kinds = sorted({a.outcome for a in bench.state.attempts[-got["requests"]:]})
            early = bench.state.stop == "errors" and not prev  # (`sender.NO_ANSWER_STOP`: the bench's first requests all failed)
            bench.state.stop = bench.state.stop or "errors"
            return (prev or got)["level"], steps, (f"no answer at {level} in flight ({', '.join(kinds)})"
                                                   + (f": the bench's first {got['requests']} requests all failed, so it sent no more" if early else ""))
        if bench.state.stop and got["answered"] < MIN_SAMPLES and bench.state.stop in ("requests", "cost cap"):
            cap = "--requests" if bench.state.stop == "requests" else "--max-cost-usd"
            best = prev["level"] if prev is not None else level
            return best, steps, (f"ran out of requests ({cap}) at {level} in flight after {got['answered']} answers, too few to measure it "
                                 f"(at least {MIN_SAMPLES}); {best} is the last level measured in full: raise {cap} to measure further")
        if got["answered"] == 0:  # (nothing sent at this level: a cap reached before it)
            return (prev or got)["level"], steps, f"{bench.state.stop} reached during the ramp"
        if got["rate_limited"]:
            return (prev or got)["level"], steps, f"429s at {level} in flight"
        base_p95 = steps[0]["p95_s"]
        if prev is not None and base_p95 and got["p95_s"] and got["p95_s"] > 2 * base_p95:
            return prev["level"], steps, f"p95 latency doubled at {level} in flight"
        if prev is not None and got["throughput_rps"] < GROWTH * prev["throughput_rps"]:
            return prev["level"], steps, f"throughput stopped growing at {level} in flight"
        if bench.state.stop:  # measured in full before the cap: it still grew, so it is the best seen
            return level, steps, f"{bench.state.stop} reached during the ramp"
        if level * 2 > max_level:
            return level, steps, f"reached the ramp's ceiling of {max_level} in flight"
        level *= 2
