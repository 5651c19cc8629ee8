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
import errno
import fcntl
import json
import os
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pydantic_core
from tracejudge.core.errors import TracejudgeError
from tracejudge.engine.manifest import ManifestMismatch

__all__ = [
    "has_results",
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
    "fresh_run_dir",
    "iter_result_lines",
    "read_manifest",
    "remove_stale_temps",
    "repair_tail",
]

RESULTS = "results.jsonl"
INDEX = "results.idx"
CHECKPOINT = "checkpoint.json"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
LOCK = ".lock"
_TMP_SUFFIX = ".tmp"


class LockedError(TracejudgeError):
    """Another live process holds the run directory; the message names its pid."""


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


class RunLock:
    """An exclusive lock on a run directory: `flock` on `RUN_DIR/.lock`, which holds the owner's pid.

    The kernel drops an `flock` when its process exits, even by SIGKILL, so a
    lock file left by a dead process is simply taken over; a live owner makes
    `acquire()` raise `LockedError` at once, naming its pid. Works on local
    filesystems (and NFS with Linux's flock emulation); not on Windows.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / LOCK
        self._fd: int | None = None
        self.previous_pid: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock or raise `LockedError` naming the process that holds it."""
        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                pid = _read_pid(self.path)
                who = f"process {pid}" if pid else "another process"
                raise LockedError(
                    f"{self.path.parent}: run directory is in use by {who} (lock file {self.path}); "
                    "wait for it to finish, or stop it first"
                ) from None
            # The owner before us may have unlinked the file between our open and our flock:
            # then we locked an orphan inode and must retry on the current file.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            self.previous_pid = _read_pid(self.path)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            self._fd = fd
            return
        raise LockedError(f"{self.path.parent}: could not take the lock file {self.path} (it keeps being replaced)")

    def release(self) -> None:
        """Remove the lock file and drop the lock (no-op if not held)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


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
                     b'"kind":"worker_error"')  # a dead worker's case (`records.WORKER_ERROR`)


def _provisional(line: bytes) -> bool:
    return any(mark in line for mark in PROVISIONAL_MARKS)


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
    redoes them and appends the new result. One pass; only lines after the
    first provisional one are parsed, and memory grows only with the number
    of provisional lines.
    """
    pending: dict[tuple[str, int], int] = {}
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


class ResultWriter:
    """Append result lines to `results.jsonl` and their keys to `results.idx`, in fsynced groups.

    A group is written when `flush_every` lines are pending; when its first
    line has waited `flush_seconds` and half a group is pending; when its
    first line has waited `2 * flush_seconds` whatever the count (checked on
    `add` and by `flush_due`); and on `close()`. By count and time together,
    counted from the group's first line: results that stream in on a slow or
    loaded machine are written (and fsynced) in groups of at least half of
    `flush_every`, not one group per half second whatever its size, and a
    trickle (a slow judge) still reaches the disk within `2 * flush_seconds` (a second by default). Each group is written with one `write`
    of whole lines and fsynced before `on_flush` is called, so a crash
    leaves at most one torn line at the end, and whatever `on_flush` records
    (the checkpoint) never claims a line that is not on disk.

    `size`, `lines` and `index_crc` describe the two files after the last
    flush; `index_crc` is the CRC-32 of all of `results.idx`; `results_crc`
    is the CRC-32 of `results.jsonl`'s first `size` bytes, when known (the
    checkpoint keeps it, so damage before its end is seen on resume).

    A group whose write fails part-way (disk full, `EFBIG`) is cut off again
    (`ftruncate` needs no space) and the writer is `broken`: it never writes
    again, so no group is ever written twice; the exception propagates, and
    the group's results, not being on disk, are redone by the next run.
    """

    def __init__(
        self,
        run_dir: Path,
        *,
        size: int,
        lines: int,
        index_crc: int,
        results_crc: int | None = None,
        flush_every: int = 256,
        flush_seconds: float = 0.5,
        on_flush: Any = None,
    ) -> None:
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self.on_flush = on_flush
        # Unbuffered: a failed write leaves nothing in a Python buffer to be retried at close.
        self._fh = open(run_dir / RESULTS, "ab", buffering=0)
        self._idx = open(run_dir / INDEX, "ab", buffering=0)
        self.results_crc = results_crc
        self.broken: OSError | None = None
        self._pending: list[bytes] = []  # whole lines: one a line (`add`) or several a piece (`add_many`)
        self._keys: list[bytes] = []
        self._count = 0  # lines in `_pending`
        self.syncing = False  # a group is being written by `aflush`
        self._first = 0.0  # when the first pending line was added
        self.size = size
        self.lines = lines
        self.index_crc = index_crc
        self.written = 0

    def add(self, line: str, key: int) -> None:
        """Queue one result line (no newline) and its `result_key` hash."""
        if not self._pending:
            self._first = time.monotonic()
        self._pending.append(line.encode() + b"\n")
        self._keys.append(key.to_bytes(8, "little"))
        self._count += 1
        if self._count >= self.flush_every or self.flush_due():
            self.flush()

    def add_many(self, data: bytes, keys: bytes, count: int) -> bool:
        """Queue `count` whole result lines at once: `data` is their bytes, each ending in a newline; `keys` their
        `result_key` hashes as 8-byte little-endian words, in the same order.

        Unlike `add`, never flushes: returns True when a flush is due (`flush` or `aflush`, which the caller
        calls after all of them, so what it folded for them is never ahead of a checkpoint's lines).
        """
        if count:
            if not self._pending:
                self._first = time.monotonic()
            self._pending.append(data)
            self._keys.append(keys)
            self._count += count
        return self._count >= self.flush_every or self.flush_due()

    @property
    def pending(self) -> int:
        """Lines queued and not yet written."""
        return self._count

    def flush_due(self) -> bool:
        """True when lines are pending and the first of them has waited long enough for their number (see the class)."""
        if not self._pending:
            return False
        waited = time.monotonic() - self._first
        return waited >= 2 * self.flush_seconds or (waited >= self.flush_seconds and 2 * self._count >= self.flush_every)

    def flush(self) -> None:
        """Write, fsync, and report the pending group (no-op when none is pending).

        Raises `OSError` when the write fails (then `broken` is set and the
        partial group removed); a broken writer's `flush` does nothing.
        """
        if self.broken is not None or not self._pending:
            return
        group = self._take()
        try:
            self._write_group(group[0])
        except OSError as exc:
            self._fail(exc)
            raise
        self._done(*group)

    async def aflush(self) -> None:
        """`flush`, with the group's write and fsync waited for in a worker thread: the event loop runs on meanwhile.

        An fsync waits for the disk (about 10 ms here), a wait a run's other tasks (reading, the workers'
        chunks, in-process scoring) need not share. Until it returns, `syncing` is True and the caller adds
        nothing; a cancellation waits for the group to be on disk, so the writer's figures always say
        what the file holds.
        """
        import anyio.to_thread  # (here: the writer is also used where no event loop runs)

        if self.broken is not None or not self._pending:
            return
        group = self._take()
        self.syncing = True
        try:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._write_group, group[0])
        except OSError as exc:
            self._fail(exc)
            raise
        finally:
            self.syncing = False
        self._done(*group)

    def _take(self) -> tuple[bytes, bytes, int]:
        # The pending group (lines, index words, count), taken out of the queue.
        group = (b"".join(self._pending), b"".join(self._keys), self._count)
        self._pending.clear()
        self._keys.clear()
        self._count = 0
        return group

    def _write_group(self, data: bytes) -> None:
        _write_all(self._fh.fileno(), data)
        os.fsync(self._fh.fileno())

    def _fail(self, exc: OSError) -> None:
        # A group's write failed: cut both files back to the last group and never write again.
        self.broken = exc
        for fh, keep in ((self._fh, self.size), (self._idx, self.lines * 8)):
            with contextlib.suppress(OSError):
                os.ftruncate(fh.fileno(), keep)

    def _done(self, data: bytes, keys: bytes, count: int) -> None:
        # The group's lines are on disk: write their index words, count them, report.
        try:
            # The index needs no fsync: the checkpoint stores its CRC, and an index lost
            # to a power cut is rebuilt from results.jsonl.
            _write_all(self._idx.fileno(), keys)
        except OSError as exc:
            self._fail(exc)
            raise
        if self.results_crc is not None:
            self.results_crc = zlib.crc32(data, self.results_crc)
        self.index_crc = zlib.crc32(keys, self.index_crc)
        self.size += len(data)
        self.lines += count
        self.written += count
        if self.on_flush is not None:
            self.on_flush()

    def close(self) -> None:
        """Flush what is pending and close both files."""
        try:
            self.flush()
        finally:
            self._fh.close()
            self._idx.close()


def _write_all(fd: int, data: bytes) -> None:
    # os.write may write part of `data` (a nearly full disk, RLIMIT_FSIZE) before failing.
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def file_crc32(path: Path, nbytes: int, *, offset: int = 0, crc: int = 0) -> int | None:
    """CRC-32 of `nbytes` bytes of `path` from `offset` (1 MiB reads), continuing `crc`; None if it is shorter.

    About 0.2 s per 100 MB on a loaded 2-core machine (a resume of 100,000 results, 84 MB, spends ~0.18 s here).
    """
    left = nbytes
    with open(path, "rb") as fh:
        fh.seek(offset)
        while left:
            chunk = fh.read(min(left, 1 << 20))
            if not chunk:
                return None
            crc = zlib.crc32(chunk, crc)
            left -= len(chunk)
    return crc


def has_results(run_dir: Path) -> bool:
    """True when `run_dir` holds at least one result line (a directory left by a failed start holds none)."""
    try:
        return (Path(run_dir) / RESULTS).stat().st_size > 0
    except OSError:
        return False


def read_manifest(run_dir: Path, *, strict: bool = True) -> dict[str, Any] | None:
    """The manifest of a run directory, or `None` if it has none.

    Raises `TracejudgeError` naming the file if it is not a JSON object;
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
        raise TracejudgeError(f"{p}: manifest is not valid JSON ({exc}); move the run directory aside or use --fresh") from None


def iter_results(run_dir: Path, unreadable: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """Each result of `RUN_DIR/results.jsonl` as a dict; unparsable lines are skipped (counted in `unreadable[0]` when given).

    Raises `TracejudgeError` when the directory has no results file.
    """
    path = Path(run_dir) / RESULTS
    if not path.exists():
        raise TracejudgeError(f"{run_dir}: no {RESULTS} here (is this a run directory?)")
    for line in iter_current_result_lines(path):
        try:
            # pydantic-core's parser: reports re-read every result, ~3x faster than json.loads.
            data = pydantic_core.from_json(line)
        except ValueError:
            data = None
        if isinstance(data, dict) and "case_id" in data:
            yield data
        elif unreadable is not None:
            unreadable[0] += 1
