"""The end of a segment stopped by a write error, kept beside checkpoint.json when the checkpoint's rewrite does not fit.

`segment_end.record_failed_end` rewrites the whole checkpoint to say the segment ended `error`. On a nearly full disk
that rewrite (tens of KB at a few hundred cases: every segment's usage, the aggregate's state) may not fit where a
few hundred bytes still do; the segment was then read as killed (SIGKILL) although it had stopped on a full disk.
`segment_end.json` holds only what that rewrite would have changed in the segment's record (`ENDED_FIELDS`), written
atomically (a temporary file renamed), so a reader sees either no record or a whole one.

Readers apply it to the checkpoint's segments (`with_end_record`) before they settle them: the resume
(`journal_open`), `report` and the viewer (`segments_read.settled_segments`), and `run_state`. It applies only to
the segment it names: the checkpoint's last record with the same number and process id, still `running`, or the one
segment after the last (a segment that stopped before its first checkpoint). A record that names neither is stale (a
later segment's checkpoint holds the end it describes) and is ignored; a later segment removes it once its own
checkpoint is written (`drop_end_record`), as the checkpoint then holds the end it described. A run directory without
the file (every earlier version's) reads as before.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from tracejudge.engine import store

__all__ = ["END_RECORD", "ENDED_FIELDS", "drop_end_record", "with_end_record", "write_end_record"]

END_RECORD = "segment_end.json"

# The fields of a segment's record the failed end sets (`record_failed_end`), and those naming the segment it is of.
ENDED_FIELDS = ("ended", "error", "lines_at_end", "elapsed_s")
_NAMING = ("segment", "pid", "started_at")


def write_end_record(run_dir: Path, record: dict[str, Any]) -> bool:
    """Write `record` (a segment's record as `record_failed_end` made it: `segment`, `pid`, `ended: error`, `error`,
    `lines_at_end`, `elapsed_s` …) to `run_dir/segment_end.json`, atomically; whether it was written (never raises an
    `OSError`: a disk with no room even for this leaves the segment to be read as killed)."""
    body = {k: record[k] for k in (*_NAMING, *ENDED_FIELDS) if k in record}
    try:
        store.atomic_write_text(run_dir / END_RECORD, json.dumps(body, separators=(",", ":")) + "\n", durable=False)
    except OSError:
        return False
    return True


def _read(run_dir: Path) -> dict[str, Any] | None:
    try:
        body = json.loads(store.read_text(run_dir / END_RECORD))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or body.get("ended") != "error" or not isinstance(body.get("error"), str):
        return None
    if not all(isinstance(body.get(k), int) and not isinstance(body.get(k), bool) for k in ("segment", "lines_at_end")):
        return None
    return body


def with_end_record(run_dir: Path, segments: list[dict[str, Any]]) -> bool:
    """Apply `run_dir`'s `segment_end.json`, if any, to `segments` (checkpoint.json's records, changed in place): the last
    record, when it is the segment the file names and still `running`, takes its `ENDED_FIELDS`; a segment one past the
    last is appended (`results: 0`: its results are all after the checkpoint). Returns whether `segments` changed; a
    missing, unreadable or stale file (naming another segment) changes nothing."""
    body = _read(run_dir)
    if body is None:
        return False
    last = segments[-1] if segments and isinstance(segments[-1], dict) else None
    if last is not None and last.get("segment") == body["segment"]:
        if last.get("ended") != "running" or last.get("pid") != body.get("pid"):
            return False
        last.update({k: body[k] for k in ENDED_FIELDS if k in body})
        return True
    number = last.get("segment", 0) if last is not None else 0
    if not isinstance(number, int) or body["segment"] != number + 1:
        return False
    segments.append({**{k: body.get(k) for k in _NAMING}, "results": 0, "usage": {}, **{k: body[k] for k in ENDED_FIELDS if k in body}})
    return True


def drop_end_record(run_dir: Path) -> None:
    """Remove `run_dir`'s `segment_end.json`, once a checkpoint holding the end it records is written; a failure to is
    harmless (the record is then stale and ignored)."""
    with contextlib.suppress(OSError):
        (run_dir / END_RECORD).unlink(missing_ok=True)
