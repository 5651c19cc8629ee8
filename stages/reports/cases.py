"""Case-level material for the reports, read from `results.jsonl` in one streaming pass.

Memory is bounded by the caps, not by the run: the table keeps the
`max_rows` worst results (errored first, then lowest mean score), each
metric keeps its `worst_n` lowest scores that did not pass, and at most `max_errors` error
messages are kept (all are counted).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracejudge.engine.store import iter_results

__all__ = ["CaseRow", "CaseMaterial", "collect_cases"]


@dataclass
class CaseRow:
    """One result as the reports show it."""

    case_id: str
    trial: int
    status: str
    scores: dict[str, dict[str, Any]]
    error: str = ""
    tags: list[str] = field(default_factory=list)

    def rank(self, keys: list[str]) -> float:
        """Lower is worse: errored results rank -1, else the mean of the computed values."""
        if self.status != "ok":
            return -1.0
        vals = [s["value"] for k in keys if (s := self.scores.get(k)) and s.get("value") is not None]
        return sum(vals) / len(vals) if vals else -0.5


@dataclass
class CaseMaterial:
    """Rows for the table, worst cases per metric, and the errors."""

    rows: list[CaseRow]
    total: int
    worst: dict[str, list[CaseRow]]
    errors: list[CaseRow]
    error_kinds: Counter[str]
    trials: int


def _plausible(res: dict[str, Any]) -> bool:
    # What the reports compute with, checked cheaply (no model validation per line): scores are
    # objects whose value is a number or null, the trial an integer.
    scores = res.get("scores") or {}
    if not isinstance(scores, dict) or not isinstance(res.get("trial", 0), int):
        return False
    for s in scores.values():
        if not isinstance(s, dict):
            return False
        v = s.get("value")
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            return False
    return True


def _row(res: dict[str, Any]) -> CaseRow:
    err = res.get("error") or {}
    msg = ""
    if err:
        where = ":".join(str(x) for x in (err.get("file"), err.get("line")) if x)
        fld = f" [{err['field']}]" if err.get("field") else ""
        msg = f"{err.get('kind', '')}: {err.get('message', '')}{fld}" + (f" ({where})" if where else "")
    scores = {}
    for k, s in (res.get("scores") or {}).items():
        if isinstance(s, dict):
            scores[k] = {"value": s.get("value"), "passed": s.get("passed"), "reason": str(s.get("reason", ""))}
    return CaseRow(str(res["case_id"]), int(res.get("trial", 0)), str(res.get("status", "ok")), scores, msg, list(res.get("tags") or []))


def collect_cases(
    run_dir: Path, metric_keys: list[str], *, max_rows: int = 2000, worst_n: int = 10, max_errors: int = 50,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> CaseMaterial:
    """Stream `RUN_DIR/results.jsonl` once and keep what the reports show.

    `on_result` sees every result dict as it streams by (the JUnit writer
    rides along, so the reports read the results once). Rows are returned
    worst first. Ties keep file order (a sequence number
    breaks them), so the same file always gives the same report.
    """
    table: list[tuple[float, int, CaseRow]] = []  # max-heap by (-rank) via negation
    worst: dict[str, list[tuple[float, int, CaseRow]]] = {k: [] for k in metric_keys}
    errors: list[CaseRow] = []
    kinds: Counter[str] = Counter()
    total = 0
    max_trial = 0
    for seq, res in enumerate(iter_results(run_dir)):
        if not _plausible(res):
            continue  # not a result (an edited value): the summary's rebuild named its line and left it out too
        if on_result is not None:
            on_result(res)
        total += 1
        row = _row(res)
        max_trial = max(max_trial, row.trial)
        if row.status != "ok":
            kinds[row.status] += 1
            if len(errors) < max_errors:
                errors.append(row)
        r = row.rank(metric_keys)
        # Keep the max_rows smallest ranks: a heap of (-rank, -seq) whose root is the best kept row.
        item = (-r, -seq, row)
        if len(table) < max_rows:
            heapq.heappush(table, item)
        elif item > table[0][:2]:
            heapq.heapreplace(table, item)
        if row.status == "ok":
            for k in metric_keys:
                s = row.scores.get(k)
                if s and s.get("value") is not None and s.get("passed") is not True:  # only cases that fell short
                    it = (-float(s["value"]), -seq, row)
                    h = worst[k]
                    if len(h) < worst_n:
                        heapq.heappush(h, it)
                    elif it[:2] > h[0][:2]:
                        heapq.heapreplace(h, it)
    rows = [r for _, _, r in sorted(table, key=lambda x: (x[0], x[1]), reverse=True)]
    worst_rows = {k: [r for _, _, r in sorted(h, key=lambda x: (x[0], x[1]), reverse=True)] for k, h in worst.items()}
    return CaseMaterial(rows, total, worst_rows, errors, kinds, max_trial + 1)
