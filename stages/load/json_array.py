"""Stream the elements of a file holding one top-level JSON array (`read_json_array`): τ-bench runs and tasks.

One record that reads is enough for the others to cost only themselves, bytes included:

- A UTF-8 byte-order mark at the start of the file is dropped, as `jsonl_lines` drops one at the start of a line.
- A byte that is not UTF-8 (one Latin-1 `é`) stopped the whole file: the text reader raised on it, and every record
  was lost. The file is decoded with `errors="surrogateescape"`, which turns each such byte into one code point of
  U+DC80..U+DCFF (`ESCAPED`) that a strict UTF-8 decode never yields; an element whose text holds one is that
  element's own error, naming the byte, its line, column and byte offset in the file (`escaped_byte`). The element is
  stepped over whether or not it decodes (a bad byte outside a string breaks its JSON): a bracket scan
  (`skip_json_value`) finds its end. UTF-8-encoded surrogates (ED A0 80) are refused as bad bytes, as the strict
  reader refused them.
- An element that is not JSON (a comma doubled, a quote lost inside a record a person edited) is that element's
  error, and the same bracket scan steps over it: the records after it are read. Only an element the scan cannot
  end (the file cut inside it, brackets that never balance) stops the read there, with that error.
- A file that is not an array at all and holds such bytes (UTF-16, UTF-32, Latin-1 whole) is one error naming the
  file's encoding or first bad byte (`file_encoding_problem`), as before.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path

from tracejudge.core.log import get_logger
from tracejudge.stages.load import (LOST_QUOTES, JSON_ERRORS, RawRecord, json_error, json_message, skip_broken_value, skip_json_value,
                                    truncation_note)
from tracejudge.stages.load.encoding import BOM, ESCAPED, byte_size, escaped_byte, file_encoding_problem, wide_encoding

__all__ = ["read_json_array"]

_WS = " \t\r\n"
_SNIFF = 1 << 16
_SURE = 64  # characters after a decoding error that show it is not where a chunk ended
_REST = "; the rest of the file is not read"  # (said wherever the read stops before the file's end)
_CUT_SHORT = "(it looks truncated)"
log = get_logger("tracejudge.load")


def read_json_array(path: Path, limit: int | None = None, chunk_size: int = 1 << 20) -> Iterator[RawRecord]:
    """Stream the elements of a top-level JSON array, each with the line it starts on.

    The file is read in chunks of `chunk_size` bytes; memory holds one
    chunk plus the element being decoded. A file that is not a JSON array
    yields one record with `error` set. An element that cannot be decoded as
    JSON yields one record with `error` (its line; "the file ends early" when
    the decoder ran out of text) and is stepped over by a scan of its brackets
    and strings; where that scan cannot find its end (the file ends first) or
    what follows it is not `,` or `]`, reading stops there with that error. An
    element too deep or with too many digits, or holding a byte that is not
    UTF-8, is its own error and the read goes on (module docstring). A file changed while it was read is logged
    as `read_jsonl` says.
    """
    from tracejudge.stages.load.watch import report_change, watch_of

    name = str(path)
    raw_decode = json.JSONDecoder().raw_decode
    # Incremental: a character cut by a chunk's end is decoded with the next chunk.
    decode = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape").decode
    with open(path, "rb") as fh:
        watch = watch_of(fh, path)
        buf = ""
        pos = 0
        line = 1
        # Where `buf[0]` is: its byte offset in the file, and how many characters of its line come before it.
        base, column0 = 0, 0
        eof = False
        started = False

        def fill() -> bool:
            nonlocal buf, pos, eof, base, column0, started
            if eof:
                return False
            more = fh.read(chunk_size)
            skip = 0
            if not started:
                started = True
                while more and len(more) < len(BOM) and BOM.startswith(more):  # a mark cut by a tiny chunk
                    extra = fh.read(chunk_size)
                    if not extra:
                        break
                    more += extra
                skip = base = len(BOM) if more.startswith(BOM) else 0
            text = decode(more[skip:] if skip else more, final=not more)
            if not more:
                eof = True
                if not text:
                    return False
            gone = buf[:pos]
            nl = gone.rfind("\n")
            column0 = len(gone) - nl - 1 if nl >= 0 else column0 + len(gone)
            base += byte_size(gone)
            buf = buf[pos:] + text
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

        def place(at: int) -> tuple[int, int]:
            """The 1-based line and column of `buf[at]` (at or after `pos`) in the file."""
            nl = buf.rfind("\n", 0, at)
            return line + buf.count("\n", pos, at), at - nl if nl >= 0 else column0 + at + 1

        def bad_byte(at: int) -> str:
            """The words for the escaped byte at `buf[at]`: its line, column and offset in the file."""
            return f"not valid UTF-8: {escaped_byte(buf, at, *place(at), base + byte_size(buf[:at]))}"

        fill()
        if not skip_ws() or buf[pos] != "[":
            head = buf[:_SNIFF]
            if ESCAPED.search(head):  # not UTF-8 from its start: UTF-16 or UTF-32 with a mark, Latin-1
                yield RawRecord(name, line, error=f"file is not valid UTF-8: {file_encoding_problem(path)}")
                return
            # UTF-16 text without a byte-order mark decodes as UTF-8, NUL bytes and all: say what the file is.
            wide = wide_encoding(head.encode("utf-8", "surrogatepass")) if "\x00" in head else None
            yield RawRecord(name, line, error=f"file is not valid UTF-8: {wide}" if wide else "expected a JSON array of records at the top level")
            return
        pos += 1
        count = 0
        first = True
        while True:
            if not skip_ws():
                yield RawRecord(name, line, error="unexpected end of file inside the top-level array")
                if watch is not None:
                    report_change(watch, None, count, line)
                return
            if buf[pos] == "]":
                if watch is not None:
                    report_change(watch, None, count, line, whole=True)
                return
            if not first:
                if ESCAPED.match(buf, pos):
                    # A stray byte between records (in the white space after one): its own error; the read goes on after it.
                    yield RawRecord(name, line, error=f"expected ',' or ']' between records, found a byte that is {bad_byte(pos)}")
                    while ESCAPED.match(buf, pos):
                        pos += 1
                    continue
                if buf[pos] in "{[":
                    # A comma lost between two records (`} {`): the next one is read all the same, and the file named.
                    log.warning("JSON array: a comma is missing between two records; read as if it were there", file=name, line=line)
                elif buf[pos] != ",":
                    yield RawRecord(name, line, error=f"expected ',' or ']' between records, found {buf[pos]!r}{_REST}")
                    return
                else:
                    pos += 1
                    if not skip_ws():
                        yield RawRecord(name, line, error="unexpected end of file after ','")
                        return
                    # A comma repeated between records (`},,{`) or left before the end (`},]`, as a list in Python or
                    # JavaScript may be written) is no record: named in a warning, not counted as an invalid one.
                    if buf[pos] == "," or buf[pos] == "]":
                        log.warning("JSON array: a comma with no record after it; passed over", file=name, line=line)
                        while buf[pos] == ",":
                            pos += 1
                            if not skip_ws():
                                yield RawRecord(name, line, error="unexpected end of file after ','")
                                return
                        if buf[pos] == "]":
                            continue
            first = False
            start_line = line
            error = None
            while True:
                try:
                    value, end = raw_decode(buf, pos)
                except json.JSONDecodeError as exc:
                    # An error with text after it is the element's own, not the chunk's end: no need to read on (every
                    # message but an unterminated string's names where decoding failed, not where a token started).
                    if (exc.pos + _SURE >= len(buf) or exc.msg.startswith("Unterminated string")) and fill():
                        continue
                    if (bad := ESCAPED.search(buf, pos, exc.pos + 1)) is None:
                        where = "line {} column {}".format(*place(exc.pos))
                        error = f"invalid JSON: {json_message(exc)} at {where}{truncation_note(exc, 'file')}"
                    else:
                        # A bad byte outside a string (where JSON allows no such character) broke the element.
                        error = f"record is {bad_byte(bad.start())}"
                    end = -1
                    break
                except JSON_ERRORS as exc:  # well-formed but undecodable here (too deep, too many digits): its error
                    error, end = json_error(exc), -1
                    break
                # A value cut at the chunk edge can decode "successfully" (`2.5e10` read as
                # `2.5`): accept it only once a delimiter or the end of the file follows.
                after = end
                while after < len(buf) and buf[after] in _WS:
                    after += 1
                if (after == len(buf) or buf[after] not in ",]") and fill():
                    continue
                if (bad := ESCAPED.search(buf, pos, end)) is not None:
                    error = f"record is {bad_byte(bad.start())}"
                break
            if error is not None:
                if end == -1:
                    # Stepped over by a scan of its strings and brackets, so the records after it are read; unless its
                    # quotes do not line up (`skip_broken_value`): where it ends cannot be told, and the read stops.
                    scan = skip_json_value if error.startswith("record is not valid UTF-8") else skip_broken_value
                    end = scan(buf, pos)
                    while end == -1 and fill():
                        end = scan(buf, pos)
                    if end == LOST_QUOTES:
                        error += "; a quote is missing in or near this record, so where it ends cannot be told" + _REST
                        end = -1
                    elif end == -1 and not error.endswith(_CUT_SHORT):
                        error += _REST
                yield RawRecord(name, start_line, error=error)
                if end == -1:
                    return
            line += buf.count("\n", pos, end)
            pos = end
            if error is None:
                yield RawRecord(name, start_line, value)
            count += 1
            if limit is not None and count >= limit:
                return
