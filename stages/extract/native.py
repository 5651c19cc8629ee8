"""Format `native`: one `Case` per JSONL line, in the native record shape (README, "Input formats", `native`)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, NoOptions, register_format
from tracejudge.core.utf8 import encodable
from tracejudge.stages.extract.errors import AdapterError
from tracejudge.stages.extract.fast_decode import decode as fast_decode
from tracejudge.stages.extract.surrogates import lone_surrogate
from tracejudge.stages.load import JSON_ERRORS, count_jsonl, deep_message, loads_line, read_jsonl, too_deep, utf8_text

__all__ = ["adapt", "line_id", "peek_id"]


def adapt(raw: bytes | str | dict[str, Any], ctx: Any = None) -> Case:
    """Decode one JSONL line into a `Case`.

    Raises `AdapterError` for bytes that are not UTF-8 or not JSON (an escaped lone
    surrogate included: its field and column named), or a line that is not an object;
    pydantic's `ValidationError` for a record with missing or mistyped fields (the
    caller turns both into `invalid_input`).
    """
    if isinstance(raw, dict):
        return Case.model_validate(raw)
    case = fast_decode(raw)  # msgspec's typed decode; None: a line pydantic must look at (its errors name the field)
    if case is not None:
        return case
    # pydantic-core parses and validates in one pass (much faster than json.loads + validate);
    # only when that fails do we look closer, to say what exactly is wrong.
    try:
        return Case.model_validate_json(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        if error["type"] == "json_invalid" and _RECURSION in error["msg"]:
            # (Read no further: `json.loads` would recurse as deep, past the interpreter's limit on a line of 2,000 levels.)
            column = error["msg"].rpartition(" column ")[2]
            raise AdapterError(deep_message(f" at column {column}" if column.isdigit() else "", values=True), case_id=line_id(raw)) from None
        if error["type"] != "json_invalid":
            if not isinstance(_decode(raw), dict):
                from tracejudge.stages.extract.common import json_type  # (here: a run's start-up does without it)

                raise AdapterError(f"expected a JSON object per line, got {json_type(_decode(raw))}") from None
            raise
    data = _decode(raw)  # raises AdapterError naming the JSON problem
    lone = lone_surrogate(utf8_text(raw), data)  # (`json` decodes an escaped half of a UTF-16 pair; a case cannot hold it)
    if lone is not None:
        raise AdapterError(lone[1], field=lone[0], case_id=line_id(raw))
    raise AdapterError("invalid JSON", case_id=line_id(raw))  # (JSON to `json`, not to pydantic: NaN, say)


_RECURSION = "recursion limit exceeded"  # pydantic-core's message when a line nests deeper than `MAX_DEPTH`


def _decode(raw: bytes | str) -> Any:
    try:
        return loads_line(raw)
    except ValueError as exc:
        raise AdapterError(str(exc)) from None


# The id as the first key of the line, as `tracejudge extract` and most writers put it.
# (A string's body as runs of plain bytes between escapes: an alternation tried per byte cost 2.5x as much.)
_LEADING_ID = re.compile(rb'\A\s*\{\s*"id"\s*:\s*("[^"\\]*(?:\\.[^"\\]*)*"|-?\d+)\s*[,}]')


def peek_id(raw: bytes | str | dict[str, Any]) -> str | None:
    """The id `adapt` gives a line (str, or an int as text), or None if it has none.

    Used for a line that failed validation, so its result keeps the user's
    id, and by resume to skip finished lines unparsed: a leading `"id"` key
    is read without decoding the rest of the line (microseconds for a long
    trace); otherwise the whole line is decoded.
    """
    if isinstance(raw, dict):
        data: Any = raw
        value = data.get("id")
        return _usable(str(value)) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    b = raw.encode() if isinstance(raw, str) else raw
    m = _LEADING_ID.match(b)
    if m is not None:
        token = m.group(1)
        if token[:1] == b'"' and b"\\" not in token:
            try:
                cid = token[1:-1].decode("utf-8")
            except UnicodeDecodeError:
                return None
            # (`_usable` less its UTF-8 check: strict UTF-8 decoding never gives a lone surrogate.)
            return cid if cid and not cid.isspace() and "\x00" not in cid else None
        try:
            return _usable(str(json.loads(token)))
        except JSON_ERRORS:
            return None
    try:
        data = json.loads(utf8_text(raw))  # (`json.loads` of bytes would guess UTF-16 from NUL bytes: not a record `adapt` reads)
    except JSON_ERRORS:  # hostile input (too deep, huge numbers) has no id to peek
        return None
    if isinstance(data, dict) and isinstance(data.get("id"), (str, int)) and not isinstance(data.get("id"), bool):
        return _usable(str(data["id"]))
    return None


def line_id(raw: bytes | str | dict[str, Any]) -> str | None:
    """The id a line's result is filed under, whether or not `adapt` accepts the line; None: under its file and line.

    The line's id when it is a readable record: it decodes (as UTF-8) to a JSON object with a
    usable id. A line nested past `MAX_DEPTH`, refused before it is decoded, keeps the id
    `peek_id` finds. A line that is not UTF-8, not JSON or not an object has none, even when
    `peek_id` reads an id from its first bytes (`{"id": "a", "input": ` cut short). `adapt`'s
    refusals and a dead worker's results (`engine.worker_deaths`) both take the id from here, so
    the resume's result for a line replaces the one before it. Decodes the whole line: use it for
    lines that failed, not to skip finished ones.
    """
    if isinstance(raw, dict) or too_deep(raw):
        return peek_id(raw)
    try:
        data = loads_line(raw)
    except ValueError:
        return None
    return peek_id(data) if isinstance(data, dict) else None


def _usable(cid: str) -> str | None:
    # An id `Case` refuses (empty, only whitespace, or holding NUL) is none: the line's result goes under its file and line
    # instead; so is one UTF-8 cannot carry (a lone surrogate), whose result is filed there too (`core.utf8.filed_id`).
    return cid if cid and not cid.isspace() and "\x00" not in cid and encodable(cid) else None


register_format(Format("native", read=lambda ds: read_jsonl(ds.path, ds.limit), adapt=adapt, peek_id=peek_id, options=NoOptions,
                       count=lambda ds: count_jsonl(ds.path, ds.limit)))
