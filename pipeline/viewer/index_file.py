"""Where a run's `view.idx` lives and the fingerprints of `results.jsonl` it keeps, to tell a file appended to (read on
from where the index stopped) from one rewritten or edited in place (read again whole; `tracejudge.viewer.index`)."""

from __future__ import annotations

import errno
import hashlib
import os
import sqlite3
import stat
from pathlib import Path

from tracejudge.core.regular_file import NotRegularFile

__all__ = ["HEAD", "TABLES", "cache_path", "head", "results_size", "tail", "unwritable"]

HEAD = 4096  # bytes of results.jsonl fingerprinted at its start, and before where the index stopped
# The index's tables but `dead` (`index_dead`); `results` gains a value and a verdict column per metric as they are met.
TABLES = (
    "CREATE TABLE results(case_id TEXT NOT NULL, trial INTEGER NOT NULL, status TEXT, tags TEXT, error TEXT,"
    " duration REAL, offset INTEGER, length INTEGER, failed INTEGER, text TEXT, run_error TEXT, case_key TEXT,"
    " PRIMARY KEY(case_id, trial))",
    "CREATE INDEX results_status ON results(status)",
    "CREATE INDEX results_case_key ON results(case_key, case_id, trial)",
    "CREATE TABLE casetext(case_id TEXT PRIMARY KEY, text TEXT, snippet TEXT)",
    "CREATE TABLE bad(line INTEGER PRIMARY KEY, case_id TEXT, trial INTEGER, problem TEXT)",
    "CREATE INDEX bad_case ON bad(case_id, trial)",
)


def cache_path(run_dir: Path) -> Path:
    """Where the index of a run directory this process cannot write lives: `~/.cache/tracejudge/view/<sha1>.idx`."""
    digest = hashlib.sha1(str(run_dir.resolve()).encode()).hexdigest()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracejudge" / "view"
    base.mkdir(parents=True, exist_ok=True)
    return base / f"{digest}.idx"


def head(path: Path) -> str:
    """A fingerprint of the first `HEAD` bytes of `path`: a file rewritten from its start differs in them."""
    with open(path, "rb") as fh:
        return hashlib.sha1(fh.read(HEAD)).hexdigest()


def tail(path: Path, end: int) -> str:
    """A fingerprint of the `HEAD` bytes of `path` before byte `end` (the end of what was indexed): a line before it
    edited to another length moves them, which an append never does."""
    with open(path, "rb") as fh:
        fh.seek(max(0, end - HEAD))
        return hashlib.sha1(fh.read(min(end, HEAD))).hexdigest()


def results_size(path: Path) -> int:
    """The size of `results.jsonl`; raises `FileNotFoundError` when it is not there and `NotRegularFile` when it is a FIFO,
    a device or a socket (an unpacked artifact may hold one): reading its fingerprints waited on it forever, hanging
    every page of the run and the Runs list. A directory is left to fail where it is opened, as before."""
    st = path.stat()
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise NotRegularFile(errno.EINVAL, "not a regular file (a FIFO, a device or a socket)", str(path))
    return st.st_size


# What sqlite says when the file cannot take a write: no room (a full disk, a quota), an I/O error (a full disk too, met
# while the file grows), a file or folder it may not write. A lock held by another process is none of them.
_UNWRITABLE = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN")


def unwritable(exc: sqlite3.Error) -> bool:
    """Whether sqlite failed `exc` for want of room or of a file it may write, not for a lock or a bad statement."""
    return str(getattr(exc, "sqlite_errorname", "")).startswith(_UNWRITABLE)
