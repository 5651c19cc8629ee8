"""The run directory's files, each written so that a crash at any instant leaves it usable.

Layout of `RUN_DIR` (reading `results.jsonl` back: `tracejudge.engine.result_lines`):

- `manifest.json` — config, config hash, dataset file fingerprints, version
  (see `tracejudge.engine.manifest`);
- `results.jsonl` — one `CaseResult` per line, append-only, written in
  whole-line groups and fsynced (bounded by count and by time);
- `results.idx` — one 8-byte little-endian hash per line of `results.jsonl`
  (`keyset.result_key(case_id, trial)`), in the same order: the index of
  finished work, read at resume instead of re-parsing every result;
- `checkpoint.json` — what `results.idx` and the aggregate covered at the last
  flush, plus the per-segment records (see `tracejudge.engine.checkpoint`);
- `cursor.json`, `cursor.ids` — how far into the dataset everything is finished,
  rewritten with each checkpoint, so a resume seeks there instead of reading
  every finished line (see `tracejudge.engine.cursor`);
- `summary.json`, reports — rewritten atomically (write, fsync, rename);
- `.lock` — held with `flock` by the process that owns the directory; the
  kernel releases it when that process dies, however it dies.

`results.jsonl` is the truth; the index and checkpoint are derived from it
and are rebuilt from it whenever they disagree with it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, cast

from tracejudge.core.errors import ManifestError
from tracejudge.core.regular_file import NotRegularFile, open_regular
from tracejudge.engine.manifest import ManifestMismatch

# Reading results.jsonl lives in `result_lines`; its names stay importable from here, where every reader looks.
from tracejudge.engine.result_lines import (
    MANIFEST,
    PROVISIONAL_MARKS,
    SKIPPED_MARK,
    error_place,
    iter_current_numbered,
    iter_current_result_lines,
    iter_result_lines,
    iter_results,
    line_key,
    superseded_lines,
)
from tracejudge.engine.result_writer import INDEX, RESULTS, ResultWriter, file_crc32
from tracejudge.engine.run_lock import LOCK, LockedError, RunLock

__all__ = [
    "has_results",
    "read_text",
    "error_place",
    "iter_results",
    "CHECKPOINT",
    "INDEX",
    "LOCK",
    "MANIFEST",
    "RESULTS",
    "REPORT_NAMES",
    "SUMMARY",
    "LockedError",
    "ManifestMismatch",
    "ResultWriter",
    "RunLock",
    "atomic_write_bytes",
    "atomic_write_text",
    "file_crc32",
    "fresh_run_dir",
    "iter_result_lines",
    "iter_current_numbered",
    "iter_current_result_lines",
    "line_key",
    "superseded_lines",
    "PROVISIONAL_MARKS",
    "SKIPPED_MARK",
    "read_manifest",
    "remove_stale_temps",
    "repair_tail",
]

CHECKPOINT = "checkpoint.json"
SUMMARY = "summary.json"
REPORT_NAMES = ("report.md", "report.html", "junit.xml")  # (written by `tracejudge.stages.reports` at a run's end)
_TMP_SUFFIX = ".tmp"


def _fsync_dir(path: Path) -> None:
    # A rename is durable only once the directory entry is; some filesystems refuse this.
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write `data` to `path` so readers see the old or the new file, never half of one.

    Writes a temporary file beside it and renames it over `path`. With
    `durable` (the default) the file and then the directory are fsynced, so
    the new content survives a power cut; without it a power cut may leave
    the old file or an empty/garbled new one, which suits derived files that
    are validated on read and rebuilt when wrong (the checkpoint). Raises
    `OSError` on I/O failure (the old file stays).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}{_TMP_SUFFIX}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        # (a half-written temporary on a full disk holds the blocks the next, smaller write needs: the record of why
        # the run stopped)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # (a write's error names no file: the user's is this one)
            exc.filename = str(path)
        raise
    if durable:
        _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    """`atomic_write_bytes` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def writable(run_dir: Path) -> bool:
    """Can files be created and replaced in directory `run_dir`?

    False on a read-only mount (a run copied from a CD, a read-only bind mount: even root cannot write
    there) and for a directory the user may not write. Reading a finished run needs none of it.
    """
    return os.access(run_dir, os.W_OK | os.X_OK)


def write_text_if_changed(path: Path, text: str) -> bool:
    """`atomic_write_text` unless `path` already holds exactly `text`; True if it wrote.

    Derived files (summary, reports) go through this, so resuming a finished
    run leaves every file of the run directory untouched.
    """
    data = text.encode("utf-8")
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass
    atomic_write_bytes(path, data)
    return True


def replace_if_changed(tmp: Path, path: Path) -> bool:
    """Rename `tmp` over `path` unless `path` already holds the same bytes (then delete `tmp`).

    For derived files written streaming (junit.xml); compares in chunks, so
    memory stays flat. Returns True if `path` was replaced.
    """
    try:
        same = path.stat().st_size == tmp.stat().st_size
        if same:
            with open(tmp, "rb") as a, open(path, "rb") as b:
                while same:
                    x, y = a.read(1 << 20), b.read(1 << 20)
                    same = x == y
                    if not x:
                        break
    except OSError:
        same = False
    if same:
        tmp.unlink()
        return False
    os.replace(tmp, path)
    return True


def remove_stale_temps(run_dir: Path) -> int:
    """Delete temporary files a killed writer left in `run_dir`; returns how many.

    Call only while holding the run directory's lock (no live writer then).
    """
    n = 0
    for p in run_dir.glob(f".*{_TMP_SUFFIX}"):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
            n += 1
    return n


def fresh_run_dir(base: Path) -> Path:
    """A run directory for `--fresh`: `base` itself if it holds no run, else the first free `base-N`.

    `base` may be `.` or end in `..`: the folder it names is numbered beside it (`--run-dir . --fresh` → `../NAME-2`).

    The directory is created here (atomically, `mkdir` without `exist_ok`), so
    two processes asking at once get different directories.
    """
    base = Path(base)
    if base.name in ("", ".."):
        # `.` has no name to number (`with_name` raises) and `..` would be numbered in place (`..-2` inside the
        # current folder): number the folder they name, beside it.
        base = Path(os.path.abspath(base))
    base.parent.mkdir(parents=True, exist_ok=True)
    try:
        base.mkdir()
        return base
    except FileExistsError:
        # (a folder holding a run's reports, a run's or a user's own, is not written over either)
        if base.is_dir() and not any((base / name).exists() for name in (RESULTS, MANIFEST, CHECKPOINT, SUMMARY, *REPORT_NAMES, "configs.jsonl")):
            return base
    n = 2
    while True:
        cand = base.with_name(f"{base.name}-{n}")
        try:
            cand.mkdir()
            return cand
        except FileExistsError:
            n += 1


def repair_tail(path: Path) -> int:
    """Cut a torn last line (no trailing newline, or not valid JSON) off a JSONL file.

    Returns the number of bytes removed. Only the tail is read, so this costs
    the same for a file of ten lines or ten million.
    """
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        window = min(size, 1 << 16)
        while True:
            fh.seek(size - window)
            tail = fh.read(window)
            body = tail[:-1] if tail.endswith(b"\n") else tail
            cut = body.rfind(b"\n")
            if cut != -1 or window == size:
                break
            window = min(size, window * 4)
        last = body[cut + 1 :]
        start = size - window + cut + 1
        ok = tail.endswith(b"\n")
        if ok:
            try:
                json.loads(last)
            except ValueError:
                ok = False
        if ok:
            return 0
        fh.truncate(start)
        fh.flush()
        os.fsync(fh.fileno())
        return size - start


def has_results(run_dir: Path) -> bool:
    """True when `run_dir` holds at least one result line (a directory left by a failed start holds none)."""
    try:
        return (Path(run_dir) / RESULTS).stat().st_size > 0
    except OSError:
        return False


def read_text(path: Path) -> str:
    """The UTF-8 text of a run directory's file `path` (`summary.json`, `checkpoint.json`, `manifest.json` …), opened
    without waiting (`open_regular`): a FIFO in its place, as an unpacked artifact or a crafted directory may hold, hung
    `report`, the viewer and a resume on a plain read. Raises `NotRegularFile` (an `OSError`) for a FIFO, a device or a
    socket, what `open` raises for a missing or unreadable file, and `UnicodeDecodeError` (a `ValueError`)."""
    with open_regular(path) as fh:
        return fh.read().decode("utf-8")


def read_manifest(run_dir: Path, *, strict: bool = True) -> dict[str, Any] | None:
    """The manifest of a run directory, or `None` if it has none.

    Raises `ManifestError` (a `TracejudgeError`) naming the file if it is not a JSON object;
    with `strict=False` such a manifest is reported as a warning and treated
    as missing (a run then checks its config against the hashes the
    checkpoint's segments recorded, and rewrites the manifest).
    """
    p = Path(run_dir) / MANIFEST
    if not p.exists():
        return None
    try:
        data = json.loads(read_text(p))
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        return cast(dict[str, Any], data)
    except (ValueError, NotRegularFile) as exc:  # (a FIFO in its place is no manifest, as a file that is not JSON is none)
        if not strict:
            from tracejudge.core.log import get_logger

            get_logger("tracejudge.store").warning("manifest does not validate; checking the config against the checkpoint's hashes",
                                                   file=str(p), error=str(exc)[:200])
            return None
        raise ManifestError(str(p), exc.strerror if isinstance(exc, NotRegularFile) else str(exc)) from None
