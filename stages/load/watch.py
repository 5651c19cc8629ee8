"""Did a dataset file change while it was read? Seen from the reader's own descriptor, at the end of the read.

A file rewritten in place while a run reads it (an export re-run, `> file` in a shell) ends the
read wherever the new content ends: the run then finishes with fewer cases than the file had,
and nothing said so. `FileWatch` notes the file's identity, size, modification time and first
bytes when it is opened; `change` compares them with what is there when the reader reaches the
end, and `report_change` logs one warning naming the file, what changed and what was read.

Growth alone (cases appended while the run read them) is not a change: the reader reads the
appended cases too. Cheap: two `stat` calls and one 4 KiB read per file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tracejudge.core.log import get_logger

__all__ = ["FileWatch", "report_change", "watch_of"]

_HEAD = 4096
log = get_logger("tracejudge.load")


class FileWatch:
    """The state of an open dataset file, to compare with at the end of the read.

    `fd` is the reader's descriptor (its file is the one read, whatever happens to the path).
    """

    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path
        self.start = os.fstat(fd)
        self.head = os.pread(fd, _HEAD, 0)

    def change(self, offset: int | None = None, whole: bool = False) -> str | None:
        """What changed since the file was opened (a phrase), or None; `offset` is how many bytes were read, when known;
        `whole`: the reader got to the end of what the file holds (a JSON array's closing bracket) without counting bytes."""
        try:
            now = os.stat(self.path)
        except OSError:
            # Gone from its path, but read to its end as it was when opened (a wrapper's temporary file, removed once
            # read): every record was scored, nothing to warn of. Cut short, grown past what was read, or rewritten
            # before it went: said.
            known = offset is not None or whole
            return "it was deleted or moved away" if not known or self._lost(offset) else None
        if (now.st_dev, now.st_ino) != (self.start.st_dev, self.start.st_ino):
            return "it was replaced by another file (the run read the file that was there when it started)"
        end = os.fstat(self.fd)
        was = self.start.st_size
        if end.st_size < max(was, offset or 0):
            return f"it was cut short: {max(was, offset or 0):,} bytes when read, {end.st_size:,} now"
        if (end.st_mtime_ns, end.st_size) != (self.start.st_mtime_ns, was) and os.pread(self.fd, len(self.head), 0) != self.head:
            return "it was rewritten in place (its first bytes differ from those read)"
        return None


    def _lost(self, offset: int | None) -> bool:
        # The opened file (still readable through the descriptor) against what was read of it: its size against the bytes
        # read (or, not counted, its size when opened) and against its size when opened (cut short, then read to the cut),
        # and its first bytes. Its time alone (a `touch`) loses nothing.
        try:
            end = os.fstat(self.fd)
            read = offset if offset is not None else self.start.st_size
            return end.st_size != read or end.st_size < self.start.st_size or os.pread(self.fd, len(self.head), 0) != self.head
        except OSError:
            return True


def report_change(watch: FileWatch, offset: int | None, records: int, line: int, whole: bool = False) -> None:
    """Log one warning if `watch`'s file changed: the file, the change, and the `records` read (to `line`) that were scored.
    `offset` and `whole`: as `FileWatch.change` takes them."""
    what = watch.change(offset, whole)
    if what is None:
        return
    log.warning("the dataset changed while the run read it; only the records read are scored", file=str(watch.path),
                change=what, records_read=records, last_line=line,
                hint="run again once the file is complete (with --force: the dataset changed since the run began)")


def watch_of(fh: Any, path: Path) -> FileWatch | None:
    """A `FileWatch` of the open file `fh`, or None where its descriptor cannot be inspected."""
    try:
        return FileWatch(fh.fileno(), path)
    except (OSError, ValueError, AttributeError):
        return None
