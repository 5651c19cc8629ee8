"""What stands in for a run's reports when writing them failed (a full disk, a quota, a file size limit).

A report the failed pass did not write is an earlier segment's, or an earlier `report`'s: read as this run's, it may say
PASS of results that have changed since. Each one left unwritten is removed and then replaced by a short file saying
which file could not be written, why, and the command that writes the reports again; when even that cannot be written
(the disk is still full), none is left, never the stale one.
"""

from __future__ import annotations

import contextlib
import html
import shlex
from collections.abc import Iterable
from pathlib import Path

from tracejudge.engine import store

__all__ = ["REPORTS", "stand_in_reports"]

# The reports `write_reports` writes, in its order.
REPORTS = ("report.md", "junit.xml", "report.html")


def stand_in_reports(run_dir: Path, failed: Path, exc: BaseException, written: Iterable[str] = ()) -> None:
    """Replace each report of `run_dir` (`REPORTS`) not in `written` (the names this pass wrote, or found holding what
    it would have written) by a stand-in saying that `failed` could not be written because of `exc`. Never raises."""
    from tracejudge.core.utf8 import safe_text

    left = [run_dir / name for name in REPORTS if name not in set(written)]
    for path in left:  # (all removed first: on a full disk their blocks are what the stand-ins need)
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
    cause = (exc.strerror if isinstance(exc, OSError) else None) or f"{type(exc).__name__}: {exc}"
    again = f"Mend that, then write it with: tracejudge report {shlex.quote(safe_text(str(run_dir)))}"
    for path in left:
        shown, first = safe_text(str(path)), safe_text(str(failed))
        why = (f"{shown} could not be written ({cause}); this file stands in for it. {again}" if path == failed else
               f"{shown} was not written: {first} could not be written before it ({cause}); this file stands in for it. {again}")
        with contextlib.suppress(OSError):
            store.atomic_write_text(path, _stand_in(path.name, safe_text(run_dir.name), why))


def _stand_in(name: str, run: str, why: str) -> str:
    from tracejudge.stages.reports.junit import stopped_junit

    if name == "junit.xml":
        return stopped_junit("ERROR", why)
    if name == "report.html":
        return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>tracejudge report: {html.escape(run)}: '
                f"not written</title></head>\n<body><h1>tracejudge report: {html.escape(run)}</h1>\n"
                f"<p><strong>verdict: ERROR</strong>: {html.escape(why)}</p></body></html>\n")
    return f"# tracejudge report: {run}\n\n**verdict: ERROR**: {why}\n"
