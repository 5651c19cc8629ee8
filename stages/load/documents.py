"""A dataset file of a line-by-line format that holds JSON written over several lines (pretty-printed), not JSON Lines.

MLflow's `Trace.to_json(pretty=True)`, `json.dump(export, f, indent=2)` of an OpenAI Agents SDK trace, an OTLP export
saved by an editor's "format document": one JSON value over hundreds of lines. Read a line at a time it was hundreds
of "invalid record" errors ("the line ends early" on line 1, "Extra data" or "Expecting value" on every other line),
and a run stopped after 100 of them saying the format was probably wrong when it was right.

- Telling it (`multiline_start`), from the first two lines that hold something, never the whole file: the first line
  opens an object or an array and does not close it (JSON Lines holds a whole value on every line), and the next one
  continues it. `{` or `[` alone on the first line (what `json.dumps(..., indent=...)`, `jq`, JavaScript's
  `JSON.stringify(..., null, 2)` and Go's `MarshalIndent` write) is enough for `[`; after a `{` the next line must
  start with a key (or be the `}`). A first line that opens more (`{"a": 1,`, a JSON Lines record cut short) counts only
  when it stops where more text is needed and the next line is indented or starts with a key or a closing bracket and
  is no whole JSON value of its own: a JSON Lines file whose first line was cut short (a writer killed mid-record) has
  a whole record on its next line, and is read line by line as before, the cut line its own error.
- Reading it (`read_document`): a top-level array's elements are the records, each at the line it starts on, as a
  `.json` array file is read (`read_json_array`, which also says what is wrong with a broken one); anything else is a
  sequence of JSON values (one object, or several written one after another), each value one record at the line it
  starts on. A format one of whose records may itself be an array (smolagents' `get_full_steps()` list) reads with
  `arrays=False` (`read_jsonl`'s too): the array is then one record, as it is on one line. A value that does not read is one error naming the line and column of the JSON error and that the file
  looks like JSON written over several lines, not JSON Lines; the read stops there (where the next value would start
  cannot be told), the records before it read.
- What the line readers' consumers get (`as_line`): each record as the one JSON line the JSON Lines form of the file
  would hold (`json.dumps`), so every format's decoding, id peeking and errors are as for that line. Such a record has
  no byte offset (`RawRecord.end` None): the resume cursor does not apply and a resume reads the file from its start,
  the finished records skipped by their results (as for a `.json` array).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from tracejudge.core.regular_file import open_regular
from tracejudge.stages.load import JSON_ERRORS, RawRecord, json_error, json_message, read_json_array, truncation_note
from tracejudge.stages.load.encoding import BOM, ESCAPED, byte_size, escaped_byte, strip_bom
from tracejudge.stages.load.framing import CUT_SHORT, REST

__all__ = ["as_line", "multiline_start", "read_document", "read_document_lines", "read_values"]

_LINE = 1 << 20  # how much of each of the first two lines is looked at; a longer first line is a JSON Lines record
_CHUNK = 1 << 20
_SURE = 64  # characters after a decoding error that show it is not where the text read so far ended
_READ_BUFFER = 1 << 16


def multiline_start(fh: BinaryIO) -> str | None:
    """`"{"` or `"["` when the binary file `fh` holds JSON written over several lines rather than JSON Lines (module
    docstring), else None. Reads at most the first two non-blank lines (`_LINE` bytes of each); leaves `fh` at its start.
    """
    fh.seek(0)
    try:
        first = _next_line(fh, bom=True)
        if first is None or not first[2] or first[1][:1] not in (b"{", b"["):
            return None  # (a first line longer than `_LINE`: a JSON Lines record, never pretty-printed JSON's)
        opener = first[1][:1].decode()
        if first[1] == b"[":
            return opener
        second = _next_line(fh)
        if second is None:
            return None  # one line, cut short: JSON Lines, its line's own error
        raw, text, whole = second
        if first[1] == b"{":
            return opener if text[:1] in (b'"', b"}") else None
        if not (raw[:1] in (b" ", b"\t") or text[:1] in (b'"', b"}", b"]")):
            return None  # (a JSON Lines record starts its line with `{`)
        if not _runs_out(first[1]):
            return None
        return opener if not (whole and _whole(text)) else None
    finally:
        fh.seek(0)


def _next_line(fh: BinaryIO, bom: bool = False) -> tuple[bytes, bytes, bool] | None:
    """The next non-blank line of `fh`: (its bytes, stripped, whether it was read whole), or None at the end of the file.
    A line longer than `_LINE` is given by its first `_LINE` bytes (the rest is not read)."""
    while True:
        raw = fh.readline(_LINE)
        if not raw:
            return None
        whole = raw.endswith(b"\n") or len(raw) < _LINE
        if bom:
            raw, bom = strip_bom(raw), False
        text = raw.strip()
        if text:
            return raw, text, whole


def _runs_out(text: bytes) -> bool:
    """Whether the one line `text` is the start of a JSON value that more text would continue: it fails to decode where
    it ends (not inside a string: pretty-printed JSON never breaks a line there)."""
    try:
        json.loads(text.decode("utf-8"))
    except json.JSONDecodeError as exc:
        return exc.pos == len(exc.doc) and not exc.msg.startswith("Unterminated string")
    except (UnicodeDecodeError, *JSON_ERRORS):
        return False
    return False


def _whole(text: bytes) -> bool:
    try:
        json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, *JSON_ERRORS):
        return False
    return True


def as_line(value: Any) -> bytes:
    """`value` as the one JSON line (with its newline) the JSON Lines form of its file holds: `json.dumps` of it, its
    text as it is where UTF-8 can encode it (a lone surrogate from a `\\ud83d` escape cannot: then escaped)."""
    try:
        return json.dumps(value, ensure_ascii=False).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(value).encode("ascii") + b"\n"


def read_document_lines(path: Path, limit: int | None = None, arrays: bool = True) -> Iterator[RawRecord]:
    """`read_document`, each record that reads given as its JSON line (`as_line`), as `read_jsonl` gives a line's bytes."""
    for record in read_document(path, limit, arrays):
        if record.error is None:
            try:
                record.payload = as_line(record.payload)
            except JSON_ERRORS as exc:  # (nested past the stack: the encoder recurses as the decoder did)
                record = RawRecord(record.file, record.line, error=json_error(exc))
        yield record


def read_document(path: Path, limit: int | None = None, arrays: bool = True) -> Iterator[RawRecord]:
    """The records of a file of JSON written over several lines, each decoded, with the line it starts on.

    A file whose first value is an array is read by `read_json_array` (its elements the records) when `arrays` is
    true; otherwise every JSON value of the file is one record (`read_values`). `limit` stops after that many records.
    """
    with open_regular(path, _READ_BUFFER) as fh:
        head = strip_bom(fh.read(_LINE)).lstrip()
    if arrays and head[:1] == b"[":
        yield from read_json_array(path, limit)
    else:
        yield from read_values(path, limit)


class _Text:
    """The file's text from the start of the line holding `pos`, read a chunk at a time (decoded with
    `errors="surrogateescape"`: a byte that is not UTF-8 is its record's error, not the file's stop)."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.decode = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape").decode
        self.buf, self.pos, self.line = "", 0, 1  # `line`: the line `buf[pos]` is on
        self.base = 0  # the byte offset of `buf[0]` in the file
        self.eof = self.started = False
        self.escaped = False  # whether `buf` holds a byte that is not UTF-8 (`ESCAPED`): else no value needs looking at

    def fill(self) -> bool:
        """Read more (at least as much as is held, so a value decoded again after each read costs its size once)."""
        if self.eof:
            return False
        more = self.fh.read(max(_CHUNK, len(self.buf) - self.pos))
        if not self.started:
            self.started = True
            if more.startswith(BOM):
                more, self.base = more[len(BOM):], len(BOM)
        text = self.decode(more, final=not more)
        if not more:
            self.eof = True
            if not text:
                return False
        cut = self.buf.rfind("\n", 0, self.pos) + 1  # (kept from a line's start: columns are counted from it)
        self.base += byte_size(self.buf[:cut])
        self.buf, self.pos = self.buf[cut:] + text, self.pos - cut
        self.escaped = self.escaped or ESCAPED.search(text) is not None
        return True

    def skip_ws(self) -> bool:
        """Move past white space; False at the end of the file."""
        while True:
            buf, pos = self.buf, self.pos
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            self.line += buf.count("\n", self.pos, pos)
            self.pos = pos
            if pos < len(buf):
                return True
            if not self.fill():
                return False

    def place(self, at: int) -> tuple[int, int]:
        """The 1-based line and column (in characters) of `buf[at]`, at or after `pos`."""
        return self.line + self.buf.count("\n", self.pos, at), at - self.buf.rfind("\n", 0, at)


def read_values(path: Path, limit: int | None = None) -> Iterator[RawRecord]:
    """Every JSON value of the file at `path` (white space between them), each decoded, with the line it starts on.

    A value that does not decode is one record with `error` (`_broken`: the line and column of the JSON error, that
    the file ends early when it does, and that it looks like JSON written over several lines), and the read stops there.
    A value holding a byte that is not UTF-8 is its own error, and the read goes on. `limit` stops after that many
    records. A file changed while it was read is logged as `read_jsonl` says.
    """
    from tracejudge.stages.load.watch import report_change, watch_of

    name = str(path)
    raw_decode = json.JSONDecoder().raw_decode
    count = 0
    with open_regular(path, _READ_BUFFER) as fh:
        watch = watch_of(fh, path)
        t = _Text(fh)
        t.fill()
        while t.skip_ws():
            start = t.line
            value, error, end = _value(t, raw_decode, count)
            if error is None and t.escaped and (bad := ESCAPED.search(t.buf, t.pos, end)) is not None:
                at = bad.start()
                error = f"record is not valid UTF-8: {escaped_byte(t.buf, at, *t.place(at), t.base + byte_size(t.buf[:at]))}"
            yield RawRecord(name, start, error=error) if error is not None else RawRecord(name, start, value)
            if end < 0:
                return
            t.line += t.buf.count("\n", t.pos, end)
            t.pos = end
            count += 1
            if limit is not None and count >= limit:
                return
        if watch is not None:
            report_change(watch, None, count, t.line, whole=True)


def _value(t: _Text, raw_decode: Any, count: int) -> tuple[Any, str | None, int]:
    """`(value, None, end)` of the JSON value at `t.pos` (reading on as it needs), or `(None, error, -1)`; `count`
    values came before it."""
    while True:
        try:
            value, end = raw_decode(t.buf, t.pos)
        except json.JSONDecodeError as exc:
            # An error with text after it is the value's own, not where the text read so far ends: no need to read on.
            if (exc.pos + _SURE >= len(t.buf) or exc.msg.startswith("Unterminated string")) and t.fill():
                continue
            line, column = t.place(exc.pos)
            return None, _broken(f"invalid JSON: {json_message(exc)} at line {line} column {column}{truncation_note(exc, 'file')}",
                                 t.line, count), -1
        except JSON_ERRORS as exc:  # nested past the stack, a number of too many digits: where it ends is not looked for
            return None, _broken(json_error(exc), t.line, count), -1
        if not isinstance(value, (dict, list)) and len(t.buf) - end < _SURE and t.fill():
            continue  # a number cut where the text read so far ends reads as a shorter one
        return value, None, end


def _broken(why: str, start: int, count: int) -> str:
    """The error of a value that does not read (`why`), starting on line `start` after `count` values that did."""
    cut = why.endswith(CUT_SHORT)
    if not count:
        return (f"{why}; the file looks like one JSON document written over several lines (pretty-printed), not JSON Lines, "
                f"and {'it is cut short' if cut else 'it breaks there'}")
    return (f"{why}; the file looks like JSON documents written over several lines (pretty-printed) one after another, not JSON "
            f"Lines, and the one starting at line {start} {'is cut short' if cut else 'breaks there' + REST}")
