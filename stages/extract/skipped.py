"""Records a reader leaves out on purpose, with a warning of its own (format `mlflow`'s traces still in progress).

A dataset of which no record reads is refused as a config error saying what the file holds (`first_records.no_records`);
a file whose every record was left out so holds records of the right format, and the refusal says why none was read
instead (`skipped_text`). Per process, like the warnings: a run reads a file more than once.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["note_skipped", "skipped_text"]

_SKIPPED: dict[str, dict[int, str]] = {}  # file -> line -> why it was left out


def _key(path: Any) -> str:
    return os.path.abspath(str(path))


def note_skipped(file: Any, line: int, why: str) -> None:
    """Record that the record at `file:line` was left out, `why` saying what it was (`"a trace still in progress"`)."""
    _SKIPPED.setdefault(_key(file), {})[line] = why


def skipped_text(path: Any) -> str | None:
    """`"its 2 records were left out (…)"` for a file some of whose records were left out, else `None`."""
    found = _SKIPPED.get(_key(path))
    if not found:
        return None
    whys = sorted(set(found.values()))
    n = len(found)
    return f"its {'record was' if n == 1 else f'{n} records were'} left out ({'; '.join(whys)}), as the warning{'' if n == 1 else 's'} above say{'s' if n == 1 else ''}"
