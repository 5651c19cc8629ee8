"""Stage `load`: stream raw records from dataset files, never reading a file whole.

A `RawRecord` carries where it came from (file, 1-based line) and either the
raw payload (bytes of one JSONL line, or one decoded element of a JSON array)
or the reason it could not be read. Decoding into a `Case` is stage
`extract`'s job, so a malformed record becomes one `invalid_input` result
instead of stopping the stream.
"""

from __future__ import annotations

import codecs
import io
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracejudge.core.regular_file import open_regular
from tracejudge.stages.load.depth import MAX_DEPTH, too_deep
from tracejudge.stages.load.encoding import BOM, NotUtf8, compressed, encoding_problem, nul_byte, utf8_text, wide_encoding, wide_line

__all__ = ["LOST_QUOTES", "JSON_ERRORS", "MAX_DEPTH", "NotUtf8", "RawRecord", "UNBALANCED", "count_jsonl", "deep_message", "encoding_problem", "json_error", "json_message", "jsonl_lines",
           "line_column", "loads", "loads_line", "too_deep", "read_json_array", "read_jsonl", "skip_broken_value", "skip_json_value", "truncation_note", "utf8_text"]

# What decoding hostile JSON raises besides `JSONDecodeError`: `RecursionError` for
# nesting deeper than the interpreter's stack (depth ~1,000 and up), `ValueError` for
# an integer of more than `sys.get_int_max_str_digits()` (4,300) digits.
JSON_ERRORS = (ValueError, RecursionError)



def json_message(exc: json.JSONDecodeError) -> str:
    """`exc.msg` without the trailing "at" some of the json module's messages end in
    ("Invalid control character at"), so "… at column N" does not read "at at"; "a NUL byte" where the decode stopped
    at one, which the decoder calls a control character or no value, naming no character an editor shows."""
    if exc.pos < len(exc.doc) and exc.doc[exc.pos] == "\x00":
        return "a NUL byte"
    return exc.msg.removesuffix(" at")


def deep_message(where: str = "", values: bool = False) -> str:
    """The reason for a record nested deeper than `MAX_DEPTH` levels; `where` (" at line 1 column 202") says where it goes past.

    `values`: the record model refused it, not the bracket count: a model counts the value inside the innermost array or
    object as a level of its own, so a line of exactly `MAX_DEPTH` levels of brackets can be one too many for it.
    """
    if values:
        return (f"JSON nested too deeply{where}: more levels than a record may hold ({MAX_DEPTH} at most, the value inside "
                f"the innermost array or object counted as one)")
    return f"JSON nested too deeply: more than {MAX_DEPTH} levels of arrays and objects{where}"


_BLANK = re.compile(r"[ \t\r\n]*\Z")
# The start of a JSON token that more text would have completed: a keyword, a number's sign, point or exponent, an escape.
_CUT = re.compile(r"t|tr|tru|f|fa|fal|fals|n|nu|nul|-|\.|[eE][+-]?|\\")
_CUT_ESCAPE = re.compile(r"u[0-9a-fA-F]{0,3}")  # (json places a cut `\u12` escape's error at its `u`)


def truncation_note(exc: json.JSONDecodeError, what: str = "line") -> str:
    """"; the line ends early (it looks truncated)" (`what`: line, file, text) when `exc` is where the text runs out, else "".

    A line cut short (a writer killed mid-record, a copy stopped at a size) fails where the decoder ran out of text,
    with a message about the last character it saw ("Invalid control character" for the newline ending a line cut
    inside a string, "Expecting ',' delimiter" at a 20 MB line's end), which says nothing of the cut. It is one when:
    the string was never closed ("Unterminated string starting at", wherever it started); or only white space follows
    the error; or what follows is the start of a token the cut left (`tru`, `nul`, `-`, the `.` or `e+` of `1.`,
    `1e+`, a backslash or `\\u12` of an escape: `_CUT`), the decoder stopped one to four characters before the end.
    Not for other text there (`{"a": 1,}`, `[1}`, a line `x`: malformed, whole), nor for "Extra data" (a value that
    ended, then more), nor for a blank text (nothing was cut: there was nothing).
    """
    if exc.msg == "Extra data" or _BLANK.match(exc.doc):
        return ""
    doc, end = exc.doc, len(exc.doc)
    while end > exc.pos and doc[end - 1] in " \t\r\n":  # (not `rstrip`: a copy of a 20 MB line)
        end -= 1
    token = _CUT_ESCAPE if exc.msg.startswith("Invalid \\uXXXX") else _CUT
    cut = exc.msg.startswith("Unterminated string") or end == exc.pos or (end - exc.pos <= 4 and token.fullmatch(doc, exc.pos, end))
    return f"; the {what} ends early (it looks truncated)" if cut else ""


def json_error(exc: BaseException, what: str = "text") -> str:
    """A one-line reason for a `JSON_ERRORS` exception, naming the limit that was hit; for a decoding error, where
    it is, and that the `what` (text, file) ends early when it does (`truncation_note`)."""
    if isinstance(exc, RecursionError):
        return deep_message()
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {json_message(exc)} at line {exc.lineno} column {exc.colno}{truncation_note(exc, what)}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not valid UTF-8: {exc.reason} at byte {exc.start}"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "integer string conversion" in text:
        return f"a JSON number has more digits than can be read (limit {sys.get_int_max_str_digits()})"
    return f"invalid JSON: {text[:200]}"


def line_column(exc: json.JSONDecodeError) -> int:
    """The 1-based column of a decoding error in a one-line record (a JSONL line).

    The line's own end counts as its last column + 1: a truncated line read
    with its newline would otherwise be reported at "line 2, column 1",
    past the newline, which names a column of no line.
    """
    return min(exc.pos, len(exc.doc.rstrip("\r\n"))) + 1


def loads(data: str | bytes) -> Any:
    """`json.loads` of UTF-8 text, raising only `ValueError` (reason from `json_error`) for any hostile input.

    Bytes are decoded as UTF-8 only (`json.loads` would guess UTF-16 from a
    leading FF FE): bytes that are not raise `NotUtf8`, a `ValueError` saying
    why (`encoding_problem`). Deep nesting (`RecursionError`) and huge integers
    are turned into a `ValueError`, so callers that report bad records need catch only that.
    """
    text = utf8_text(data)
    try:
        return json.loads(text)
    except JSON_ERRORS as exc:
        raise ValueError(_wide_line(data) or json_error(exc)) from None


def loads_line(raw: str | bytes) -> Any:
    """One JSON Lines record decoded, as `loads`, with a reason for a user when it cannot be.

    Raises `ValueError`: `line is not valid UTF-8: …` (`NotUtf8`, or NUL bytes
    of UTF-16 text, which decode as UTF-8 but are not JSON: `wide_line`), `invalid JSON: <what>
    at column N` (with "; the line ends early (it looks truncated)" for a line
    cut short, `truncation_note`), `invalid JSON: a NUL byte at column N …` where
    the decode stopped at a NUL of a UTF-8 line (`nul_byte`), or `json_error`'s reason for hostile input.
    """
    text = utf8_text(raw)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        nul = nul_byte(text, exc.pos)
        why = f"invalid JSON: {nul or json_message(exc) + f' at column {line_column(exc)}' + truncation_note(exc)}"
        raise ValueError(_wide_line(raw) or why) from None
    except JSON_ERRORS as exc:
        raise ValueError(json_error(exc)) from None


def _wide_line(raw: str | bytes) -> str | None:
    # NUL bytes are UTF-8, but a line of UTF-16 text is mostly them, in step: say so rather than where its JSON broke.
    why = wide_line(raw) if isinstance(raw, bytes) and b"\x00" in raw else None
    return f"line is not valid UTF-8: {why}" if why else None


def skip_json_value(buf: str, pos: int, quotes_checked: bool = False, opened: str = "") -> int:
    """The index just after the JSON value starting at `buf[pos]`, or -1 if `buf` ends first.

    A scan of brackets and strings only (no recursion, no number parsing), so
    a value too deep or too large to decode can still be stepped over.
    `quotes_checked`: `LOST_QUOTES` for a value whose strings do not line up (`skip_broken_value`).
    `opened`: the brackets taken as open before `pos` (`"{"` for a record whose own `{` was lost: the scan ends
    at the `}` closing it). A closing bracket of the other kind than the one it would close is `UNBALANCED`:
    a bracket was lost or added, and the scan would otherwise end the value inside a later record.
    """
    stack = list(opened)
    i, n = pos, len(buf)
    key = opened[-1:] == "{"  # the next string is an object's key
    while i < n:
        c = buf[i]
        if c == '"':
            at_key, key = key, False
            i += 1
            while i < n and buf[i] != '"':
                i += 2 if buf[i] == "\\" else 1
            if i >= n:
                return -1
            if quotes_checked:
                j = i + 1
                while j < n and buf[j] in " \t\r\n":
                    j += 1
                if j >= n:
                    return -1
                # A key followed by a value is a key whose `:` was lost (`{"task_id" 3, …}`): its strings still line up, and
                # the scan goes on as if the `:` were there. Inside out, a "string" is followed by the text of a real one.
                if buf[j] not in ":,}]" and not (at_key and buf[j] in _VALUE_START):
                    return LOST_QUOTES
        elif c in "[{":
            stack.append(c)
            key = c == "{"
        elif c in "]}":
            if not stack:  # a scalar ended by its container's close
                return i
            if stack.pop() != _OPENS[c]:
                return UNBALANCED
            if not stack:
                return i + 1
            key = False
        elif c == ",":
            if not stack:
                return i
            key = stack[-1] == "{"
        elif c not in " \t\r\n":
            key = False
        i += 1
    return -1


_OPENS = {"]": "[", "}": "{"}
_VALUE_START = frozenset('"{[-0123456789tfn')
LOST_QUOTES = -2
"""`skip_broken_value`'s answer for a value whose strings do not line up: where it ends cannot be told."""
UNBALANCED = -3
"""`skip_json_value`'s answer for a value whose brackets do not pair up (one lost, or one too many)."""


def skip_broken_value(buf: str, pos: int, opened: str = "") -> int:
    """`skip_json_value` for a value that failed to decode: its end, -1 if `buf` ends first, `LOST_QUOTES` or `UNBALANCED`.

    A value broken by a comma too many or a bad literal still has its strings and brackets in place, and the
    scan finds its end. One that lost a quote has every string after the loss read inside out: the scan
    would end it somewhere in a later record, and the objects inside that record would read as records of
    their own. Inside out, a "string" ends at the quote that opens a real one, so what follows it is that
    string's text, not what may follow a JSON string (`:`, `,`, `}`, `]`): at the first such string the
    answer is `LOST_QUOTES`. A key followed by the start of a value (`{"task_id" 3, …}`: its `:` lost) is
    passed as if the `:` were there: its strings line up, and the scan finds the value's end (`framing.missing_colon`).
    """
    return skip_json_value(buf, pos, quotes_checked=True, opened=opened)


@dataclass(slots=True)
class RawRecord:
    """One record as read from disk. `payload` is bytes (JSONL) or a decoded JSON value.

    `end` is the byte offset just past the record's line in a JSONL file
    (`read_jsonl`), or None where it is not known (a JSON array's element).
    """

    file: str
    line: int
    payload: Any = None
    error: str | None = None
    end: int | None = None


def read_jsonl(path: Path, limit: int | None = None, start: tuple[int, int] | None = None, arrays: bool = True) -> Iterator[RawRecord]:
    """Yield every non-blank line of a JSONL file as bytes, with its 1-based line number and end offset.

    A UTF-8 byte-order mark at the start of a line is dropped, and a NUL a UTF-16 LE line's newline left there (`jsonl_lines`).
    Memory is one line at a time. `limit` stops after that many records.
    A file that is not text — at least half of the lines in its first 64 KiB
    holding a NUL byte or invalid UTF-8 (an archive, an image, a UTF-16 or
    Latin-1 export) — is one record with `error` set, naming the file (and the
    encoding, for UTF-16 or UTF-32), not one error per line; a bad line among
    good ones is that line's own error.
    `start` = `(byte offset, lines before it)` begins reading at that offset,
    which must be the start of a line (a resume cursor, `tracejudge.engine.cursor`):
    line numbers and offsets go on from there as if every line before had been read.
    A file cut short, replaced or rewritten while it was read is logged as a warning at the
    end of the read (`watch.report_change`), naming what was read.
    A file of JSON written over several lines (pretty-printed: `documents.multiline_start`), read from its start, is
    read as that JSON (`documents.read_document_lines`): each record (an array's elements when `arrays`, else each JSON
    value) as the bytes of its one JSON line, at the line it starts on, with no `end`.
    """
    from tracejudge.stages.load.watch import report_change, watch_of

    name = str(path)
    count = 0
    offset, before = start or (0, 0)
    lineno = before
    # A 64 KiB buffer: with the default 8 KiB, a line longer than the buffer (a recorded trace runs to
    # several KiB) is put together from several reads, and iterating 88 MB of 9 KiB lines cost 0.13 CPU-s, not 0.03.
    # (Not larger: what the buffer read ahead is read before a change to the file, which the watch then reports.)
    with open_regular(path, _READ_BUFFER) as fh:
        watch = watch_of(fh, path)
        why = _not_text(fh.read(_SNIFF))
        if why is not None:
            yield RawRecord(name, 1, error=f"not a text JSONL file ({why}); nothing in it was read")
            return
        if start is None and multiline_start(fh) is not None:
            yield from read_document_lines(path, limit, arrays)
            return
        for lineno, (size, line) in enumerate(jsonl_lines(fh, offset), before + 1):
            offset += size
            if not line or line.isspace():  # blank (what `strip` empties): told without copying the line
                continue
            yield RawRecord(name, lineno, line, end=offset)
            count += 1
            if limit is not None and count >= limit:
                return
        if watch is not None:
            report_change(watch, offset, count, lineno)


def count_jsonl(path: Path, limit: int | None = None) -> int:
    """How many records `read_jsonl(path, limit)` yields (a progress total), counted without making them: its
    non-blank lines (as `jsonl_lines` gives them), or 1 for a file that is not text; a file of JSON written over
    several lines, its records as `read_jsonl` reads them (decoded: there are no lines to count)."""
    with open_regular(path, _READ_BUFFER) as fh:
        if _not_text(fh.read(_SNIFF)) is not None:
            return 1
        if multiline_start(fh) is not None:
            from tracejudge.stages.load.framing import count_quietly

            return count_quietly(lambda: read_document(path, limit))
        n = sum(1 for _, line in jsonl_lines(fh) if line and not line.isspace())
    return n if limit is None else min(n, limit)


_SNIFF = 1 << 16
_READ_BUFFER = 1 << 16


def jsonl_lines(fh: Any, offset: int = 0) -> Iterator[tuple[int, bytes]]:
    """Each line of the binary file `fh` from byte `offset` (the start of a line): (its size in the file, its text).

    The text is without what belongs to no record: a UTF-8 byte-order mark at its start (editors on Windows write one;
    after the first line it is where files were joined, `cat a.jsonl b.jsonl`, each beginning with its own), and a NUL
    that ends the line before. A UTF-16 LE line's newline is 0A 00: split at the 0A, its 00 would begin the next line,
    spoiling a good UTF-8 line after it, or making a line of its own after the last. So a line starting with a NUL after
    one ending in a UTF-16 LE "\\n" or "\\r\\n" loses that NUL; the size still counts it, so offsets stay the file's. A UTF-16
    BE line ends in 00 0A too, its own newline whole, and the next line's NUL is its own: told apart by where the 0A
    falls, two bytes a character from the line's start (an even number of bytes before it in LE, odd in BE). A resume
    (`offset`) does not read the line before, and takes a line ending in 00 0A for UTF-16 LE.
    """
    wide = False
    if offset >= 2:
        # A resume begins where a line ended: the line before is not read, only its last two bytes.
        fh.seek(offset - 2)
        wide = fh.read(2) == b"\x00\n"
    fh.seek(offset)
    for line in fh:
        size, ends_wide = len(line), line.endswith(b"\x00\n")
        if wide and line[:1] == b"\x00":
            line = line[1:]
        # Ending in 00 0A as read (a blank UTF-16 LE line reads 00 0A, and its newline's 00 begins the next), with the 0A
        # at an even offset once that NUL is dropped: a UTF-16 LE newline.
        wide = ends_wide and len(line) % 2 == 1
        if line.startswith(BOM):
            line = line[len(BOM):]
        yield size, line


def _not_text(head: bytes) -> str | None:
    """Why the first bytes of a file show it is not UTF-8 text, or None when they do not.

    The file is not text when at least half of its first non-blank lines hold
    a NUL byte (binary, UTF-16) or are not UTF-8 (a Latin-1 export); the reason
    names UTF-16 or UTF-32 when the bytes look it (`wide_encoding`). One bad line
    among good ones (a line appended in UTF-16) stays that line's own error.
    """
    lines = [line for _, line in jsonl_lines(io.BytesIO(head))]
    if len(lines) > 1 and not lines[-1].endswith(b"\n"):
        lines = lines[:-1]  # the last may be cut by the sniff
    lines = [line for line in lines if line.strip()]
    bad, first = 0, None
    for line in lines:
        try:
            if line.endswith(b"\n"):
                line.decode("utf-8")
            else:
                # A line the sniff cut (a first line over 64 KiB) may end inside a character: those bytes are not an error.
                codecs.getincrementaldecoder("utf-8")().decode(line, final=False)
        except UnicodeDecodeError as exc:
            bad += 1
            first = first or f"{exc.reason} at byte {head.find(line) + exc.start}"
        else:
            bad += b"\x00" in line
    if not bad or 2 * bad < len(lines):
        return None
    if (why := compressed(head) or wide_encoding(head)) is not None:
        return why
    if (nul := head.find(b"\x00")) >= 0:
        return f"a NUL byte at byte {nul}: binary or UTF-16"
    return f"not UTF-8: {bad} of its first {len(lines)} lines are not, the first {first}"


# Last: the array reader uses what this module defines above.
from tracejudge.stages.load.json_array import read_json_array  # noqa: E402
from tracejudge.stages.load.documents import multiline_start, read_document, read_document_lines  # noqa: E402
