"""The OTLP/JSON documents of one file of format `otel`, each with its line, or the reason it cannot be read.

A file is one JSON document (a collector export, an SDK dump) or JSON Lines, one export per line (the
collector's file exporter; `.jsonl`, or a `.json` file holding more than one value). Edge cases:

- A UTF-8 byte-order mark at the start of the file is dropped (a file saved by Notepad was "invalid JSON:
  Unexpected UTF-8 BOM" and its spans were lost), and at the start of a line of JSON Lines (`jsonl_lines`).
- A byte that is not UTF-8 costs what holds it: in JSON Lines its line (`loads_line` names it), in a
  one-document file the file, whose error names the byte's line, column and offset (`file_encoding_problem`),
  or the encoding of a UTF-16 or UTF-32 file.
- A document cut short says that the file ends early (`truncation_note`).
- The OpenTelemetry SDK's own span JSON (`ConsoleSpanExporter`'s pretty-printed objects, one after another,
  or `span.to_json()` per line: `{"name": …, "context": {"trace_id": "0x…", …}, "kind": …, "attributes": {…}}`)
  is not OTLP/JSON: it was one "invalid JSON" error per line (427 for a three-turn loop). It is one error for the
  file saying what it is and how to export OTLP/JSON instead (`sdk_span_json`).
- Exports written over several lines (pretty-printed: `json.dump(export, f, indent=2)`), one in a `.jsonl` file or
  several one after another in any file, were one "invalid JSON" error per line: each is read as one document, at
  the line it starts on, and one that does not read is one error naming its line and column
  (`stages.load.documents`). A `.jsonl` file of one export a line is read a line at a time as before.
- A file holding nothing but white space (a lone newline an exporter wrote before it failed, an emptied file)
  holds no document, whatever its suffix: nothing is yielded, as for an empty `.jsonl` file. A `.json` file was
  read as one JSON value and gave "invalid JSON: Expecting value at line 2 column 1", where a `.jsonl` file gave
  nothing: the dataset's empty-file error (`first_records.no_records`) is then the same for both, and a folder's
  reader warns about such a file (`otel.read`).
"""

from __future__ import annotations

import errno
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracejudge.stages.load import JSON_ERRORS, json_error, jsonl_lines, loads_line
from tracejudge.stages.load.documents import multiline_start, read_document
from tracejudge.stages.load.encoding import ESCAPED, file_encoding_problem, strip_bom

__all__ = ["SDK_SPAN_JSON", "iter_exports", "sdk_span_json"]


def iter_exports(path: Path) -> Iterator[tuple[int, Any, str | None]]:
    """Yield `(line, document, error)` for each OTLP/JSON document in a file (module docstring).

    `error` is set instead of `document` for text that is not JSON or not UTF-8, and for a file that
    cannot be opened (one error, line 1).
    """
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD)
    except OSError as exc:
        yield 1, None, _unreadable(path, exc)
        return
    if sdk_span_json(head):
        yield 1, None, SDK_SPAN_JSON
        return
    if path.suffix != ".jsonl":
        try:
            data = strip_bom(path.read_bytes())
        except OSError as exc:
            yield 1, None, _unreadable(path, exc)
            return
        yield from _document(path, data)
        return
    try:
        fh = path.open("rb")
    except OSError as exc:
        yield 1, None, _unreadable(path, exc)
        return
    with fh:  # JSON Lines: one export at a time, never the whole file in memory
        if multiline_start(fh) is not None:  # (unless written over several lines: `_values`)
            yield from _values(path)
        else:
            yield from _lines(line for _, line in jsonl_lines(fh))


_HEAD = 4096
# `ReadableSpan.to_json()`: the span's name, then its `context` with a `trace_id`, whatever the indentation.
_SDK_SPAN = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"name":\s*"(?:[^"\\]|\\.)*",\s*"context":\s*\{\s*"trace_id":\s*"')
SDK_SPAN_JSON = ("not an OTLP/JSON export: this file holds the OpenTelemetry SDK's own span JSON (`ConsoleSpanExporter` output or "
                 "`span.to_json()`: objects with `name`, `context`, `kind`, `attributes`), which keeps no resource or instrumentation "
                 "scope and is not read; export OTLP/JSON instead: the SDK's OTLP exporter (`opentelemetry-exporter-otlp-proto-http`) "
                 "sending to an OpenTelemetry Collector whose `file` exporter writes the spans as OTLP/JSON lines, then read that file "
                 "with `format: otel` (README: \"Where your traces come from\")")


def sdk_span_json(head: bytes) -> bool:
    """Whether a file starting with `head` (its first bytes) holds the SDK's span JSON rather than OTLP/JSON (module docstring).

    Only the start is looked at: the first object's `name` and `context.trace_id`, in that order, as `to_json` writes
    them. An OTLP export starts with `resourceSpans` (or Tempo's / Jaeger's keys), never with a span's `name`.
    """
    return _SDK_SPAN.match(head) is not None


def _document(path: Path, data: bytes) -> Iterator[tuple[int, Any, str | None]]:
    """The document(s) of a file read whole: one JSON value, else (more than one) its lines."""
    # Bytes that are not UTF-8 are decoded to `ESCAPED` code points, not refused: the file may be JSON Lines,
    # whose other lines still read.
    if not data.strip():  # no document, not a broken one (module docstring)
        return
    text = data.decode("utf-8", "surrogateescape")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # more than one value: JSON Lines in a `.json` file, or exports written over several lines
            yield from _values(path) if multiline_start(io.BytesIO(data)) is not None else _lines(line for _, line in jsonl_lines(io.BytesIO(data)))
            return
        if ESCAPED.search(text) is None:
            yield exc.lineno, None, json_error(exc, "file")
            return
        doc = None
    except JSON_ERRORS as exc:  # too deep, huge numbers: the one document is the bad record
        yield 1, None, json_error(exc)
        return
    if doc is None or ESCAPED.search(text) is not None:  # (a document that reads holds the byte in a string)
        yield 1, None, f"file is not valid UTF-8: {file_encoding_problem(path)}"
        return
    yield 1, doc, None


def _unreadable(path: Path, exc: OSError) -> str:
    """The error of a file that cannot be opened (a link to a missing file, no permission): one record, not a stop."""
    why = exc.strerror or type(exc).__name__
    if exc.errno == errno.ELOOP:  # (its target is not missing: the links lead back to themselves)
        return f"cannot read the file: {why} (a symbolic link loop)"
    return f"cannot read the file: {why}" + (" (a symbolic link whose target is missing)" if path.is_symlink() and not path.exists() else "")


def _values(path: Path) -> Iterator[tuple[int, Any, str | None]]:
    """The exports of a file of JSON written over several lines, one after another (`read_document`): each value one
    document at the line it starts on (an array too: an export is an object, and the array's error says so)."""
    for record in read_document(path, arrays=False):
        yield record.line, record.payload, record.error


def _lines(lines: Iterator[bytes]) -> Iterator[tuple[int, Any, str | None]]:
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            yield lineno, loads_line(raw), None
        except ValueError as exc:
            yield lineno, None, str(exc)
