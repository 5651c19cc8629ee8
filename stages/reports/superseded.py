"""An earlier segment's reports, made to say the run is being written before a later segment's first new result is on disk.

A segment killed with SIGKILL (a CI timeout), or ended by `os._exit` in a metric run in the main process, writes no
reports: `summary.json`, `junit.xml`, `report.md` and `report.html` kept the last finished segment's PASS over a
`results.jsonl` that held results none of them counted, and a CI step publishing `junit.xml` or reading
`summary.json` saw that PASS. A segment that opens a directory holding reports (`earlier_reports`) writes its results
through `result_writer`'s writer, which calls `mark_superseded` once, before its first group of lines reaches the disk:

- `report.md` and `report.html` are removed;
- `junit.xml` becomes one `run` test case in `<error>` (INTERRUPTED): a later segment is writing results that these
  reports do not count; if this stays, that segment was killed; and the command that resumes it;
- `summary.json` keeps every figure (the judge's spending, which a resume reads back: `engine.run_summary._prior_judge`),
  with `complete: false`, `stopped` `{"how": "killed", "reason"}` and the verdict INTERRUPTED, which `report`, the
  gate, the viewer and the shard merge read as an unfinished run. `stopped` names no `segment`: a kill has no cause
  that could be known; `report` rebuilds the reports from the results, INTERRUPTED (exit 130), with the same `stopped`
  (`killed_stop`), whether a later segment was killed or the run's first.

The segment's own end (`finish_run`, or `finish_stopped` after an error or an abort) rewrites them all, as before. A
segment that writes no result (a resume of a finished run) changes nothing: the directory stays byte- and
mtime-identical. Once per segment, nothing per case.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from tracejudge.engine import store
from tracejudge.engine.result_writer import ResultWriter

__all__ = ["REPORTS", "earlier_reports", "failed_stop", "killed_stop", "mark_superseded", "result_writer"]

REPORTS = (store.SUMMARY, "junit.xml", "report.md", "report.html")


def earlier_reports(run_dir: Path) -> bool:
    """Does `run_dir` hold any of an earlier segment's reports (`REPORTS`)?"""
    return any((Path(run_dir) / name).exists() for name in REPORTS)


def result_writer(run_dir: Path, segment: dict[str, Any], **kwargs: Any) -> ResultWriter:
    """The `ResultWriter` of a segment (`segment`: its live record, `RunJournal.segment`; `kwargs`: the writer's).

    When `run_dir` holds an earlier segment's reports, one that calls `mark_superseded` before its first group of lines.
    """
    if not earlier_reports(run_dir):
        return ResultWriter(run_dir, **kwargs)
    return _MarkingWriter(run_dir, before_first=partial(mark_superseded, Path(run_dir), segment), **kwargs)


class _MarkingWriter(ResultWriter):
    """A `ResultWriter` that calls `before_first` once, before the first group of lines it writes (by `flush` or `aflush`).

    Called on the calling thread (the event loop's, for `aflush`): nothing else is written meanwhile, so no result line
    reaches the disk before it returns. (It writes two small files once a segment.)
    """

    def __init__(self, run_dir: Path, *, before_first: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(run_dir, **kwargs)
        self.before_first: Callable[[], None] | None = before_first

    def _mark_once(self) -> None:
        if self.before_first is not None and self.pending and self.broken is None:
            hook, self.before_first = self.before_first, None
            hook()

    def flush(self) -> None:
        self._mark_once()
        super().flush()

    async def aflush(self) -> None:
        self._mark_once()
        await super().aflush()


def mark_superseded(run_dir: Path, segment: dict[str, Any]) -> None:
    """Make the reports in `run_dir` say that segment `segment` (its record: number, pid, command) is writing results.

    `report.md` and `report.html` are removed, then `junit.xml` and `summary.json` replaced (atomically). Never raises
    an `Exception`: the segment's results matter more; what could not be replaced is logged, and a `junit.xml` that
    could not be replaced is removed, as `finish_stopped` does.
    """
    from tracejudge.core.log import get_logger
    from tracejudge.stages.aggregate.gate_coverage import incomplete_detail
    from tracejudge.stages.reports.junit import stopped_junit

    resume = _resume(run_dir, segment)
    who = f"segment {segment.get('segment')} (process {segment.get('pid')})"
    why = (f"a later segment of this run, {who}, is writing new results that these reports do not count; if this stays, "
           f"that segment was killed before it finished (SIGKILL, a CI timeout, os._exit): resume with: {resume}")
    failed: list[str] = []
    try:
        for name in ("report.md", "report.html"):
            (run_dir / name).unlink(missing_ok=True)
    except OSError as err:
        failed.append(f"{type(err).__name__}: {err}")
    try:
        store.atomic_write_text(run_dir / "junit.xml", stopped_junit("INTERRUPTED", why))
    except OSError as err:
        failed.append(f"{type(err).__name__}: {err}")
        try:
            (run_dir / "junit.xml").unlink(missing_ok=True)  # (better no junit.xml than the earlier segment's PASS)
        except OSError:
            pass
    summary = _summary(run_dir / store.SUMMARY)
    if summary is not None:
        # Every figure stays (a resume reads the judge's spending back from here); what says how the run stands changes.
        summary["complete"] = False
        summary["stopped"] = {"how": "killed", "reason": f"{who} was writing new results that these figures do not count and did "
                              f"not finish; if no process holds the run directory, it was killed: resume with: {resume}"}
        summary["verdict"] = {"verdict": "INTERRUPTED", "checks": [{"name": "run complete", "ok": False, "detail": incomplete_detail(summary)}]}
        try:
            store.atomic_write_text(run_dir / store.SUMMARY, json.dumps(summary, indent=2) + "\n")
        except OSError as err:
            failed.append(f"{type(err).__name__}: {err}")
    if failed:
        get_logger("tracejudge.reports").warning("the reports of an earlier segment could not all be replaced", run_dir=str(run_dir),
                                                 error="; ".join(failed))


def killed_stop(run_dir: Path) -> dict[str, str]:
    """The `stopped` of a run whose last segment did not finish and that no process holds (killed: SIGKILL, a CI timeout,
    `os._exit`), as `report` writes it: `{"how": "killed", "reason"}` naming the command that resumes it, the shape
    `mark_superseded` writes."""
    return {"how": "killed", "reason": "the run's last segment did not finish and wrote no reports: no process holds the run "
            f"directory, so it was killed (SIGKILL, a CI timeout, os._exit); resume with: {_resume(run_dir, {})}"}


def failed_stop(run_dir: Path, segments: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The `stopped` of a run whose last segment (of `segments`, as a resume settles them: `segments_read`) stopped on a
    write error it recorded (`ended: error`, `engine.segment_end`) but wrote no summary after: `{"segment", "how":
    "error", "exit_status": 3, "reason"}` naming the error and the command that resumes it, as `finish_stopped` says a
    failed write. None when the last segment did not end so (then it was killed, `killed_stop`)."""
    last = segments[-1] if segments else None
    if not isinstance(last, dict) or last.get("ended") != "error" or not isinstance(last.get("error"), str):
        return None
    from tracejudge.core.errors import FULL_DISK

    code = re.match(r"\w+: \[Errno (\d+)\]", last["error"])
    if code is not None and int(code.group(1)) in FULL_DISK:  # (said as `finish_stopped` says it, not in Python's words)
        file = last.get("error_file") if isinstance(last.get("error_file"), str) else f"a file in {run_dir}"
        reason = (f"disk full: cannot write {file} ({FULL_DISK[int(code.group(1))]}); the results already written are kept. "
                  f"Free space, then resume with: {_resume(run_dir, {})}")
    else:
        reason = f"cannot write: {last['error']}; the results already written are kept; resume with: {_resume(run_dir, {})}"
    return {"segment": last.get("segment"), "how": "error", "exit_status": 3, "reason": reason}


def _summary(path: Path) -> dict[str, Any] | None:
    """`summary.json` as a mapping; None when there is none or it is unreadable (nothing there says PASS to a reader)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _resume(run_dir: Path, segment: dict[str, Any]) -> str:
    """The command that resumes the run: the one this segment records (`run`'s own), else `run_state.resume_command`."""
    command = segment.get("command")
    if isinstance(command, dict) and isinstance(command.get("line"), str):
        from tracejudge.llm.redact_command import masked_line

        return masked_line(command["line"])  # (a line an earlier version recorded in clear)
    from tracejudge.engine.run_state import resume_command

    try:
        return resume_command(run_dir)
    except Exception:  # noqa: BLE001  (an unreadable manifest: the reports are replaced all the same)
        return "the same command"
