"""The run directory's files, each written so that a crash at any instant leaves it usable.

Layout of `RUN_DIR`:

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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pydantic_core
from tracejudge.core.errors import ManifestError, TracejudgeError
from tracejudge.engine.manifest import ManifestMismatch
from tracejudge.engine.result_shape import result_problem
from tracejudge.engine.result_writer import INDEX, RESULTS, ResultWriter, file_crc32
from tracejudge.engine.run_lock import LOCK, LockedError, RunLock

__all__ = [
    "has_results",
    "error_place",
    "iter_results",
    "CHECKPOINT",
    "INDEX",
    "LOCK",
    "MANIFEST",
    "RESULTS",
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
    "read_manifest",
    "remove_stale_temps",
    "repair_tail",
]

CHECKPOINT = "checkpoint.json"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
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
    with open(tmp, "wb") as fh:
        fh.write(data)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)
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

    The directory is created here (atomically, `mkdir` without `exist_ok`), so
    two processes asking at once get different directories.
    """
    base = Path(base)
    base.parent.mkdir(parents=True, exist_ok=True)
    try:
        base.mkdir()
        return base
    except FileExistsError:
        if base.is_dir() and not any((base / name).exists() for name in (RESULTS, MANIFEST, CHECKPOINT)):
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


def iter_result_lines(path: Path, start: int = 0) -> Iterator[bytes]:
    """Every complete, non-blank line of a results file from byte `start`, as bytes."""
    if not path.exists():
        return
    with open(path, "rb") as fh:
        fh.seek(start)
        for line in fh:
            if line.endswith(b"\n") and line.strip():
                yield line


SKIPPED_MARK = b'"status":"skipped_budget"'
# Statuses a later line of the same (case, trial) supersedes (`records.PROVISIONAL_STATUSES`).
PROVISIONAL_MARKS = (SKIPPED_MARK, b'"status":"judge_error"', b'"status":"target_error"', b'"status":"rate_limited"',
                     b'"kind":"worker_error"',  # a dead worker's case (`records.WORKER_ERROR`)
                     b'"kind":"unterminated_line"')  # a torn last line (`records.UNTERMINATED_LINE`)


def _provisional(line: bytes) -> bool:
    return any(mark in line for mark in PROVISIONAL_MARKS)


_WORKER_TEXT = '"kind":"worker_error"'  # a dead worker's result (`records.WORKER_ERROR`)
_WORKER_MARK = _WORKER_TEXT.encode()


def error_place(line: bytes | str, *, dead: bool = False) -> tuple[str, int] | None:
    """`(file, line)` the error of a result line names (where its record was read), or None; with `dead`, only for a
    dead worker's result (error kind `worker_error`), the only lines parsed then.

    An earlier version filed a dead worker's result for an unreadable line under an id read from the line's first
    bytes (`badjson`), a key no later run writes again; the line's result is now filed under its place
    (`extract.line_case_id`). So a standing dead worker's result is superseded by a later final result naming the
    same file and line, as by a later result of its own key (`superseded_lines`, `RunJournal`).
    """
    if dead and (_WORKER_MARK not in line if isinstance(line, bytes) else _WORKER_TEXT not in line):
        return None
    try:
        error = pydantic_core.from_json(line)["error"]
        if dead and error["kind"] != "worker_error":  # (not a case's own metadata that says it)
            return None
        file, at = error["file"], error["line"]
    except (ValueError, KeyError, TypeError):
        return None
    return (file, at) if isinstance(file, str) and type(at) is int else None


def line_key(line: bytes) -> tuple[str, int] | None:
    """`(case_id, trial)` of a result line, or None when it is not JSON with those fields."""
    try:
        data = pydantic_core.from_json(line)
        return str(data["case_id"]), int(data.get("trial", 0))
    except (ValueError, KeyError, TypeError):
        return None


def superseded_lines(path: Path) -> set[int]:
    """0-based numbers (among `iter_result_lines`) of the lines a later line of the same key replaces.

    Only provisional results (a budget skip, a judge/target/provider failure,
    see `records.PROVISIONAL_STATUSES`) are ever superseded: a resumed run
    redoes them and appends the new result. A dead worker's result is also
    superseded by a later final result naming its file and line (`error_place`).
    One pass; only lines after the first provisional one are parsed, and memory
    grows only with the number of provisional lines.
    """
    pending: dict[tuple[str, int], int] = {}
    dead: dict[tuple[str, int], tuple[tuple[str, int], int]] = {}  # (file, line) → a pending dead worker's (key, number)
    out: set[int] = set()
    for i, line in enumerate(iter_result_lines(path)):
        marked = _provisional(line)
        if not (marked or pending):
            continue
        key = line_key(line)
        if key is None:
            continue
        if key in pending:
            out.add(pending.pop(key))
        if marked:
            pending[key] = i
            if (place := error_place(line, dead=True)) is not None:
                dead[place] = (key, i)
        elif dead and (place := error_place(line)) in dead:  # a final result of a dead worker's place (`error_place`)
            was, at = dead.pop(place)  # type: ignore[arg-type]
            if pending.get(was) == at:
                out.add(pending.pop(was))
    return out


def iter_current_result_lines(path: Path) -> Iterator[bytes]:
    """The lines of a results file that still stand, in file order: all but superseded ones.

    A provisional result (`skipped_budget`, `judge_error`, `target_error`,
    `rate_limited`) is redone by a resumed run, whose new line for the same
    (case, trial) supersedes it (see `superseded_lines`; two passes over the file).
    """
    for _, line in iter_current_numbered(path):
        yield line


def iter_current_numbered(path: Path) -> Iterator[tuple[int, bytes]]:
    """`iter_current_result_lines` with each line's 1-based line number in the file (to name a bad one)."""
    gone = superseded_lines(path)
    if not path.exists():
        return
    i = 0
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.endswith(b"\n") and line.strip():
                if i not in gone:
                    yield lineno, line
                i += 1


def has_results(run_dir: Path) -> bool:
    """True when `run_dir` holds at least one result line (a directory left by a failed start holds none)."""
    try:
        return (Path(run_dir) / RESULTS).stat().st_size > 0
    except OSError:
        return False


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
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        return cast(dict[str, Any], data)
    except ValueError as exc:
        if not strict:
            from tracejudge.core.log import get_logger

            get_logger("tracejudge.store").warning("manifest does not validate; checking the config against the checkpoint's hashes",
                                                   file=str(p), error=str(exc)[:200])
            return None
        raise ManifestError(str(p), str(exc)) from None


def iter_results(run_dir: Path, unreadable: list[int] | None = None,
                 on_bad: Callable[[int, str], None] | None = None) -> Iterator[dict[str, Any]]:
    """Each result of `RUN_DIR/results.jsonl` as a dict. A line that is not JSON, or not a result in the fields readers
    use (`result_shape.result_problem`: a score of NaN or `"high"` typed in by hand), is skipped: counted in
    `unreadable[0]` and passed to `on_bad(line_number, "field: what is wrong")` when given.

    Raises `TracejudgeError` when the directory has no results file, unless it holds a manifest: a run killed after
    writing its manifest and before creating results.jsonl has no result yet.
    """
    path = Path(run_dir) / RESULTS
    if not path.exists():
        if (Path(run_dir) / MANIFEST).is_file():
            return
        raise TracejudgeError(f"{run_dir}: no {RESULTS} here (is this a run directory?)")
    for lineno, line in iter_current_numbered(path):
        try:
            # pydantic-core's parser: reports re-read every result, ~3x faster than json.loads.
            data = pydantic_core.from_json(line)
            problem = result_problem(data)
        except ValueError as exc:
            data, problem = None, f"(root): invalid JSON: {exc}"
        if problem is None:
            yield data
            continue
        if unreadable is not None:
            unreadable[0] += 1
        if on_bad is not None:
            on_bad(lineno, problem)
