"""The run directory: the unit of checkpoint and resumption.

Layout of `RUN_DIR`:

- `manifest.json` — config, config hash, dataset fingerprint, tracejudge version;
- `results.jsonl` — one `CaseResult` per line, append-only, flushed and
  fsynced in small groups (bounded by count and by time);
- `summary.json`, reports — rewritten atomically (write, fsync, rename);
- `.lock` — the pid of the process that owns the directory.

On open, a torn last line (a crash mid-write) is cut off, and the finished
`(case_id, trial)` pairs are indexed from the lines' leading keys without
building full models, so resuming skips finished work.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.errors import TracejudgeError

__all__ = [
    "LockedError",
    "ManifestMismatch",
    "ResultWriter",
    "RunLock",
    "atomic_write_text",
    "dataset_fingerprint",
    "finished_keys",
    "iter_result_lines",
    "repair_tail",
]

RESULTS = "results.jsonl"
MANIFEST = "manifest.json"
LOCK = ".lock"


class LockedError(TracejudgeError):
    """Another live process holds the run directory."""


class ManifestMismatch(TracejudgeError):
    """The run directory was started with another config or dataset."""


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` so readers see the old or the new file, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def dataset_fingerprint(*paths: Path | None) -> str:
    """A quick fingerprint of dataset files: sha256 over size, first and last MiB of each.

    Cheap at any size (a 2 GB dataset costs two 1 MiB reads) and changes
    whenever a file grows, shrinks, or is edited at either end; an edit
    confined to the middle of a same-size file is not seen.
    """
    h = hashlib.sha256()
    for p in paths:
        if p is None:
            continue
        size = p.stat().st_size
        h.update(f"{p.name}:{size}:".encode())
        with open(p, "rb") as fh:
            h.update(fh.read(1 << 20))
            if size > 2 << 20:
                fh.seek(size - (1 << 20))
                h.update(fh.read())
    return h.hexdigest()


class RunLock:
    """An exclusive lock on a run directory, by a pid file created with O_EXCL.

    A lock whose pid is no longer alive is taken over. Raises `LockedError`
    naming the live pid otherwise.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK
        self.held = False

    def acquire(self) -> None:
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    pid = int(self.path.read_text().strip() or "0")
                except (OSError, ValueError):
                    pid = 0
                if pid and pid != os.getpid() and _alive(pid):
                    raise LockedError(f"{self.path.parent}: run directory is in use by process {pid} (lock file {self.path})") from None
                try:
                    self.path.unlink()
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(str(os.getpid()))
            self.held = True
            return
        raise LockedError(f"{self.path.parent}: could not take the lock file {self.path}")

    def release(self) -> None:
        if self.held:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            self.held = False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def repair_tail(path: Path) -> int:
    """Cut a torn last line (no trailing newline, or not valid JSON) off a JSONL file.

    Returns the number of bytes removed. Only the tail is read.
    """
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        window = min(size, 1 << 20)
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


def iter_result_lines(path: Path) -> Iterator[bytes]:
    """Every complete line of a results file, as bytes."""
    if not path.exists():
        return
    with open(path, "rb") as fh:
        for line in fh:
            if line.endswith(b"\n") and line.strip():
                yield line


def finished_keys(path: Path) -> set[tuple[str, int]]:
    """The `(case_id, trial)` pairs already in a results file."""
    done: set[tuple[str, int]] = set()
    for line in iter_result_lines(path):
        try:
            data = json.loads(line)
            done.add((str(data["case_id"]), int(data.get("trial", 0))))
        except (ValueError, KeyError, TypeError):
            continue
    return done


class ResultWriter:
    """Append result lines to `results.jsonl`, flushing and fsyncing in small groups.

    A group is written when `flush_every` lines are pending or `flush_seconds`
    have passed since the last write, and on `close()`. Each line is written
    whole, so a crash leaves at most one torn line at the end.
    """

    def __init__(self, path: Path, flush_every: int = 64, flush_seconds: float = 0.5) -> None:
        self.path = path
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self._fh = open(path, "ab")
        self._pending: list[bytes] = []
        self._last = time.monotonic()
        self.written = 0

    def add(self, line: str) -> None:
        self._pending.append(line.encode() + b"\n")
        if len(self._pending) >= self.flush_every or time.monotonic() - self._last >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._fh.write(b"".join(self._pending))
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self.written += len(self._pending)
            self._pending.clear()
        self._last = time.monotonic()

    def close(self) -> None:
        self.flush()
        self._fh.close()


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """The manifest of a run directory, or `None` if it has none."""
    p = run_dir / MANIFEST
    if not p.exists():
        return None
    manifest: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
    return manifest
