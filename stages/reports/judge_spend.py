"""The judge's spending of a run that has no summary.json, rebuilt from the files that hold it (`tracejudge report`).

A run killed before its first summary (or one whose summary.json was deleted) still has what its judge paid: every
answer paid for is in `judge_spend.jsonl` (`tracejudge.llm.spend_journal`, written as each came, before it was used),
and each result line's scores say what they cost. The journal is the fuller of the two (it also holds answers whose case
the kill cut before its line was written), so it is taken when it holds at least as many tokens, as a resume takes it
(`engine.run_summary._prior_judge`); the block says which file its figures came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracejudge.core.records import CaseResult
from tracejudge.stages.judge.calls.stats import sum_usd

__all__ = ["LineSpend", "rebuilt_spend"]


class LineSpend:
    """What the standing result lines say the judge spent: `add` each, then `totals()`."""

    def __init__(self) -> None:
        self.requests = self.input_tokens = self.output_tokens = self.cache_hits = 0
        self.costs: list[float | None] = []

    def add(self, result: CaseResult) -> None:
        """Count one standing result's judge scores: the requests the judge answered (not the cache), their tokens and
        dollars (None once one is unknown), and the requests the cache answered (`cached_requests`; a multi-item
        request the cache answered whole once, on its first item, as the judge counts it)."""
        for score in result.scores.values():
            info = score.judge
            if info is None:
                continue
            batch = score.details.get("batch") if isinstance(score.details, dict) else None
            if not isinstance(batch, dict) or batch.get("cached") or not batch.get("position"):
                self.cache_hits += info.cached_requests
            if info.cached:
                continue
            self.requests += max(0, info.requests - info.cached_requests)
            self.input_tokens += info.input_tokens
            self.output_tokens += info.output_tokens
            self.costs.append(info.cost_usd)

    def totals(self) -> dict[str, Any]:
        """`{requests, input_tokens, output_tokens, cost_usd}` (dollars None when a score's are unknown)."""
        cost = sum_usd(self.costs, None)
        return {"requests": self.requests, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cost_usd": None if cost is None else round(cost, 6)}


def rebuilt_spend(run_dir: Path, lines: LineSpend) -> dict[str, Any]:
    """The judge block's spending keys for a run without summary.json: `requests`, `input_tokens`, `output_tokens`,
    `cost_usd` (US dollars; None when unknown), `cache_hits` (from the lines), `spend_source` (`judge_spend.jsonl` or
    `results.jsonl`) and `spend_note`, the sentence saying where they came from and what they leave out. Empty when
    neither file holds any spending (a run the cache answered whole still gets its `cache_hits`)."""
    from tracejudge.llm.spend_journal import SPEND, spend_totals

    from_lines = lines.totals()
    paid = spend_totals(run_dir)

    def tokens(d: dict[str, Any]) -> int:
        return int(d["input_tokens"]) + int(d["output_tokens"])

    out: dict[str, Any] = {"cache_hits": lines.cache_hits} if lines.cache_hits else {}
    if paid is not None and tokens(paid) > 0 and tokens(paid) >= tokens(from_lines):
        source, figures = SPEND, {k: v for k, v in paid.items() if k != "cost_usd_exact"}  # (dollars shown rounded, as a run's summary)
        more = tokens(paid) - tokens(from_lines)
        extra = (f", {more:,} tokens more than the result lines show (answers paid for whose case had no result line yet)"
                 if more else "")
        note = (f"no summary.json: the judge's requests, tokens and dollars are rebuilt from {SPEND}, every answer the run paid "
                f"for, written as it came{extra}; a request still in flight, or cut off by a stop, is not in it, nor are the "
                "judge's other counters (retries, 429s, what the cache saved)")
    elif tokens(from_lines) > 0:
        source, figures = "results.jsonl", from_lines
        note = ("no summary.json: the judge's requests, tokens and dollars are rebuilt from the scores of results.jsonl "
                f"({SPEND} is missing or holds less); an answer paid for whose case had no result line is not in them, nor are "
                "the judge's other counters (retries, 429s, what the cache saved)")
    else:
        return out
    return {**out, **figures, "spend_source": source, "spend_note": note}
