"""What the message-list adapters share: JSONL framing, case fields, text and JSON helpers.

Framing of the JSONL formats (`openai-messages`, `anthropic-messages`,
`multivon`, `json-path`, user adapters): one JSON object per line. The
reader yields the line's bytes together with a default case id,
`"<file name>:<line>"`, used when the record carries no `id` of its own, so
ids stay stable across runs of the same file.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError
from tracejudge.core import suggest
from tracejudge.core.records import Case
from tracejudge.stages.load import JSON_ERRORS, RawRecord, loads_line, read_jsonl

__all__ = [
    "CASE_FIELDS",
    "PASSAGE_SHAPE",
    "build_case",
    "mcp_error",
    "JsonLine",
    "case_fields",
    "decode_line",
    "fail",
    "field_path",
    "maybe_json",
    "python_literal",
    "read_lines",
    "text_of",
]

# Native case keys a message-list record may carry next to its messages; they pass through unchanged.
CASE_FIELDS = (
    "id",
    "input",
    "expected_output",
    "expected_tool_calls",
    "expected_passages",
    "context",
    "turns",
    "tags",
    "metadata",
    "metrics",
)


@dataclass(slots=True, frozen=True)
class JsonLine:
    """One JSONL line (raw bytes) and the id its case gets when the record has none."""

    data: bytes
    default_id: str


def read_lines(dataset: Any, arrays: bool = True) -> Iterator[RawRecord]:
    """Yield each non-blank line of `dataset.path` as a `RawRecord` holding a `JsonLine`.

    A file holding one pretty-printed JSON document is read as that document (`read_jsonl`): an array's elements are
    its records when `arrays`, else the array is one record (a format whose record is itself a list).
    """
    stem = Path(dataset.path).name
    for raw in read_jsonl(dataset.path, dataset.limit, arrays=arrays):
        raw.payload = JsonLine(raw.payload, f"{stem}:{raw.line}")
        yield raw


def fail(message: str, field: str | None = None, case_id: str | None = None) -> NoReturn:
    """Raise the `AdapterError` that `extract_record` turns into an `invalid_input` result."""
    from tracejudge.stages.extract.errors import AdapterError

    raise AdapterError(message, field=field, case_id=case_id)


def messages_of(record: dict[str, Any], field: str, case_id: str) -> list[Any]:
    """The list of messages at `record[field]`; raises `AdapterError` saying what is there instead.

    A value that is not a list is named with its JSON type (`messages: expected a list of messages, got a
    string`), and a null one as null (`messages: null where a list of messages is expected`), not called missing;
    a missing field names the record's nearest key (`did you mean mesages?`).
    """
    messages = record.get(field)
    if isinstance(messages, list):
        return messages
    if field in record:  # present but null is no typo: a "did you mean" would name the very key the record has
        fail(not_a_list(messages, field, "messages"), field=field, case_id=case_id)
    hint = suggest.did_you_mean(field, [k for k in record if isinstance(k, str)], n=1, typo=True)
    fail(f"{field}: required list of messages is missing" + (f"; {hint} (or set dataset.options.messages_field)" if hint else ""),
         field=field, case_id=case_id)


def not_a_list(value: Any, field: str, what: str) -> str:
    """The reason for `value`, present at `field` where a list of `what` is expected, but null or of another JSON type:
    `traj: null where a list of messages is expected`, `messages: expected a list of messages, got a string`."""
    if value is None:
        return f"{field}: null where a list of {what} is expected"
    return f"{field}: expected a list of {what}, got {json_type(value)}"


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
               type(None): "null"}


def json_type(value: Any) -> str:
    """What `value`, decoded from JSON, is in JSON's words (`an array`, `null`): what a user sees in the file, not Python's."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def build_case(data: dict[str, Any]) -> Case:
    """Validate the native case mapping an adapter built.

    A validation problem becomes an `AdapterError` under the record's own id,
    naming the first offending field (`trace.steps[0].tool_calls[1].name`).
    """
    try:
        return Case.model_validate(data)
    except ValidationError as exc:
        loc, message = case_problem(exc)
        cid = data.get("id")
        # An id the case refused (empty, only whitespace, holding NUL) does not name its result: the record's place does.
        usable = isinstance(cid, (str, int)) and not isinstance(cid, bool) and str(cid).strip() and "\x00" not in str(cid)
        fail(message, field=loc or None, case_id=str(cid) if usable else None)


PASSAGE_SHAPE = 'a retrieved passage is an object: {"content": "the text"}, optionally with "id", "score" and "source"'


def field_path(loc: Iterable[str | int]) -> str:
    """A record's key path as the errors name it: keys joined by dots, list indices in brackets (`trace.steps[0].output`)."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def case_problem(exc: ValidationError) -> tuple[str, str]:
    """`(field, message)` for a case that does not validate: its first problem, as `trace.steps[0].output: …`.

    An unknown key names the nearest key a case has there (`expected_tool_call`
    → `expected_tool_calls`), so a typo is found from the message alone.
    """
    errors = suggest.pair_missing(exc.errors(), Case)  # an unknown key beside a missing one: one problem, one line
    err = errors[0]
    loc = field_path(err["loc"])
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    if err["type"] == "extra_forbidden":
        more = suggest.key_hint(Case, tuple(err["loc"])) + more
    if err["type"] == "model_type" and tuple(err["loc"][:2]) == ("trace", "retrieved"):
        # `expected_passages` are plain strings, so strings here looked right: say what a passage is.
        more = f" (got {type(err.get('input')).__name__}); {PASSAGE_SHAPE}" + more
    said = suggest.message(err)
    return loc, f"{loc}: {said}{more}" if loc else f"{said}{more}"


def decode_line(payload: Any) -> tuple[dict[str, Any], str]:
    """Decode a `JsonLine` (or an already decoded mapping) into `(record, default_id)`.

    Raises `AdapterError` (under the line's default id) for bytes that are
    not UTF-8 or not JSON, or a line that is not a JSON object.
    """
    if isinstance(payload, dict):
        return payload, str(payload.get("id", "record"))
    if isinstance(payload, JsonLine):
        data, default_id = payload.data, payload.default_id
    else:
        data, default_id = payload, "record"
    cid = default_id if isinstance(payload, JsonLine) else None
    try:
        record = loads_line(data)
    except ValueError as exc:
        fail(str(exc), case_id=cid)
    if not isinstance(record, dict):
        fail(f"expected a JSON object per line, got {json_type(record)}", case_id=cid)
    return record, default_id


def case_fields(record: dict[str, Any], default_id: str) -> dict[str, Any]:
    """The native case keys present in `record`, with `id` defaulted (ints become strings)."""
    out = {k: record[k] for k in CASE_FIELDS if k in record and record[k] is not None}
    cid = out.get("id", default_id)
    out["id"] = str(cid) if isinstance(cid, (int, str)) and not isinstance(cid, bool) else cid
    return out


def text_of(content: Any) -> str | None:
    """Plain text of a message `content`: a string, or the text parts of a part list joined by newlines.

    Parts are `{"type": "text" | "input_text" | "output_text", "text": ...}`
    (OpenAI, Anthropic) or bare strings; other parts (images, tool blocks)
    are skipped. Returns `None` when there is no text.
    """
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(texts) if texts else None
    return None


def mcp_error(value: Any) -> str | None:
    """The error of a tool result that reports its own failure, else None.

    An MCP `CallToolResult` (`{"content": [{"type": "text", "text": …}], "isError": true}`, spec: Model Context
    Protocol, tools/call) says a failed call by `isError` (some clients write `is_error`), whether it arrives as an
    object or as its JSON text inside a Responses `function_call_output`, a Chat Completions `tool` message or a span's
    output. The message is its text parts joined, else its `error` or `message` field, else "error".
    """
    v = maybe_json(value)
    if not isinstance(v, dict) or not (v.get("isError") is True or v.get("is_error") is True):
        return None
    parts = v.get("content")
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)] if isinstance(parts, list) else []
    if isinstance(parts, str):
        texts = [parts]
    said = "\n".join(t for t in texts if t) or v.get("error") or v.get("message")
    return said if isinstance(said, str) and said else "error"


def maybe_json(value: Any) -> Any:
    """Decode a string holding a JSON object or array; anything else is returned unchanged."""
    if isinstance(value, str):
        head = value.lstrip()[:1]
        if head in ("{", "["):
            try:
                return json.loads(value)
            except JSON_ERRORS:
                return value
    return value


_NOT_A_LITERAL = (ValueError, SyntaxError, TypeError, MemoryError, RecursionError)


def python_literal(source: Any, default: Any = None) -> Any:
    """`source` (Python text, or an `ast` node) read as a literal — a `repr()` a framework wrote where JSON belonged —
    with `ast.literal_eval`: nothing in it is evaluated as code. `default` when it is no literal, or nests too deeply."""
    try:
        return ast.literal_eval(source)
    except _NOT_A_LITERAL:
        return default
