"""The judge's spending of a run that has no summary.json, rebuilt from the files that hold it (`tracejudge report`).

A run killed before its first summary (or one whose summary.json was deleted) still has what its judge paid: every
attempt sent and every answer paid for is in `judge_spend.jsonl` (`tracejudge.llm.spend_journal`, written as each was
sent and as each answer came, before it was used), and each result line's scores say what they cost. The journal is the
fuller of the two (it also holds answers whose case the kill cut before its line was written, and the requests in flight
at the kill, at their estimated prompt tokens), so it is taken when it holds at least as many tokens, as a resume takes it
(`engine.run_summary._prior_judge`); the block says which file its figures came from.

`in_flight_line` is the sentence the terminal and report.md show under the judge's spending when some of it is the
estimate of requests in flight at a stop (the judge block's `in_flight_at_stop`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracejudge.core.records import CaseResult
from tracejudge.stages.judge.calls.stats import sum_usd

__all__ = ["LineSpend", "in_flight_line", "rebuilt_spend"]


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
        stopped = paid["in_flight_at_stop"]
        # (dollars shown rounded, as a run's summary; the estimate of requests in flight at a stop only when there were)
        source, figures = SPEND, {k: v for k, v in paid.items() if k != "cost_usd_exact" and (k != "in_flight_at_stop" or stopped["requests"])}
        more = max(0, tokens(paid) - stopped["input_tokens_estimated"] - tokens(from_lines))
        extra = (f", {more:,} tokens more than the result lines show (answers paid for whose case had no result line yet)"
                 if more else "")
        note = (f"no summary.json: the judge's requests, tokens and dollars are rebuilt from {SPEND}, every request the run sent "
                f"and every answer it paid for, written as they went and came{extra}; the judge's other counters (retries, 429s, "
                "what the cache saved) are not in it")
    elif tokens(from_lines) > 0:
        source, figures = "results.jsonl", from_lines
        note = ("no summary.json: the judge's requests, tokens and dollars are rebuilt from the scores of results.jsonl "
                f"({SPEND} is missing or holds less); an answer paid for whose case had no result line is not in them, nor are "
                "the judge's other counters (retries, 429s, what the cache saved)")
    else:
        return out
    return {**out, **figures, "spend_source": source, "spend_note": note}


def in_flight_line(summary: dict[str, Any]) -> str | None:
    """The sentence saying how many of the judge's requests were in flight at a stop (sent, no answer recorded: a kill)
    and that the tokens and dollars counted for them are estimates; `None` when there were none.

    A summary a run wrote counts only earlier segments' requests as in flight (its own are all settled when it writes
    it). Spending rebuilt by `report` from the journal alone (`spend_source`, no summary.json) may be a run's still going
    on, whose requests in flight are not stopped: the sentence says either."""
    j = summary.get("judge") or {}
    stopped = j.get("in_flight_at_stop") or {}
    n = int(stopped.get("requests") or 0)
    if not n:
        return None
    cost = stopped.get("cost_usd_estimated")
    money = "cost unknown" if cost is None else f"${cost:.4f}"
    were = "judge request was" if n == 1 else "judge requests were"
    why = ("sent with no answer recorded (in flight at a kill, or still in flight if the run is going on)" if j.get("spend_source")
           else "in flight at a stop (sent, then the run was killed before an answer was recorded)")
    return (f"{n:,} {were} {why}: counted in the requests, and in the tokens and dollars at their prompts' estimated size: "
            f"{int(stopped.get('input_tokens_estimated') or 0):,} input tokens, {money} (no output tokens)")
