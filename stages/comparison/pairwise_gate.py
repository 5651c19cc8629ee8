"""The judge's checks on a pairwise comparison (`tracejudge compare A --vs B --judge CONFIG`), as a run has them.

A judge that failed every request left "0 pairs judged" and a PASS (exit 0, `--json` verdict PASS beside
`judge.gate_failed: true`); one that failed some was never gated. The checks are the run's own
(`tracejudge.stages.aggregate.gate_judge`) over the judge stage's summary, with the same setting and default
(`judge.max_error_share`, 0): there a judged result is one pair asked in one order. A comparison in which no pair
was judged in both orders fails too, whatever the share allows: a comparison of nothing is no evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracejudge.stages.aggregate.gate import Check
from tracejudge.stages.aggregate.gate_judge import budget_check, judge_error_check

if TYPE_CHECKING:
    from tracejudge.stages.comparison.pairwise import PairwiseResult

__all__ = ["judge_checks"]


def judge_checks(res: PairwiseResult, asked: int) -> list[dict[str, Any]]:
    """`[{name, ok, detail}]`: `judge max_error_share` and `judge budget` as a run's gate has them, over the `asked`
    verdicts (each pair in both orders), and `pairs judged` when no pair was judged in both orders."""
    summary = {"judge": res.judge, "results": asked, "status": {"skipped_budget": res.not_judged_verdicts.get("skipped_budget", 0)}}
    checks = [c for c in (judge_error_check(summary), budget_check(summary)) if c is not None]
    if not res.pairs:
        why = ", ".join(f"{k} {n}" for k, n in sorted(res.not_judged_verdicts.items())) or "none not judged"
        checks.append(Check("pairs judged", False, f"no pair was judged in both orders (of the {asked} verdicts asked: {why}), "
                                                   "so there is no win rate: no evidence is not a pass"))
    return [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in checks]
