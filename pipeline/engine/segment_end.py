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
an empty file whose name holds the segment, its process, the errno and
`lines_at_end` is left instead (it takes no data block), and the resume (and
`report`) read it back (`read_failed_ends`); only when not even that can be
made is the segment read as `killed`.

A segment stopped by a write error elsewhere (its summary, a report, a spool
file) with results.jsonl intact is recorded the same way by its last
checkpoint (`close_segment`), before the summary is tried: a segment that
could not write its summary is still reported with its cause, not as killed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from pathlib import Path
from typing import Any

from tracejudge.core.errors import leaves, os_error
from tracejudge.engine import store

__all__ = ["ELAPSED_NOTE", "LIVE_FILES", "close_segment", "closing_checkpoint_failed", "elapsed_note", "killed_elapsed", "last_sign_of_life",
           "failed_write", "read_failed_ends", "record_failed_end", "settle_failed_end", "settle_segments"]

# The files of a run directory only a running segment writes, each at a moment it was alive: its fsynced result groups
# (results.jsonl, results.idx), its checkpoints, and the judge answers it paid for (judge_spend.jsonl, flushed as each
# came). `report` and `view` write none of them.
LIVE_FILES = ("results.jsonl", "results.idx", "checkpoint.json", "judge_spend.jsonl")

# What a killed segment's `elapsed_s` measures (its record's `elapsed_until`): the time to its last write, or to its last
# checkpoint when no file says more.
ELAPSED_NOTE = {"last_write": "from its start to its last write to the run directory (results, checkpoint or a paid judge answer)",
                "last_checkpoint": "from its start to its last checkpoint"}


# The errors only a write meets (space, quota, file size limit, a read-only file system); a permission or I/O error may be
# a read's, which is no write error to record.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


def close_segment(journal: Any, ended: str, crashed: BaseException | None) -> tuple[str, BaseException | None]:
    """Close `journal` (a `RunJournal`) for a segment that `ended` (`finished`, `interrupted`) having raised `crashed`
    (None: it did not); returns how it ended and what stopped it.

    A segment stopped by a failed write (`WRITE_ERRNOS`) is recorded `ended: error` with the error in its checkpoint
    record; so is one whose last group of results could not be written as it closed, which then ends with that error
    (the caller raises it once its summary and reports are tried).
    """
    failed = next((e for e in leaves(crashed) if isinstance(e, OSError) and e.errno in WRITE_ERRNOS), None) if crashed else None
    if failed is not None:
        ended = "error"
        journal.segment.update(failed_write(failed))
    journal.close(ended)
    if crashed is None and (journal.broken or journal.close_error) is not None:
        return "error", journal.broken or journal.close_error
    return ended, crashed


def failed_write(exc: OSError) -> dict[str, str]:
    """A segment record's account of the write error that stopped it: `{"error": "OSError: [Errno 28] …"}`, and
    `"error_file"`, the file it could not write, when the error names one (`reports.superseded.failed_stop` says both)."""
    return {"error": os_error(exc), **({"error_file": str(exc.filename)} if exc.filename is not None else {})}


def record_failed_end(run_dir: Path, segment: dict[str, Any], exc: OSError, lines_at_end: int, started: float) -> dict[str, Any] | None:
    """Mark `segment` (the running segment's record) `ended: error` in `run_dir`'s checkpoint; the record written, or None.

    `started` is the segment's `time.monotonic()` start. The checkpoint is left as it is when it is missing or unreadable.
    """
    path = run_dir / store.CHECKPOINT
    try:
        body = json.loads(store.read_text(path))
    except (OSError, ValueError):
        return None
    segments = body.get("segments") if isinstance(body, dict) else None
    if not isinstance(segments, list):
        return None
    last = segments[-1] if segments and isinstance(segments[-1], dict) else None
    ours = last is not None and last.get("segment") == segment.get("segment") and last.get("pid") == segment.get("pid")
    record = dict(last) if ours else {**segment, "results": 0}  # unrecorded: its results are all in the tail
    record.update(ended="error", **failed_write(exc), lines_at_end=lines_at_end, elapsed_s=round(time.monotonic() - started, 3))
    if ours:
        segments[-1] = record
    else:
        segments.append(record)
    with contextlib.suppress(OSError):
        store.atomic_write_text(path, json.dumps(body, separators=(",", ":")) + "\n", durable=False)  # (compact, as written)
        return record
    _mark_failed_end(run_dir, record, exc)
    return None


# An empty file whose name says how a segment ended, left when not even the checkpoint's small rewrite fits: it needs
# no data block, only a name and an inode, which a disk full of data still has (`read_failed_ends` reads it back).
_MARK = ".ended-on-write-error"


def _mark_failed_end(run_dir: Path, record: dict[str, Any], exc: OSError) -> None:
    # `.ended-on-write-error.SEGMENT.PID.ERRNO.LINES_AT_END`; its modification time is when the segment ended.
    parts = (record.get("segment"), record.get("pid"), exc.errno, record.get("lines_at_end"))
    if all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts):
        with contextlib.suppress(OSError):
            os.close(os.open(run_dir / ".".join([_MARK, *map(str, parts)]), os.O_CREAT | os.O_WRONLY, 0o644))


def read_failed_ends(run_dir: Path, segments: list[dict[str, Any]], *, tidy: bool = False) -> None:
    """In place, before `settle_segments`: a last segment still `running` whose failed end was marked (the checkpoint's
    rewrite did not fit the disk, `record_failed_end`) becomes `ended: error` with its error and `lines_at_end`, as that
    rewrite would have recorded it, and not `killed`. `tidy` (a resume, which holds the run): marks that describe no
    such segment, settled by an earlier resume, are removed. Never raises."""
    from datetime import datetime

    last = segments[-1] if segments and isinstance(segments[-1], dict) else None
    try:
        marks = list(run_dir.glob(_MARK + ".*"))
    except OSError:
        return
    for mark in marks:
        parts = mark.name[len(_MARK) + 1:].split(".")
        if len(parts) == 4 and all(p.isdigit() for p in parts) and last is not None and last.get("ended") == "running" \
                and [str(last.get("segment")), str(last.get("pid"))] == parts[:2]:
            code = int(parts[2])
            last.update(ended="error", error=f"OSError: [Errno {code}] {os.strerror(code)}", lines_at_end=int(parts[3]))
            with contextlib.suppress(OSError, ValueError, TypeError):
                since = mark.stat().st_mtime - datetime.fromisoformat(last["started_at"]).timestamp()
                if since >= 0:
                    last["elapsed_s"] = round(since, 3)
        elif tidy:
            with contextlib.suppress(OSError):
                mark.unlink()


def closing_checkpoint_failed(journal: Any, exc: OSError) -> None:
    """The closing checkpoint of `journal` (a `RunJournal`) could not be written (a full disk), its results on disk: kept
    as its `close_error`, which `close_segment` returns for the caller to raise once the summary and reports are tried,
    and recorded as the segment's end (`record_failed_end`) when that small rewrite still fits. `exc` is raised as it
    is when it is no write error (`WRITE_ERRNOS`)."""
    if exc.errno not in WRITE_ERRNOS:
        raise exc
    journal.close_error = exc
    record = record_failed_end(journal.run_dir, journal.segment, exc, journal._writer.lines, journal._t0)
    if record is not None:  # (else the resume records it `killed`, as a run that could write nothing more)
        journal.segment.update(ended="error", **failed_write(exc))


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


def settle_segments(segments: list[dict[str, Any]], tail: int, rebuilt: bool, lines: int = 0, last_write: float | None = None) -> bool:
    """On resume, in place: attribute the `tail` results written after the checkpoint (which covers `lines`) to the segment
    that wrote them, and mark a dead segment killed, its elapsed time up to `last_write` (`last_sign_of_life`) when that is
    later than its record's. `rebuilt`: the checkpoint was not trusted, so its records get no tail. Returns whether
    `segments` changed.

    The caller holds the run's lock (a resume), or reads a run no process holds (`tracejudge report`): either way the
    segment still recorded `running` is dead."""
    if settle_failed_end(segments, lines, tail if not rebuilt else 0):
        return True
    last = segments[-1] if segments else None
    if last is not None and last.get("ended") == "running":
        last["ended"] = "killed"
        killed_elapsed(last, last_write)
        if not rebuilt:
            last["results"] = int(last.get("results", 0)) + tail
        return True
    if tail and not rebuilt:
        # Killed before its first checkpoint: its time and usage are unknown.
        segments.append({"segment": 1 + (int(last.get("segment", 0)) if last else 0), "started_at": None,
                         "elapsed_s": None, "results": tail, "ended": "killed", "usage": {}})
        return True
    return False


def last_sign_of_life(run_dir: Path) -> float | None:
    """The latest modification time (seconds since the epoch) of `run_dir`'s `LIVE_FILES`; None when none exists.

    Read by a resume before it writes anything: the last moment the segment before it is known to have been alive.
    """
    times = []
    for name in LIVE_FILES:
        with contextlib.suppress(OSError):
            times.append((run_dir / name).stat().st_mtime)
    return max(times, default=None)


def killed_elapsed(segment: dict[str, Any], last_write: float | None) -> None:
    """Set a killed `segment`'s `elapsed_s` to the time from its `started_at` to `last_write` when that is longer than
    the one its last checkpoint recorded, and say in `elapsed_until` which it is (`ELAPSED_NOTE`).

    The checkpoint records the time only when it is rewritten (about every 30 s, or at the first result), so a segment
    killed between two kept the time to its first: a run's `elapsed_s_total` left out most of what it ran. The files it
    wrote after that checkpoint say it was alive later. The time after its last write, up to the kill, is not known.
    Wall-clock times: a `last_write` before its start (a clock set back) is ignored.
    """
    from datetime import datetime

    recorded = segment.get("elapsed_s")
    recorded = float(recorded) if isinstance(recorded, (int, float)) and not isinstance(recorded, bool) else None
    started = segment.get("started_at")
    segment["elapsed_until"] = "last_checkpoint"
    if last_write is None or not isinstance(started, str):
        return
    try:
        since = last_write - datetime.fromisoformat(started).timestamp()
    except ValueError:
        return
    if since >= 0 and (recorded is None or since > recorded):
        segment["elapsed_s"] = round(since, 3)
        segment["elapsed_until"] = "last_write"


def elapsed_note(segments: list[dict[str, Any]]) -> str | None:
    """The sentence saying what `elapsed_s_total` measures when some of `segments` did not end on their own (killed, or
    stopped by a write error), else None: a finished or interrupted segment's time is measured to its end."""
    parts = []
    for seg in segments:
        if seg.get("ended") not in ("killed", "error"):
            continue
        n = seg.get("segment")
        if seg.get("ended") == "error":
            parts.append(f"segment {n} (stopped by a write error) to that error")
        elif seg.get("elapsed_s") is None or seg.get("started_at") is None:
            parts.append(f"segment {n} (killed before its first checkpoint) is not counted: its start is not known")
        else:
            parts.append(f"segment {n} (killed) {ELAPSED_NOTE.get(seg.get('elapsed_until'), ELAPSED_NOTE['last_checkpoint'])}")
    if not parts:
        return None
    return ("elapsed_s_total sums the segments' elapsed_s, each measured to its end, except: " + "; ".join(parts)
            + "; the time between a killed segment's last write and the kill is not known")
