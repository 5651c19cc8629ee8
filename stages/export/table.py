"""Runs as tables: one row per (case, trial, metric), written to Parquet or CSV.

Columns (`COLUMNS`, in order; `run` only when several run directories are exported):

| column | type | from |
| --- | --- | --- |
| `run` | string | the run directory's name (several directories or shards) |
| `case_id`, `trial` | string, int64 | the result |
| `metric` | string | the score's key; null for a result without scores (`invalid_input`, `target_error`) |
| `value` | double | the score's value (null: not computed, see `reason`) |
| `passed` | bool | the metric's threshold applied |
| `status` | string | `ok`, `invalid_input`, `target_error`, `judge_error`, `skipped_budget`, `rate_limited` |
| `error_kind` | string | `error.kind` of a result that failed |
| `reason` | string | the score's reason (redacted in results already), else the error's message |
| `judge_model` | string | the judge model of a judge metric's score |
| `input_tokens`, `output_tokens` | int64 | the judge tokens this score cost |
| `cost_usd` | double | the judge dollars this score cost (null: unknown, a judge model without a price billed it) |
| `tags` | list<string> (CSV: JSON text) | the case's tags |
| `config_hash` | string | `manifest.json`'s `config_hash` |
| `run_started_at` | timestamp[ms, UTC] (CSV: ISO 8601) | the first segment's start (`summary.json`, else `checkpoint.json`) |

In CSV a text cell that a spreadsheet program would run as a formula (it starts with
`=`, `+`, `-`, `@`, a tab or a carriage return) is written after a single quote (OWASP's
defence against CSV injection); numbers stay numbers. Parquet holds the text as it is.

Results are read streaming and written in batches of `BATCH` rows, so memory
stays flat whatever the size of the run.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from tracejudge.core.destination import replacing
from tracejudge.engine import store
from tracejudge.stages.export import OnBad, require, run_results

__all__ = ["BATCH", "COLUMNS", "csv_cell", "run_info", "rows", "write_csv", "write_csv_to", "write_parquet"]

COLUMNS = ["run", "case_id", "trial", "metric", "value", "passed", "status", "error_kind", "reason", "judge_model",
           "input_tokens", "output_tokens", "cost_usd", "tags", "config_hash", "run_started_at"]
BATCH = 10_000


def _started(run_dir: Path) -> datetime | None:
    for name in (store.SUMMARY, store.CHECKPOINT):
        try:
            data = json.loads((run_dir / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        starts = [s.get("started_at") for s in (data.get("segments") or []) if isinstance(s, dict) and s.get("started_at")]
        if starts:
            return datetime.fromisoformat(min(starts).replace("Z", "+00:00")).astimezone(UTC)
    return None


def run_info(run_dir: Path, label: str | None = None) -> dict[str, Any]:
    """What every row of `run_dir` shares: `{"run", "config_hash", "run_started_at"}` (an aware `datetime`, or None).

    `run` is `label` when given (`run_labels`), else the directory's name."""
    manifest = store.read_manifest(run_dir, strict=False) or {}
    return {"run": label or Path(run_dir).name, "config_hash": manifest.get("config_hash"), "run_started_at": _started(Path(run_dir))}


def run_labels(run_dirs: Sequence[Path]) -> list[str]:
    """The `run` value of each of `run_dirs`: its name, or, where names repeat (`runs/a/demo`, `runs/b/demo`), as many
    of its path's last parts as tell it from the others (`a/demo`, `b/demo`), so rows of two runs never share a label."""
    parts = [Path(d).resolve().parts for d in run_dirs]
    labels = []
    for i, mine in enumerate(parts):
        k = 1
        while k < len(mine) and any(other[-k:] == mine[-k:] for j, other in enumerate(parts) if j != i and other != mine):
            k += 1
        labels.append("/".join(mine[-k:]))
    return labels


def rows(run_dirs: Sequence[Path], on_bad: OnBad | None = None) -> Iterator[dict[str, Any]]:
    """Every row of every run directory, in results order (see the module docstring).

    A line that is not a result (not JSON, or a score of NaN or `"high"` typed in by hand) gives no row:
    `on_bad(results_file, line_number, "field: what is wrong")` hears of it when given.
    Raises `TracejudgeError` for a directory without `results.jsonl`.
    """
    for run_dir, label in zip(run_dirs, run_labels(run_dirs)):
        info = run_info(run_dir, label)
        for result in run_results(run_dir, on_bad):
            error = result.get("error") or {}
            base = {"case_id": str(result["case_id"]), "trial": int(result.get("trial") or 0), "status": result.get("status"),
                    "error_kind": error.get("kind"), "tags": [str(t) for t in result.get("tags") or []], **info}
            scores = result.get("scores") or {}
            if not scores:
                yield {**base, "metric": None, "value": None, "passed": None, "reason": error.get("message"), "judge_model": None,
                       "input_tokens": None, "output_tokens": None, "cost_usd": None}
            for name, score in scores.items():
                judge = score.get("judge") or {}
                yield {**base, "metric": name, "value": score.get("value"), "passed": score.get("passed"), "reason": score.get("reason"),
                       "judge_model": judge.get("model"), "input_tokens": judge.get("input_tokens"),
                       "output_tokens": judge.get("output_tokens"), "cost_usd": judge.get("cost_usd")}


def _batches(run_dirs: Sequence[Path], on_bad: OnBad | None) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows(run_dirs, on_bad):
        batch.append(row)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _columns(with_run: bool) -> list[str]:
    return COLUMNS if with_run else COLUMNS[1:]


def write_parquet(run_dirs: Sequence[Path], path: Path, on_bad: OnBad | None = None) -> int:
    """Write every row of `run_dirs` to the Parquet file `path` (replaced atomically); returns the row count.
    A line that is not a result is left out and passed to `on_bad` (`rows`).

    A `run` column is added when there are several directories. Raises
    `MissingExtra` without pyarrow (`pip install 'tracejudge[stores]'`).
    """
    pa = require("pyarrow")
    pq = require("pyarrow.parquet")
    fields = {"run": pa.string(), "case_id": pa.string(), "trial": pa.int64(), "metric": pa.string(), "value": pa.float64(),
              "passed": pa.bool_(), "status": pa.string(), "error_kind": pa.string(), "reason": pa.string(),
              "judge_model": pa.string(), "input_tokens": pa.int64(), "output_tokens": pa.int64(), "cost_usd": pa.float64(),
              "tags": pa.list_(pa.string()), "config_hash": pa.string(), "run_started_at": pa.timestamp("ms", tz="UTC")}
    names = _columns(len(run_dirs) > 1)
    schema = pa.schema([(n, fields[n]) for n in names])
    count = 0
    with replacing(path) as tmp, pq.ParquetWriter(str(tmp), schema) as writer:  # type: ignore[attr-defined]
        for batch in _batches(run_dirs, on_bad):
            writer.write_table(pa.Table.from_pylist([{n: r[n] for n in names} for r in batch], schema=schema))  # type: ignore[attr-defined]
            count += len(batch)
        if count == 0:
            writer.write_table(schema.empty_table())
    return count


def write_csv(run_dirs: Sequence[Path], path: Path, on_bad: OnBad | None = None) -> int:
    """Write every row of `run_dirs` to the CSV file `path` (replaced atomically); returns the row count.
    A line that is not a result is left out and passed to `on_bad` (`rows`).

    Header row = the column names; `tags` is JSON text, `run_started_at` ISO
    8601, null is the empty field; a text cell starting with `=`, `+`, `-`, `@`, a
    tab or a carriage return starts with `'` (`csv_cell`).
    """
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        return write_csv_to(run_dirs, fh, on_bad)


# What makes a spreadsheet program read a cell as a formula (OWASP, "CSV Injection"): a text cell starting so is
# written after a single quote, which the program shows as text and does not run.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# Text already starting with the quote gets one more, so no two texts write the same cell (`'=1` and `=1`).
_QUOTED = (*_FORMULA_START, "'")


def csv_cell(value: Any) -> Any:
    """`value` as `write_csv_to` hands it to `csv.writer`: None → `""`; text starting with `=`, `+`, `-`, `@`, a tab or a
    carriage return → the same text after `'` (so no spreadsheet program runs it as a formula), and so does text that
    starts with `'` itself (so `'=1` and `=1` stay two cells: drop one leading quote from a quoted cell to read the
    text back); anything else (numbers, negative ones included, and booleans) as it is."""
    if value is None:
        return ""
    if type(value) is str and value.startswith(_QUOTED):
        return "'" + value
    return value


def write_csv_to(run_dirs: Sequence[Path], fh: TextIO, on_bad: OnBad | None = None) -> int:
    """Write every row of `run_dirs` as CSV to the open text file `fh` (stdout for `--to csv -`); returns the row count.
    A line that is not a result is left out and passed to `on_bad` (`rows`).

    Text cells a spreadsheet program would run as a formula are written after a single quote (`csv_cell`)."""
    names = _columns(len(run_dirs) > 1)
    count = 0
    writer = csv.writer(fh)
    writer.writerow(names)
    for batch in _batches(run_dirs, on_bad):
        for row in batch:
            row = {**row, "tags": json.dumps(row["tags"], ensure_ascii=False),
                   "run_started_at": row["run_started_at"].isoformat() if row["run_started_at"] else None}
            writer.writerow([csv_cell(row[n]) for n in names])
        count += len(batch)
    return count
