"""Case-level material for the reports, read from `results.jsonl` in one streaming pass.

Memory is bounded by the caps, not by the run: the table keeps the
`max_rows` worst results (errored first, then lowest mean score), each
metric keeps its `worst_n` lowest scores that did not pass, and at most `max_errors` error
messages are kept (all are counted), and as many of the results whose agent run ended in an error
(`metadata.run_error`, as the result line holds it: masked; shown cut to `RUN_ERROR_CHARS`).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic_core
from tracejudge.core.records import CaseResult, Status
from tracejudge.core.shown_calls import capped_calls
from tracejudge.engine.rendered import Finished
from tracejudge.engine.store import iter_results
from tracejudge.stages.reports.table_json import table_json

__all__ = ["RUN_ERROR_CHARS", "CaseCollector", "CaseMaterial", "CaseRow", "collect_cases", "finished_dict", "result_dict", "run_error_of"]

# A run error is shown cut to this many characters (a traceback runs to pages); the result line keeps it whole.
RUN_ERROR_CHARS = 500


@dataclass
class CaseRow:
    """One result as the reports show it."""

    case_id: str
    trial: int
    status: str
    scores: dict[str, dict[str, Any]]
    error: str = ""
    tags: list[str] = field(default_factory=list)
    run_error: str = ""  # the error the case's agent run ended in (`run_error_of`); the result is scored all the same

    def rank(self, keys: list[str]) -> float:
        """Lower is worse: errored results rank -1, else the mean of the computed values."""
        if self.status != "ok":
            return -1.0
        vals = [s["value"] for k in keys if (s := self.scores.get(k)) and s.get("value") is not None]
        return sum(vals) / len(vals) if vals else -0.5


@dataclass
class CaseMaterial:
    """The table's `shown` rows (worst first, as JSON: `table_json.table_json`), worst cases per metric, and the errors."""

    rows_json: str
    shown: int
    total: int
    worst: dict[str, list[CaseRow]]
    errors: list[CaseRow]
    error_kinds: Counter[str]
    trials: int
    run_errors: list[CaseRow] = field(default_factory=list)  # the first results whose agent run ended in an error
    run_error_total: int = 0  # all of them


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


def run_error_of(metadata: Any) -> str:
    """The error a result's agent run ended in (its `metadata.run_error`), as the reports show it: one text cut to
    `RUN_ERROR_CHARS` (an ellipsis says so); "" for none. The line holds it masked (`redact_labels`), as all its metadata."""
    said = metadata.get("run_error") if isinstance(metadata, dict) else None
    if not said:
        return ""
    text = said if isinstance(said, str) else pydantic_core.to_json(said).decode()
    return text if len(text) <= RUN_ERROR_CHARS else text[: RUN_ERROR_CHARS - 1] + "…"


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
            # (a reason listing a fanned-out step's every call is shown capped, as the viewer shows the step)
            scores[k] = {"value": s.get("value"), "passed": s.get("passed"), "reason": capped_calls(str(s.get("reason", "")))}
    return CaseRow(str(res["case_id"]), int(res.get("trial", 0)), str(res.get("status", "ok")), scores, msg, list(res.get("tags") or []),
                   run_error_of(res.get("metadata")))


def result_dict(result: CaseResult) -> dict[str, Any]:
    """The parts of `result` the reports read, as `iter_results` gives them from its written line.

    Built from the object, without serializing or parsing: case id, trial,
    status, duration, tags, metadata (the object: read for its `run_error`), the error (kind, message, file, line,
    field) and each score's value, verdict and reason. A value JSON cannot carry (NaN,
    infinity) is written `null`, so it is `None` here too.
    """
    err = result.error
    scores = {}
    for k, sc in result.scores.items():
        v = sc.value
        scores[k] = {"value": v if v is None or math.isfinite(v) else None, "passed": sc.passed, "reason": sc.reason}
    return {
        "case_id": result.case_id, "trial": result.trial, "status": Status(result.status).value, "duration_s": result.duration_s,
        "tags": result.tags, "metadata": result.metadata, "scores": scores,
        "error": None if err is None else {"kind": err.kind, "message": err.message, "file": err.file, "line": err.line, "field": err.field},
    }


def finished_dict(done: Finished) -> dict[str, Any]:
    """`result_dict` of a result rendered where it was scored: its metadata and scores' reasons read back from its rendered line."""
    middle = pydantic_core.from_json(b"{" + done.rendered.middle + b"}")
    scores = middle["scores"]
    return {
        "case_id": done.case_id, "trial": done.trial, "status": "ok", "duration_s": done.duration_s, "tags": done.tags,
        "metadata": middle["metadata"],
        "scores": {k: {"value": s.get("value"), "passed": s.get("passed"), "reason": s.get("reason", "")} for k, s in scores.items()},
        "error": None,
    }


class CaseCollector:
    """Keeps, result by result, what the reports show (see `CaseMaterial`); memory bounded by the caps.

    `feed(res)` takes one result dict (as `iter_results` yields it, or
    `result_dict` makes it) in file order; `on_result` sees each one too (the
    JUnit writer rides along). A run feeds its results as it writes them, so
    its reports need not re-read results.jsonl; `collect_cases` feeds a
    file's. Rows come out worst first; ties keep feeding order (a sequence
    number breaks them), so the same results always give the same report.
    """

    def __init__(self, metric_keys: list[str], *, max_rows: int = 2000, worst_n: int = 10, max_errors: int = 50,
                 on_result: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.metric_keys = list(metric_keys)
        self.max_rows, self.worst_n, self.max_errors = max_rows, worst_n, max_errors
        self.on_result = on_result
        self.table: list[tuple[float, int, CaseRow]] = []  # max-heap by (-rank) via negation
        self.worst: dict[str, list[tuple[float, int, CaseRow]]] = {k: [] for k in metric_keys}
        self.errors: list[CaseRow] = []
        self.kinds: Counter[str] = Counter()
        self.run_errors: list[CaseRow | Finished] = []  # the first `max_errors` results whose agent run ended in an error
        self.run_error_total = 0
        self.total = 0
        self.max_trial = 0
        self.seq = 0

    def feed(self, res: dict[str, Any]) -> None:
        """Count one plausible result dict (the caller checks `_plausible` for dicts read from a file)."""
        seq = self.seq
        self.seq += 1
        if self.on_result is not None:
            self.on_result(res)
        self.total += 1
        trial = int(res.get("trial", 0))
        if trial > self.max_trial:
            self.max_trial = trial
        status = str(res.get("status", "ok"))
        scores = res.get("scores") or {}
        keys = self.metric_keys
        row: CaseRow | None = None
        if status != "ok":
            self.kinds[status] += 1
            if len(self.errors) < self.max_errors:
                row = _row(res)
                self.errors.append(row)
            r = -1.0
        else:  # `CaseRow.rank`, without making the row of a result no table keeps
            vals = [s["value"] for k in keys if isinstance(s := scores.get(k), dict) and s and s.get("value") is not None]
            r = sum(vals) / len(vals) if vals else -0.5
        # Keep the max_rows smallest ranks: a heap of (-rank, -seq) whose root is the best kept row.
        table = self.table
        if len(table) < self.max_rows:
            heapq.heappush(table, (-r, -seq, row := row or _row(res)))
        elif (-r, -seq) > table[0][:2]:
            heapq.heapreplace(table, (-r, -seq, row := row or _row(res)))
        if status == "ok":
            for k in keys:
                s = scores.get(k)
                if isinstance(s, dict) and s and s.get("value") is not None and s.get("passed") is not True:  # only cases that fell short
                    h = self.worst[k]
                    key = (-float(s["value"]), -seq)
                    if len(h) < self.worst_n:
                        heapq.heappush(h, (*key, row := row or _row(res)))
                    elif key > h[0][:2]:
                        heapq.heapreplace(h, (*key, row := row or _row(res)))
        metadata = res.get("metadata")
        if isinstance(metadata, dict) and metadata.get("run_error"):  # the agent's run ended in an error: listed apart too
            self.run_error_total += 1
            if len(self.run_errors) < self.max_errors:
                self.run_errors.append(row or _row(res))

    def feed_finished(self, done: Finished) -> None:
        """`feed` for a result rendered where it was scored (`engine.rendered`; status `ok`), without making its dict.

        Its row (from `finished_dict`) is made only for what the tables hold at the end; `on_result` is
        not called (the JUnit writer takes such results itself, `JunitWriter.feed_finished`).
        """
        self.feed_finished_many([done])

    def feed_finished_many(self, batch: list[Finished]) -> None:
        """`feed_finished` each result of `batch`, in order, at once (the loop's names held locally).

        The heaps keep each result itself: most entries are pushed out again, so its row is made only at the end
        (`material`). A later result's -seq is below every kept one, so it outranks an entry only by a strictly
        greater first item.
        """
        keys, isfinite, worst, table, max_rows, worst_n = self.metric_keys, math.isfinite, self.worst, self.table, self.max_rows, self.worst_n
        push, replace = heapq.heappush, heapq.heapreplace
        seq, max_trial = self.seq, self.max_trial
        for done in batch:
            if done.trial > max_trial:
                max_trial = done.trial
            if done.metadata.get("run_error"):  # (one lookup: most results have none) its agent's run ended in an error
                self.run_error_total += 1
                if len(self.run_errors) < self.max_errors:
                    self.run_errors.append(done)
            get = done.scores.get
            vals = []
            for k in keys:
                c = get(k)
                if c is not None:
                    v, p = c
                    if v is not None and isfinite(v):
                        vals.append(v)
                        if p is not True:  # fell short: into the metric's worst now (its heap is its own: no order with the table's)
                            h = worst[k]
                            if len(h) < worst_n:
                                push(h, (-float(v), -seq, done))  # type: ignore[arg-type]
                            elif -float(v) > h[0][0]:
                                replace(h, (-float(v), -seq, done))  # type: ignore[arg-type]
            r = sum(vals) / len(vals) if vals else -0.5  # (`sum`, as `CaseRow.rank`: the same float to the last bit)
            if len(table) < max_rows:
                push(table, (-r, -seq, done))  # type: ignore[arg-type]
            elif -r > table[0][0]:
                replace(table, (-r, -seq, done))  # type: ignore[arg-type]
            seq += 1
        self.total += len(batch)
        self.seq, self.max_trial = seq, max_trial

    def material(self) -> CaseMaterial:
        """What was fed, as the reports take it."""
        made: dict[int, CaseRow] = {}

        def row(r: CaseRow | Finished) -> CaseRow:
            if type(r) is not Finished:
                return r  # type: ignore[return-value]
            got = made.get(id(r))
            if got is None:
                got = made[id(r)] = _row(finished_dict(r))
            return got

        worst_rows = {k: [row(r) for _, _, r in sorted(h, key=lambda x: (x[0], x[1]), reverse=True)] for k, h in self.worst.items()}
        entries = [r for _, _, r in sorted(self.table, key=lambda x: (x[0], x[1]), reverse=True)]
        return CaseMaterial(table_json(entries, row), len(entries), self.total, worst_rows, self.errors, self.kinds, self.max_trial + 1,
                            [row(r) for r in self.run_errors], self.run_error_total)


def collect_cases(
    run_dir: Path, metric_keys: list[str], *, max_rows: int = 2000, worst_n: int = 10, max_errors: int = 50,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> CaseMaterial:
    """Stream `RUN_DIR/results.jsonl` once and keep what the reports show (a `CaseCollector` fed every result).

    `on_result` sees every result dict as it streams by (the JUnit writer
    rides along, so the reports read the results once). Rows are returned
    worst first. Ties keep file order, so the same file always gives the same report.
    """
    collector = CaseCollector(metric_keys, max_rows=max_rows, worst_n=worst_n, max_errors=max_errors, on_result=on_result)
    for res in iter_results(run_dir):
        if _plausible(res):
            collector.feed(res)
        else:  # not a result (an edited value): the summary's rebuild named its line and left it out too
            collector.seq += 1
    return collector.material()
