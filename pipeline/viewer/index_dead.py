"""Dead workers' results in `view.idx`: one filed under a key no later run writes drops out at the final result of its line.

A dead worker's result is provisional under its (case, trial), which the resume's result replaces. An earlier version
filed the result of an unreadable dataset line under an id read from the line's first bytes (`badjson`), a key never
written again: every reader takes the later final result naming the same file and line as superseding it
(`engine.result_lines.superseded_lines`), and so does the index, or the Cases page lists two rows for one case.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from tracejudge.core.records import WORKER_ERROR
from tracejudge.engine.result_lines import PROVISIONAL_MARKS

__all__ = ["DEAD_TABLE", "dead_row", "drop_dead", "error_place"]

# Each dead worker's result by the file and line its error names, with the row it wrote (its key and byte offset).
DEAD_TABLE = "CREATE TABLE dead(file TEXT, line INTEGER, case_id TEXT, trial INTEGER, offset INTEGER, PRIMARY KEY(file, line))"


def error_place(res: dict[str, Any]) -> tuple[str, int] | None:
    """`(file, line)` the error of a parsed result names (where its record was read), or None."""
    err = res.get("error")
    if not isinstance(err, dict):
        return None
    file, at = err.get("file"), err.get("line")
    return (file, at) if isinstance(file, str) and type(at) is int else None


def dead_row(db: sqlite3.Connection, place: tuple[str, int], res: dict[str, Any], line: bytes, offset: int) -> bool:
    """Note a dead worker's result `res` (its line's bytes `line`, at byte `offset`) under its `place`; for a final
    result of a place a dead worker's result stands for, True: the caller writes the rows it holds, then `drop_dead`."""
    err = res.get("error")
    if isinstance(err, dict) and err.get("kind") == WORKER_ERROR:
        db.execute("INSERT OR REPLACE INTO dead(file, line, case_id, trial, offset) VALUES (?, ?, ?, ?, ?)",
                   (*place, str(res["case_id"]), int(res.get("trial", 0)), offset))
        return False
    if any(mark in line for mark in PROVISIONAL_MARKS):  # (a provisional result supersedes nothing of another key)
        return False
    return db.execute("SELECT 1 FROM dead WHERE file=? AND line=?", place).fetchone() is not None


def drop_dead(db: sqlite3.Connection, place: tuple[str, int]) -> None:
    """Drop the row of the dead worker's result standing for `place`, unless a later line of its key replaced it."""
    row = db.execute("SELECT case_id, trial, offset FROM dead WHERE file=? AND line=?", place).fetchone()
    db.execute("DELETE FROM dead WHERE file=? AND line=?", place)
    if row is not None:  # (by its offset: a later line of the same key wrote another row, which stands)
        db.execute("DELETE FROM results WHERE case_id=? AND trial=? AND offset=?", row)
