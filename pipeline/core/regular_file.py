"""Opening a file the user named as a regular file, without waiting on a FIFO put in its place (`open_regular`).

The config refuses a dataset that is a FIFO, a device or a socket when it is validated; a FIFO put in the file's
place after that (a script swapping files) was opened as a file, and a FIFO waits for a writer: the command hung
with nothing said. Opened without blocking and then looked at through its descriptor, such a path is refused.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["NotRegularFile", "open_regular", "special_kind"]


class NotRegularFile(OSError):
    """A path that names a FIFO, a device or a socket where a regular file was to be read (`errno.EINVAL`, `filename` set)."""


def open_regular(path: str | Path, buffering: int = -1) -> BinaryIO:
    """`open(path, "rb", buffering)` of a regular file; raises `NotRegularFile` for anything else, and what `os.open`
    raises (`FileNotFoundError`, `PermissionError`, `IsADirectoryError` …) as `open` would."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # (no effect on a regular file's reads)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):  # (`os.open` opens a folder read-only where `open` refuses it: refused as `open` does)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file (a FIFO, a device or a socket)", str(path))
        return os.fdopen(fd, "rb", buffering)
    except BaseException:
        os.close(fd)
        raise


def special_kind(mode: int) -> str | None:
    """What a file of `st_mode` `mode` is when it is neither a regular file nor a folder ("a FIFO (named pipe)", "a
    character device", "a block device", "a socket", "a special file"), else None."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "a special file")
