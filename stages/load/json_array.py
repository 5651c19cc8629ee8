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
- An element that is not JSON (a comma doubled, a key's `:` lost, a quote lost inside a record a person edited) is that
  element's error, and the same bracket scan steps over it: the records after it are read. Only an element the scan cannot
  end stops the read there, with that error: the file cut inside it, a quote lost (`LOST_QUOTES`), a bracket lost or
  added (`UNBALANCED`, or brackets that pair up but end it where no record can end): stepped on, the objects inside
  the next records read as records of their own. A record that lost its `{` starts with a key (`"task_id": 1, …`):
  its error, up to the `}` that would have closed it (read as a string and what followed, it was a made-up record).
- What is between the records makes no record: the commas (`framing.Notes`); the file ending before the `]` is an
  error saying the file ends early, wherever it ends; text after the `]` (a second array) is an error, never dropped.
  A broken record on a line where another started goes under its own id (`framing.LineStarts`).
- A file that is not an array at all and holds such bytes (UTF-16, UTF-32, Latin-1 whole) is one error naming the
  file's encoding or first bad byte (`file_encoding_problem`), as before.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tracejudge.stages.load import (JSON_ERRORS, LOST_QUOTES, UNBALANCED, RawRecord, json_error, json_message, skip_broken_value,
                                    skip_json_value, truncation_note)
from tracejudge.stages.load.encoding import BOM, ESCAPED, byte_size, escaped_byte, file_encoding_problem, wide_encoding
from tracejudge.stages.load.framing import (CUT_SHORT, REST, LineStarts, Notes, cut_between, key_for_record, lost_brackets, lost_quote,
                                            misread, missing_colon)

__all__ = ["read_json_array"]

_WS = " \t\r\n"
_SNIFF = 1 << 16
_SURE = 64  # characters after a decoding error that show it is not where a chunk ended
_NO_RECORD_AFTER = "JSON array: a comma with no record after it; passed over"


def _keyed(buf: str, pos: int) -> int:
    """`skip_broken_value` for a record that lost its `{`: it ends at the `}` that closed it."""
    return skip_broken_value(buf, pos, opened="{")


def read_json_array(path: Path, limit: int | None = None, chunk_size: int = 1 << 20,
                    unnamed: Callable[[Any], str | None] | None = None) -> Iterator[RawRecord]:
    """Stream the elements of a top-level JSON array, each with the line it starts on.

    The file is read in chunks of `chunk_size` bytes; memory holds one
    chunk plus the element being decoded. A file that is not a JSON array
    yields one record with `error` set. An element that cannot be decoded as
    JSON yields one record with `error` (its line; "the file ends early" when
    the decoder ran out of text) and is stepped over by a scan of its brackets
    and strings; where that scan cannot find its end (the file ends first, its
    quotes or brackets do not pair up) or what follows it is not `,` or `]`,
    reading stops there with that error, saying so. An element too deep or with
    too many digits, or holding a byte that is not UTF-8, is its own error and
    the read goes on (module docstring). A file changed while it was read is
    logged as `read_jsonl` says; the commas' warnings when the read ends by itself.
    `unnamed(value)`: why a record that decoded names no case of its own (its adapter's words: a τ-bench run that
    is no object or has no `task_id`), or None; such a record on a line where another started is that error, under
    its own id (`framing.LineStarts`).
    """
    from tracejudge.stages.load.watch import report_change, watch_of

    name = str(path)
    notes, starts = Notes(name), LineStarts(name)
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

        def found(at: int) -> str:
            return f"a byte that is {bad_byte(at)}" if ESCAPED.match(buf, at) else repr(buf[at])

        def ends_record(size: int) -> bool:
            """Whether what follows the `size` characters from `pos`, past white space, may follow a record: `,`, `]` or
            the file's end. (It reads on as needed, which moves `pos`.)"""
            while True:
                at = pos + size
                while at < len(buf) and buf[at] in _WS:
                    at += 1
                if at < len(buf):
                    return buf[at] in ",]"
                size = at - pos
                if not fill():
                    return True

        def broken(at: int, at_line: int, why: str) -> RawRecord:
            """The error record starting at `buf[at]`, on line `at_line`, under an id no other record of the file has."""
            return RawRecord(name, at_line, starts.place(at_line, place(at)[1]) if starts.see(at_line) else None, error=why)

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
        while True:
            # Commas before a record: one after each record but the last. One lost, one more, one before `]` or before the
            # first record: a warning, never a record (said when the read ends by itself: `Notes`).
            commas: list[int] = []  # the lines of the first, second and last comma
            while True:
                if not skip_ws():
                    notes.say()
                    if watch is not None:
                        report_change(watch, None, count, line)
                    yield broken(pos, line, cut_between("the array", "records"))
                    return
                if buf[pos] != ",":
                    break
                commas[min(len(commas), 2) :] = [line]
                pos += 1
            if buf[pos] == "]":
                if commas:
                    notes.add(_NO_RECORD_AFTER, commas[-1])
                notes.say()
                if watch is not None:
                    report_change(watch, None, count, line, whole=True)
                pos += 1
                if skip_ws():  # a second array, a record pasted after the end: never read as if the file ended here
                    yield broken(pos, line, f"the file goes on after the array's closing ']': found {found(pos)}{REST}")
                return
            if count and not commas and ESCAPED.match(buf, pos):
                # A stray byte between records (in the white space after one): its own error; the read goes on after it.
                yield broken(pos, line, f"expected ',' or ']' between records, found {found(pos)}")
                while ESCAPED.match(buf, pos):
                    pos += 1
                continue
            if not count and commas:
                notes.add("JSON array: a comma with no record before it; passed over", commas[0])
            elif count and not commas:
                if buf[pos] not in "{[":
                    notes.say()
                    yield broken(pos, line, f"expected ',' or ']' between records, found {found(pos)}{REST}")
                    return
                notes.add("JSON array: a comma is missing between two records; read as if it were there", line)
            elif len(commas) > 1:
                notes.add(_NO_RECORD_AFTER, commas[1])
            start_line = line
            error = colon = None
            scan: Callable[[str, int], int] | None = None
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
                        error, scan = f"invalid JSON: {json_message(exc)} at {where}{truncation_note(exc, 'file')}", skip_broken_value
                        colon = missing_colon(exc, where)  # (said once the scan found the record's end: `missing_colon`)
                    else:
                        # A bad byte outside a string (where JSON allows no such character) broke the element.
                        error, scan = f"record is {bad_byte(bad.start())}", skip_json_value
                    break
                except JSON_ERRORS as exc:  # well-formed but undecodable here (too deep, too many digits): its error
                    error, scan = json_error(exc), skip_broken_value
                    break
                # A value cut at the chunk edge can decode "successfully" (`2.5e10` read as `2.5`): accept it only once
                # what follows it is far enough from the chunk's end to be whole. (Not until a `,` or `]` follows: after
                # a comma lost, that read the rest of the file into memory, and decoded the record again at each chunk.)
                after = end
                while after < len(buf) and buf[after] in _WS:
                    after += 1
                if (after == len(buf) or (buf[after] not in ",]" and len(buf) - after < _SURE)) and fill():
                    continue
                if (bad := ESCAPED.search(buf, pos, end)) is not None:
                    error = f"record is {bad_byte(bad.start())}"
                elif (how := misread(value, buf[after : after + 1])) == "key":
                    # A record whose `{` was lost: its end is the `}` that would have closed it.
                    error, scan = key_for_record(value, "line {} column {}".format(*place(pos)), "record"), _keyed
                elif how == "quote":
                    where = "line {} column {}".format(*place(after))
                    error, end = f"invalid JSON: a string where a record starts, followed by {buf[after]!r} at {where}{lost_quote('record')}", -1
                break
            if error is not None:
                if scan is not None:
                    # Stepped over by a scan of its strings and brackets, so the records after it are read; unless its
                    # quotes or brackets do not pair up: where it ends cannot be told, and the read stops.
                    end = scan(buf, pos)
                    while end == -1 and fill():
                        end = scan(buf, pos)
                    if end == LOST_QUOTES:
                        error, end = error + lost_quote("record"), -1
                    elif end == UNBALANCED:
                        error, end = error + lost_brackets("record"), -1
                    elif end == pos or (end == -1 and not error.endswith(CUT_SHORT)):  # (`pos`: a stray `]` or `}`)
                        error, end = error + REST, -1
                    elif end != -1:
                        size = end - pos
                        # Its brackets paired up, but not where a record ends (`],} "s": …`, `"traj":} [{…}]`): one
                        # was added or lost, and the scan ended inside it; stepped on, the rest of it was records.
                        error, end = (colon or error, pos + size) if ends_record(size) else (error + lost_brackets("record"), -1)
                if end == -1:
                    notes.say()
                yield broken(pos, start_line, error)
                if end == -1:
                    return
            elif starts.see(start_line) and unnamed is not None and (why := unnamed(value)) is not None:
                # Its adapter would file it under `file:line`, where the record before it is.
                yield RawRecord(name, start_line, starts.place(start_line, place(pos)[1]), error=why)
            else:
                yield RawRecord(name, start_line, value)
            line += buf.count("\n", pos, end)
            pos = end
            count += 1
            if limit is not None and count >= limit:
                notes.say()
                return
