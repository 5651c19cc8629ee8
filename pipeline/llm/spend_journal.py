"""`RUN_DIR/judge_spend.jsonl`: every judge answer paid for, one line each, written as it arrives.

A result line carries what its scores cost, but a run killed (SIGKILL)
between a judge's answer and its case's result line loses that record while
the answer stays in the verdict cache: the resume redoes the case from the
cache for nothing, and money really paid would vanish from the summary.
So each paid answer is appended here (flushed to the operating system,
which keeps it through a SIGKILL) before it is used, and a resume takes
these totals as the earlier segments' spending when they exceed what the
summary and the results show (`tracejudge.engine.runner`). A line torn by
the kill is skipped. Only counts are written: no prompt, reply or key.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

__all__ = ["SPEND", "SpendJournal", "spend_totals"]

SPEND = "judge_spend.jsonl"


class SpendJournal:
    """Appends one line per paid judge attempt to `run_dir/judge_spend.jsonl` (nothing without a run directory).

    Bookkeeping, not results: when the file cannot be written (disk full)
    the journal stops writing and the run goes on.
    """

    def __init__(self, run_dir: Path | None) -> None:
        self.path = run_dir / SPEND if run_dir is not None else None
        self._fh: IO[str] | None = None

    def add(self, input_tokens: int, output_tokens: int, cost_usd: float) -> None:
        """Record one paid attempt: prompt and completion tokens, US dollars."""
        if self.path is None or input_tokens + output_tokens <= 0:
            return
        try:
            if self._fh is None:
                self._fh = open(self.path, "a", encoding="utf-8")
            self._fh.write(json.dumps({"input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": round(cost_usd, 8)}) + "\n")
            self._fh.flush()
        except OSError:
            self.path = None

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fh is not None:
            try:
                self._fh.close()
            except OSError:
                pass
            self._fh = None


def spend_totals(run_dir: Path) -> dict[str, Any] | None:
    """`{requests, input_tokens, output_tokens, cost_usd, cost_usd_exact}` summed over the journal; `None` when there is none.

    `cost_usd` is rounded to 6 places, as the summary shows dollars; `cost_usd_exact` is the sum unrounded (each line's
    dollars are added as the decimals written, so the sum does not depend on the lines' order), for a resume to carry on
    from: adding up segments' rounded figures drifted from an unstopped run's total by up to a millionth a segment.
    """
    try:
        text = (run_dir / SPEND).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    totals: dict[str, Any] = {"requests": 0, "input_tokens": 0, "output_tokens": 0}
    usd = Decimal(0)
    for line in text.splitlines():
        try:
            row = json.loads(line, parse_float=Decimal)
            tin, tout, cost = int(row["input_tokens"]), int(row["output_tokens"]), Decimal(row["cost_usd"])
            if not cost.is_finite():
                raise ValueError("not a number")
        except (ValueError, KeyError, TypeError, ArithmeticError):
            continue  # torn by a kill, or not ours
        totals["requests"] += 1
        totals["input_tokens"] += tin
        totals["output_tokens"] += tout
        usd += cost
    totals["cost_usd"] = round(float(usd), 6)
    totals["cost_usd_exact"] = float(usd)
    return totals
