"""The run directory's lock: `RunLock` (`flock` on `RUN_DIR/.lock`), so one process at a time owns a run directory."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterable
from pathlib import Path

from tracejudge.core.errors import TracejudgeError

__all__ = ["LOCK", "LockedError", "RunLock", "holder", "in_progress_note"]

LOCK = ".lock"


class LockedError(TracejudgeError):
    """Another live process holds the run directory; the message names its pid."""


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
                _flock_soon(fd)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in _BUSY:
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


def holder(run_dir: Path) -> str | None:
    """Who holds `run_dir`'s lock now (`"process 4242"`, or `"another process"` when the lock file names none), or None when nobody does.

    Probed with a shared lock taken and dropped at once, so it never blocks and never takes the
    run over; a directory without a lock file, or one this process cannot open, counts as free.
    """
    path = Path(run_dir) / LOCK
    try:
        # (O_NONBLOCK: a FIFO in the lock file's place, as an unpacked artifact may hold, is opened at once, not waited
        # on until a writer comes: `view` and `report` of such a directory hung before saying anything)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in _BUSY:
            return None
        pid = _read_pid(path)
        return f"process {pid}" if pid else "another process"
    finally:
        os.close(fd)  # (closing drops the probe's lock)
    return None


def in_progress_note(run_dirs: Iterable[Path], so_far: str) -> str | None:
    """One line for stderr naming the runs among `run_dirs` that another process still writes, or None when none is.

    In `report`'s words ("the run is still in progress (process 4242 holds it)"), then `so_far`: what
    the reader's figures are, e.g. "the comparison is of its results so far".
    """
    busy = [(d, who) for d in run_dirs if (who := holder(Path(d))) is not None]
    if len(busy) == 1:
        return f"warning: {busy[0][0]}: the run is still in progress ({busy[0][1]} holds it): {so_far}"
    if busy:
        return f"warning: {', '.join(f'{d} ({who} holds it)' for d, who in busy)}: the runs are still in progress: {so_far}"
    return None


_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


def _flock_soon(fd: int) -> None:
    # A `holder` probe holds a shared lock for a moment: a run starting right then tries again
    # a few times before it reports the directory as in use.
    for attempt in range(5):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in _BUSY or attempt == 4:
                raise
            time.sleep(0.01)


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None
