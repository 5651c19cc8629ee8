"""What lies between the records of one JSON document (a τ-bench array, a τ²-bench `simulations` list), as its readers report it.

- Ids. A record that cannot be read is reported under `file:line` (`extract.raw_case_id`). In a file written on one
  line (`json.dumps` without an indent) every record starts on line 1: under one id, the results of the second and
  later broken records were taken for the first's and dropped. A broken record starting on a line where another
  record started before it goes under `file:line:column` (`LineStarts`); the first of its line keeps `file:line`, so
  the ids of a file with a record a line are as before.
- Warnings (a comma lost, repeated, left before `]` or before the first record) are said when the read ends by itself
  (`Notes`), as the check that the file did not change while it was read (`watch`). Said as found, they were said again
  by each read before the run's own: the run's check that the file is of its format, which looks at its first records
  and stops (and says nothing now), and reads that go to the end, inside `quiet()`: the count of records for the
  progress bar's total, and the τ-bench check that the runs are of the tasks file's domain.
- The words for a read that cannot go on, shared by both readers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from tracejudge.core.log import get_logger

__all__ = ["CUT_SHORT", "REST", "LineStarts", "Notes", "count_quietly", "quieted", "cut_between", "key_for_record", "lost_brackets", "lost_quote",
           "misread", "missing_colon", "quiet"]

REST = "; the rest of the file is not read"  # (said wherever the read stops before the file's end)
CUT_SHORT = "(it looks truncated)"
log = get_logger("tracejudge.load")
_QUIET: ContextVar[bool] = ContextVar("tracejudge_framing_quiet", default=False)


def lost_quote(what: str) -> str:
    return f"; a quote is missing in or near this {what}, so where it ends cannot be told{REST}"


def lost_brackets(what: str) -> str:
    return f"; a bracket is missing, or one too many, in or near this {what}, so where it ends cannot be told{REST}"


def missing_colon(exc: json.JSONDecodeError, where: str) -> str | None:
    """The error of a key whose `:` was lost (`{"task_id" 3, …}`, a hand edit), or None when `exc` is not one.

    The decoder says "Expecting ':' delimiter" wherever a key is not followed by a `:`; it is a lost `:` when a
    value starts there (`3`, `"`, `{`, `[`, `-`, `t`, `f`, `n`), else a quote lost before it (`{"a: 1, "b": 2}`):
    the caller says it only once the scan of the record's strings and brackets found its end (`skip_broken_value`).
    `where` is "line L column C" of the value the `:` should precede.
    """
    doc, at = exc.doc, exc.pos
    if exc.msg != "Expecting ':' delimiter" or doc[at : at + 1] not in _VALUE_START:
        return None
    end = at - 1
    while end > 0 and doc[end] in " \t\r\n":
        end -= 1
    start = end - 1
    while start >= 0 and not (doc[start] == '"' and _unescaped(doc, start)):
        start -= 1
    try:
        key = json.loads(doc[start : end + 1]) if start >= 0 else None
    except ValueError:
        key = None
    shown = "" if not isinstance(key, str) else " " + _shown(key)
    return f"invalid JSON: the key{shown} has no ':' after it (a ':' is missing before the value at {where})"


_VALUE_START = frozenset('"{[-0123456789tfn')


def _unescaped(doc: str, at: int) -> bool:
    """Whether the character at `doc[at]` is not escaped (an even number of backslashes before it)."""
    n = 0
    while at - n - 1 >= 0 and doc[at - n - 1] == "\\":
        n += 1
    return n % 2 == 0


def _shown(key: str) -> str:
    shown = json.dumps(key, ensure_ascii=False)
    return shown if len(shown) <= 40 else shown[:36] + '…"'


def cut_between(where: str, what: str) -> str:
    """The error of a file that ends between two records, or before the first: it was cut, and what followed is lost."""
    return f"the file ends here, before {where}'s ']': the file ends early {CUT_SHORT}, and {what} after the cut are not in it"


def misread(value: Any, after: str) -> str | None:
    """How a string that decoded where a record starts shows the record broken, from `after`, the character after it
    ("" at the end of the file): "key" when it is a key (`"task_id": 1, …`: the record's `{` was lost), "quote" when it
    is followed by text no JSON string is (`"{"task_id": …`: a quote added, or the string's own quote lost); else None.

    Read as a record, the key was an invalid "string" record and the rest of the record the read's stop.
    """
    if not isinstance(value, str) or after in ("", ",", "]", "[", "{", '"'):
        return None
    return "key" if after == ":" else "quote"


def key_for_record(key: str, where: str, what: str) -> str:
    shown = _shown(key)
    return (f"invalid JSON: a key ({shown}:) where a {what} starts, at {where}: the {what}'s opening '{{' is missing, "
            f"or a '}}' too many ended the {what} before it early")


class LineStarts:
    """The lines records of one read started on, to give a broken record an id no other record of the file has."""

    def __init__(self, file: str) -> None:
        self.file, self.last = file, 0

    def see(self, line: int) -> bool:
        """Whether a record started on `line` before the one starting there now. Said of every record, read or not:
        when it is, a record there that names no case goes under `place(line, column)`, else under `file:line`."""
        shared, self.last = line == self.last, line
        return shared

    def place(self, line: int, column: int) -> dict[str, str]:
        """The payload of an error record that carries its id (`extract.raw_case_id`): `file:line:column`."""
        return {"id": f"{self.file}:{line}:{column}"}


def count_quietly(read: Callable[[], Iterable[Any]]) -> int:
    """How many records `read()` yields, its warnings unsaid (a format's `count`, the progress bar's total)."""
    with quiet():
        return sum(1 for _ in read())


@contextmanager
def quiet() -> Iterator[None]:
    """The reads inside say no `Notes` warning: reads of a file besides the run's own, which warns of it."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def quieted() -> bool:
    """True inside `quiet()`: a reader's own warnings (outside `Notes`) are left to the run's read too."""
    return _QUIET.get()


class Notes:
    """The warnings of one read, said by `say` when the read ends by itself (at the end of the file, where the read
    stops, at its limit): a consumer that closes the reader before then silences them."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.pending: list[tuple[str, int]] = []

    def add(self, event: str, line: int) -> None:
        self.pending.append((event, line))

    def say(self) -> None:
        if not _QUIET.get():
            for event, line in self.pending:
                log.warning(event, file=self.file, line=line)
        self.pending.clear()
