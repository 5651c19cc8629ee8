"""A segment that stopped on a write error (disk full, file size limit) says so: `ended: error` with the cause.

Such a segment cannot write its final checkpoint: its aggregate holds results
that never reached `results.jsonl`, and a checkpoint claims only what is on
disk. Left as it was, the checkpoint's record of the segment still said
`running`, and the next run took it for a dead process (`ended: killed`).
`record_failed_end` rewrites only the segment list of the checkpoint already
on disk (every other field still describes the files exactly): the segment
becomes `ended: error` with `error` (`OSError: [Errno 28] No space left on
device`) and `lines_at_end`, the result lines on disk when it stopped. The
resume (`settle_failed_end`) attributes to it the results it wrote after that
checkpoint, and any lines past `lines_at_end` to a later segment that died
before its first checkpoint. Writing can itself fail on a full disk (the
rewrite is small, and the failed group was cut off, freeing its blocks): then
nothing changes and the resume records `killed`, as before.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from tracejudge.core.errors import os_error
from tracejudge.engine import store

__all__ = ["record_failed_end", "settle_failed_end"]


def record_failed_end(run_dir: Path, segment: dict[str, Any], exc: OSError, lines_at_end: int, started: float) -> dict[str, Any] | None:
    """Mark `segment` (the running segment's record) `ended: error` in `run_dir`'s checkpoint; the record written, or None.

    `started` is the segment's `time.monotonic()` start. The checkpoint is left as it is when it is missing or unreadable.
    """
    path = run_dir / store.CHECKPOINT
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    segments = body.get("segments") if isinstance(body, dict) else None
    if not isinstance(segments, list):
        return None
    last = segments[-1] if segments and isinstance(segments[-1], dict) else None
    ours = last is not None and last.get("segment") == segment.get("segment") and last.get("pid") == segment.get("pid")
    record = dict(last) if ours else {**segment, "results": 0}  # unrecorded: its results are all in the tail
    record.update(ended="error", error=os_error(exc), lines_at_end=lines_at_end, elapsed_s=round(time.monotonic() - started, 3))
    if ours:
        segments[-1] = record
    else:
        segments.append(record)
    with contextlib.suppress(OSError):
        store.atomic_write_text(path, json.dumps(body, indent=1) + "\n", durable=False)
        return record
    return None


def settle_failed_end(segments: list[dict[str, Any]], lines: int, tail: int) -> bool:
    """On resume: give a last segment that `ended: error` the `tail` results after the checkpoint's `lines` it wrote.

    Lines past its `lines_at_end` were written later, by a segment killed before its first checkpoint: they get their
    own `killed` record. Returns whether `segments` changed (False when the last segment did not end in an error).
    """
    last = segments[-1] if segments else None
    if last is None or last.get("ended") != "error" or "lines_at_end" not in last:
        return False
    at_end = last.pop("lines_at_end")
    mine = tail if not isinstance(at_end, int) else max(0, min(tail, at_end - lines))
    last["results"] = int(last.get("results", 0)) + mine
    if tail > mine:
        segments.append({"segment": 1 + int(last.get("segment", 0)), "started_at": None, "elapsed_s": None, "results": tail - mine,
                         "ended": "killed", "usage": {}})
    return True
