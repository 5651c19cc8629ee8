"""The rows of a labels file, each with the `file:line` it starts on, or the problem that cost that line.

Labels are made by hand, so this reads files as spreadsheets and editors write them:

- CSV (`.csv`, `.tsv`, or any file whose first line is a header naming `case_id`, `metric` and `label`): the
  separator is the one that makes such a header — `,`, `;` (Excel where the decimal mark is a comma) or a tab —
  or the one an Excel `sep=;` first line names. Header names are read without case, spaces becoming `_`
  (`Case ID` is `case_id`); blank rows and rows of empty cells (Excel's `;;`) are skipped; a space after a
  separator is not part of the cell. In a `;` or tab-separated file a label or trial written with a decimal comma
  (`0,5`) is that decimal. A row with more filled cells than the header has columns is refused: in a `,` file it is most often
  an unquoted decimal comma, and `0,5` read as the label `0` would give a wrong number with no word said. So is a
  row a quote left open ran on into the next lines, which are then read on their own (`_records`).
- JSON Lines (any other file), one object a line; or a JSON array of objects (a `.json` file as `json.dump`
  writes it), each element named by the line it starts on, and one that is not JSON costing only itself.

A byte that is not UTF-8 costs its row, named with its line and column in the line (1-based, as an editor counts)
and, in a CSV, the column of the header it is in; in a CSV column no label is read from, it costs nothing.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from tracejudge.core.errors import ConfigError
from tracejudge.stages.load.encoding import ESCAPED, byte_size, escaped_byte

__all__ = ["DECIMAL_COMMA", "REQUIRED", "WRITTEN", "label_rows"]

REQUIRED = ("case_id", "metric", "label")
WRITTEN = "label as written"  # a row's label cell before its decimal comma was read (no header name holds a space)
_READ = (*REQUIRED, "trial")
_SEPARATORS = (",", ";", "\t")
DECIMAL_COMMA = re.compile(r"\s*[+-]?\d+,\d+\s*")
_NEXT_OBJECT = re.compile(r"\n[ \t\r]*\{")  # where an array element laid out one a line may start again after a bad one

Row = tuple[str, "dict[str, Any] | str"]  # (`file:line`, the row's fields, or the problem that cost the row)


def label_rows(path: Path, fh: TextIO, base: int) -> Iterator[Row]:
    """Each row of the labels file `path` open as `fh` (UTF-8 with `surrogateescape`, `newline=""`); `base` is the
    byte offset of its text (3 after a byte-order mark). Raises `ConfigError` for a CSV whose header lacks a column, and
    for a file that holds no row at all (empty, blank lines only, a header alone, `[]`), saying what a labels file needs."""
    text = fh.read()
    first = next((line for line in _lines(text) if line.strip()), "")
    as_csv = path.suffix.lower() in (".csv", ".tsv") or (first.lstrip()[:1] not in ("{", "[") and _separator(first) is not None)
    if not text.strip():
        # (Read as a CSV, an empty file had "the CSV header lacks the column(s) … (it has nothing, separated by commas)".)
        what = "0 bytes" if not text and not base else "a byte-order mark only" if not text else "blank lines only"
        raise ConfigError(f"{path}: the labels file is empty ({what}): {_NEEDS}")
    rows = 0
    if as_csv:
        got = _csv_rows(path, text, base)
    elif text.strip().startswith("[") and text.strip().endswith("]"):
        got = _array_rows(path, text, base)
    else:
        got = _json_lines(path, text, base)
    for row in got:
        rows += 1
        yield row
    if not rows:  # (else calibrate judged nothing and ended "no label was read … see the problems above", none above)
        held = "a header row and no label row under it" if as_csv else "an empty JSON array"
        raise ConfigError(f"{path}: the labels file holds {held}: {_NEEDS}")


# What a labels file needs, said when one holds no row at all.
_NEEDS = ("a labels file needs a header row naming its columns, case_id, metric and label (and optionally trial), then one row "
          "per label, e.g. `case_id,metric,label` then `7,TaskCompletion,true`; or JSON Lines, one object a line, "
          '{"case_id": "7", "metric": "TaskCompletion", "label": true}')


def _lines(text: str) -> list[str]:
    # Split only where an editor starts a line: `str.splitlines` also splits at U+2028 or a form feed, which a JSON
    # string may hold, and every later line number would be off.
    return io.StringIO(text, newline="").readlines()


def _names(header: str, sep: str) -> list[str]:
    cells = next(csv.reader([header], delimiter=sep, skipinitialspace=True), [])
    return ["_".join(c.strip().lower().split()) for c in cells]


def _separator(header: str) -> str | None:
    """The separator that makes `header` name every required column, or `None`."""
    return next((sep for sep in _SEPARATORS if set(REQUIRED) <= set(_names(header, sep))), None)


def _csv_rows(path: Path, text: str, base: int) -> Iterator[Row]:
    lines = _lines(text)
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    hint = re.fullmatch(r"sep=(.)\r?\n?", lines[start] if start < len(lines) else "")  # Excel's line naming the separator
    if hint:
        start += 1
    header = lines[start].rstrip("\r\n") if start < len(lines) else ""
    # (A header naming no required column is split where it splits most, so the error shows the names it has.)
    sep = hint.group(1) if hint else _separator(header) or max(_SEPARATORS, key=lambda sep: len(_names(header, sep)))
    names = _names(header, sep)
    twice = [c for c in _READ if names.count(c) > 1]
    if twice:  # (each row's dict kept the last of them: a label read from a column no one chose, without a word)
        cols = ", ".join(str(i + 1) for i, n in enumerate(names) if n == twice[0])
        raise ConfigError(f"{path}:{start + 1}: the CSV header names the column {twice[0]} more than once (columns {cols}): which "
                          "one to read cannot be known; rename or remove the others")
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        shown = ", ".join(repr(n) for n in names) or "nothing"
        raise ConfigError(f"{path}:{start + 1}: the CSV header lacks the column(s) {', '.join(missing)} (it has {shown}, "
                          f"separated by {_sep_name(sep)}; expected case_id, metric, label and optionally trial)")
    offsets = [base]
    for line in lines:
        offsets.append(offsets[-1] + byte_size(line))
    for record, cells in _records(lines, start + 1, sep, names):
        where = f"{path}:{record[0] + 1}"
        if isinstance(cells, str):
            yield where, cells
            continue
        if not any(c.strip() for c in cells):
            continue
        got = _bad_byte(cells, names, lines, record, offsets)
        if got is None and len(cells) > len(names) and any(c.strip() for c in cells[len(names):]):
            got = (f"{len(cells)} cells, but the header has {len(names)} columns: "
                   + ("a comma in a value must be quoted (a decimal comma? write 0.5, not 0,5)" if sep == "," else
                      f"a value holding {_sep_name(sep)} must be quoted"))
        if got is not None:
            yield where, got
            continue
        row = dict(zip(names, cells + [""] * (len(names) - len(cells)), strict=False))  # (a short row: its last cells empty)
        if sep != ",":  # (where a comma separates no cell, Excel wrote it as the decimal mark)
            for key in ("label", "trial"):
                if isinstance(row.get(key), str) and DECIMAL_COMMA.fullmatch(row[key]):
                    if key == "label":
                        row[WRITTEN] = row[key]  # (shown as the file has it: `0,5`)
                    row[key] = row[key].replace(",", ".")
        yield where, row


def _records(lines: list[str], first: int, sep: str, names: list[str]) -> Iterator[tuple[list[int], list[str] | str]]:
    """`(its physical lines, its cells or its problem)` for each CSV record from line index `first` on.

    A quote left open (`"yes`) makes the csv module read every line up to the next quote into one cell: the labels of
    those lines were lost, and the one left said nothing of them. Such a record (`_swallowed`) is refused at its first
    line and the lines after it are read again.
    """
    queue = deque(range(first, len(lines)))
    taken: list[int] = []

    def feed() -> Iterator[str]:
        while queue:
            taken.append(queue.popleft())
            yield lines[taken[-1]]

    while queue:
        reader = csv.reader(feed(), delimiter=sep, skipinitialspace=True)
        while True:
            try:
                cells = next(reader, None)
            except csv.Error as exc:  # (a cell past the csv module's size limit: a quote left open, most often)
                cells = f"not CSV: {exc}"
            if cells is None:
                break
            record = taken[:]
            taken.clear()
            if isinstance(cells, str) or _swallowed(cells, names, [lines[i] for i in record[1:]], sep):
                what = cells if isinstance(cells, str) else (f"a quoted cell opened on this line runs on to line {record[-1] + 1} "
                                                             "(a quote left open?)")
                yield record[:1], f"{what}; the {len(record) - 1} line(s) after it are read on their own" if len(record) > 1 else what
                queue.extendleft(reversed(record[1:]))
                break  # (a new reader: this one's source may have run dry)
            yield record, cells


def _swallowed(cells: list[str], names: list[str], more: list[str], sep: str) -> bool:
    """Whether a record read over the lines `more` too took them by a quote left open: a line break in a column a label
    is read from, or a later line with a separator for each column, as a row has (a note's own line breaks are kept)."""
    # (A break at a cell's edge only, `"no⏎"` as a spreadsheet keeps a cell's trailing Alt+Enter, swallowed no line: its
    # label reads alike; a quote left open takes the next rows into the cell, breaks and all.)
    broken = [i for i, c in enumerate(cells) if "\n" in c.strip() or "\r" in c.strip()
              or ((i >= len(names) or names[i] not in _READ) and ("\n" in c or "\r" in c))]
    return bool(broken) and (any(i < len(names) and names[i] in _READ for i in broken)
                             or any(line.count(sep) >= len(names) - 1 for line in more))


def _sep_name(sep: str) -> str:
    return {",": "commas", ";": "semicolons", "\t": "tabs"}.get(sep, repr(sep))


def _bad_byte(cells: list[str], names: list[str], lines: list[str], record: list[int], offsets: list[int]) -> str | None:
    """The words for the first byte not UTF-8 in a column a label is read from (of the record on physical lines
    `record`), naming that column and the byte's line and column in the file; `None` when there is none.

    A byte in another column (a note typed in a Windows "CSV" file, which is cp1252) changes no label: the row stays.
    """
    before = 0  # the escaped bytes of the cells before: the record's n-th escaped byte is the cells' n-th, quotes being ASCII
    for i, cell in enumerate(cells):
        found = len(ESCAPED.findall(cell))
        if found and i < len(names) and names[i] in _READ:
            break
        before += found
    else:
        return None
    for n in record:
        for bad in ESCAPED.finditer(lines[n]):
            if before == 0:
                at = bad.start()
                return f"{names[i]}: " + escaped_byte(lines[n], at, n + 1, at + 1, offsets[n] + byte_size(lines[n][:at]))
            before -= 1
    return None


def _json_lines(path: Path, text: str, base: int) -> Iterator[Row]:
    offset = base
    for lineno, line in enumerate(_lines(text), 1):
        at, offset = offset, offset + byte_size(line)
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        if (bad := ESCAPED.search(line)) is not None:
            yield where, escaped_byte(line, bad.start(), lineno, bad.start() + 1, at + byte_size(line[:bad.start()]))
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            yield where, f"not JSON: {exc.msg} at column {exc.colno}"
            continue
        yield where, row if isinstance(row, dict) else _not_object(row)


def _not_object(row: Any) -> str:
    return f"expected a JSON object {{\"case_id\", \"metric\", \"label\"}}, got {type(row).__name__ if row is not None else 'null'}"


def _array_rows(path: Path, text: str, base: int) -> Iterator[Row]:
    """The elements of a JSON array, each named by the line it starts on; one that is not JSON is named and the
    reading goes on at the next line starting an object."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    end = text.rstrip().rindex("]")
    while (pos := _skip(text, pos)) < end:
        line = text.count("\n", 0, pos) + 1
        where = f"{path}:{line}"
        try:
            row, stop = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            yield f"{path}:{exc.lineno}", f"not JSON: {exc.msg} at column {exc.colno}"
            again = _NEXT_OBJECT.search(text, max(pos, exc.pos))
            if again is None:
                return
            pos = again.end() - 1
            continue
        if (bad := ESCAPED.search(text, pos, stop)) is not None:
            start = text.rfind("\n", 0, bad.start()) + 1
            bad_line = text.count("\n", 0, bad.start()) + 1
            yield where, escaped_byte(text, bad.start(), bad_line, bad.start() - start + 1, base + byte_size(text[:bad.start()]))
        else:
            yield where, row if isinstance(row, dict) else _not_object(row)
        pos = _skip(text, stop)
        if text.startswith(",", pos):
            pos += 1


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos
