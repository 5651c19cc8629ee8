"""Stage `load`: stream raw records from dataset files, never reading a file whole.

A `RawRecord` carries where it came from (file, 1-based line) and either the
raw payload (bytes of one JSONL line, or one decoded element of a JSON array)
or the reason it could not be read. Decoding into a `Case` is stage
`extract`'s job, so a malformed record becomes one `invalid_input` result
instead of stopping the stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["RawRecord", "read_json_array", "read_jsonl"]

_WS = " \t\r\n"


@dataclass(slots=True)
class RawRecord:
    """One record as read from disk. `payload` is bytes (JSONL) or a decoded JSON value."""

    file: str
    line: int
    payload: Any = None
    error: str | None = None


def read_jsonl(path: Path, limit: int | None = None) -> Iterator[RawRecord]:
    """Yield every non-blank line of a JSONL file as bytes, with its 1-based line number.

    Memory is one line at a time. `limit` stops after that many records.
    """
    name = str(path)
    count = 0
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            yield RawRecord(name, lineno, line)
            count += 1
            if limit is not None and count >= limit:
                return


def read_json_array(path: Path, limit: int | None = None, chunk_size: int = 1 << 20) -> Iterator[RawRecord]:
    """Stream the elements of a top-level JSON array, each with the line it starts on.

    The file is read in chunks of `chunk_size` characters; memory holds one
    chunk plus the element being decoded. A file that is not a JSON array,
    or an element that cannot be decoded, yields one record with `error`
    set; after a broken element the rest of the file cannot be resynchronised
    and reading stops there.
    """
    name = str(path)
    decoder = json.JSONDecoder()
    with open(path, encoding="utf-8", errors="strict") as fh:
        buf = ""
        pos = 0
        line = 1
        eof = False

        def fill() -> bool:
            nonlocal buf, pos, eof
            if eof:
                return False
            more = fh.read(chunk_size)
            if not more:
                eof = True
                return False
            buf = buf[pos:] + more
            pos = 0
            return True

        def skip_ws() -> bool:
            nonlocal pos, line
            while True:
                while pos < len(buf) and buf[pos] in _WS:
                    if buf[pos] == "\n":
                        line += 1
                    pos += 1
                if pos < len(buf):
                    return True
                if not fill():
                    return False

        try:
            fill()
            if not skip_ws() or buf[pos] != "[":
                yield RawRecord(name, line, error="expected a JSON array of records at the top level")
                return
            pos += 1
            count = 0
            first = True
            while True:
                if not skip_ws():
                    yield RawRecord(name, line, error="unexpected end of file inside the top-level array")
                    return
                if buf[pos] == "]":
                    return
                if not first:
                    if buf[pos] != ",":
                        yield RawRecord(name, line, error=f"expected ',' or ']' between records, found {buf[pos]!r}")
                        return
                    pos += 1
                    if not skip_ws():
                        yield RawRecord(name, line, error="unexpected end of file after ','")
                        return
                first = False
                start_line = line
                while True:
                    try:
                        value, end = decoder.raw_decode(buf, pos)
                    except json.JSONDecodeError as exc:
                        if fill():
                            continue
                        yield RawRecord(name, start_line, error=f"invalid JSON: {exc.msg} (line {start_line + buf.count(chr(10), pos, exc.pos)})")
                        return
                    # A value cut at the chunk edge can decode "successfully" (`2.5e10` read as
                    # `2.5`): accept it only once a delimiter or the end of the file follows.
                    after = end
                    while after < len(buf) and buf[after] in _WS:
                        after += 1
                    if (after == len(buf) or buf[after] not in ",]") and fill():
                        continue
                    break
                line += buf.count("\n", pos, end)
                pos = end
                yield RawRecord(name, start_line, value)
                count += 1
                if limit is not None and count >= limit:
                    return
        except UnicodeDecodeError as exc:
            yield RawRecord(name, line, error=f"file is not valid UTF-8: {exc.reason} at byte {exc.start}")
