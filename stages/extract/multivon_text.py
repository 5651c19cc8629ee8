"""multivon-eval's JSONL reading (`dataset.load_jsonl`), and text its `case_from_dict` loads that a case cannot hold as is.

`load_jsonl` opens the file as UTF-8 text (not `utf-8-sig`), strips each line with `str.strip` and skips it when
nothing is left, then decodes it with `json.loads`. So a line of only Unicode white space (a no-break space, U+2028)
is blank and skipped, one with such space around its object is that object, while a line starting with a byte-order mark is refused (`Unexpected UTF-8 BOM`); multivon
refuses the whole file for it, this reader that line (one bad case never stops a run). `case_from_dict` takes any
text: an empty tool name, which no trace can hold (`records.ToolName`), is read as a name no tool has
(`blank_name`), and half a UTF-16 pair (`"\\ud800"`), which no UTF-8 file can hold, as U+FFFD (`mended`).
"""

from __future__ import annotations

import json
import mmap
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracejudge.stages.extract.common import JsonLine, read_lines
from tracejudge.stages.load import RawRecord
from tracejudge.stages.load.encoding import BOM

__all__ = ["blank_name", "may_hold_lone_surrogate", "mended", "read_multivon"]

_LONE = re.compile("[\ud800-\udfff]")
# A JSON escape of half a UTF-16 pair: only a line holding one can decode to a lone surrogate (a pair decodes whole).
_ESCAPED_HALF = re.compile(rb"\\u[dD][89a-fA-F]")
_ASCII_BLANKS = re.compile(rb"[ \t\r\n\x0b\x0c]*")
_BOM_LINE = ("starts with a UTF-8 byte-order mark, which multivon-eval refuses (its loader reads the file as plain UTF-8: "
             "`Unexpected UTF-8 BOM`); save the file without it")


def blank_name(name: str) -> str:
    """`name` as a trace holds it: an empty or all-whitespace one (multivon loads it) as `(blank tool name "")`, a
    name no tool has, the same for the same text (so an expected `""` still meets a call to `""`); others as they are."""
    return f"(blank tool name {json.dumps(name)})" if not name.strip() else name


def mended(value: Any, keep: frozenset[str] = frozenset()) -> Any:
    """`value` (decoded JSON) with each lone surrogate of its strings and keys replaced by U+FFFD, at any depth; the
    top-level keys in `keep` left as they are (a case id: a changed id could become another case's)."""
    if isinstance(value, str):
        return _LONE.sub("\ufffd", value)
    if isinstance(value, list):
        return [mended(v) for v in value]
    if isinstance(value, dict):
        return {mended(k): v if k in keep else mended(v) for k, v in value.items()}
    return value


def may_hold_lone_surrogate(data: bytes | str) -> bool:
    """Whether a JSON line's text holds an escape of half a UTF-16 pair (a false yes costs one walk, `mended`)."""
    return _ESCAPED_HALF.search(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")) is not None


def read_multivon(dataset: Any) -> Iterator[RawRecord]:
    """The records of a multivon JSONL file (`common.read_lines`), read as `load_jsonl` reads its lines: one of only
    Unicode white space is passed over, and one starting with a byte-order mark is that line's error (a mark before
    nothing else too)."""
    marked = _bom_lines(Path(dataset.path))
    for raw in read_lines(dataset):
        while marked and marked[0] < raw.line:  # (a mark on a line left blank: no record of its own)
            yield RawRecord(str(dataset.path), marked.pop(0), error=f"line {_BOM_LINE}")
        if marked and marked[0] == raw.line:
            marked.pop(0)
            if raw.error is None:
                raw.error = f"line {_BOM_LINE}"
        elif raw.error is None and (stripped := _unicode_stripped(raw.payload.data)) is not None:
            if not stripped:
                continue
            raw.payload = JsonLine(stripped, raw.payload.default_id)  # (`{…}` between no-break spaces: JSON once stripped)
        yield raw
    for line in marked if dataset.limit is None else []:
        yield RawRecord(str(dataset.path), line, error=f"line {_BOM_LINE}")


def _unicode_stripped(data: bytes) -> bytes | None:
    """The line as `str.strip` leaves it when Unicode white space beyond the ASCII blanks the framing passes over
    starts or ends it (`b""`: a blank line), else None: the line as it is (most lines: two byte tests, no copy)."""
    at = _ASCII_BLANKS.match(data).end()  # type: ignore[union-attr]  (no copy of a long line, as `lstrip` makes)
    tail = data[-8:].rstrip()
    if at < len(data) and data[at] < 0x80 and tail and tail[-1] < 0x80:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None  # (not UTF-8: the line's own error, as ever)
    stripped = text.strip()
    return stripped.encode("utf-8") if stripped != text.strip(" \t\r\n\x0b\x0c") or not stripped else None


def _bom_lines(path: Path) -> list[int]:
    """The numbers of the lines of `path` that start with a byte-order mark, in order (most files: none, one find)."""
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            found, line, pos = [], 1, 0
            at = mm.find(BOM)
            while at >= 0:
                line += mm[pos:at].count(b"\n")
                pos = at
                if at == 0 or mm[at - 1] == 0x0A:
                    found.append(line)
                at = mm.find(BOM, at + 1)
            return found
    except (OSError, ValueError):  # (an empty file cannot be mapped; one that cannot be read is the framing's error)
        return []
