"""A model request's system instructions under GenAI semantic conventions 1.37+: `gen_ai.system_instructions`.

The conventions keep what a provider takes apart from the chat history (Anthropic's `system`, Gemini's
`system_instruction`, pydantic-ai's `instructions`) out of `gen_ai.input.messages`, in `gen_ai.system_instructions`: a
JSON array of parts (`[{"type": "text", "content": "You are …"}]`, or `blob` / `uri` / `file` parts), on the inference
span (JSON text, or the array itself) or on its `gen_ai.client.inference.operation.details` event (a span event, or a
log record: among its attributes, else in its body). Writers seen: opentelemetry-util-genai (OTel's google-genai
instrumentation), OpenLLMetry's Anthropic and LangChain instrumentations (the latter moves every `SystemMessage` there),
pydantic-ai (its `instructions`), the Anthropic SDK's own tracing, Google ADK 2.

`with_instructions` makes them the request's leading `system` message, where a `system` message recorded among the
input messages stands, its parts read as an input message's are (`normalise_one`). Instructions the input messages
already hold as a system message are not added again. A value that is not JSON, not an array, or holds a part that is
not an object with a `type` raises `AdapterError` naming the span (or event) and the field, as a malformed message
attribute or event does: its conversation is an `invalid_input`, the others read on.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from tracejudge.core.json_kind import json_kind
from tracejudge.stages.extract.common import fail
from tracejudge.stages.extract.otel.conventions.genai_events import DETAILS
from tracejudge.stages.extract.otel.messages import normalise_one
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.value_limit import LIMIT_SETTING, cut_at
from tracejudge.stages.extract.otel.view import ESCAPED_SURROGATE, mend_surrogates
from tracejudge.stages.load import JSON_ERRORS

__all__ = ["KEY", "holds_instructions", "instructions", "only_instructions", "with_instructions"]

KEY = "gen_ai.system_instructions"


def _found(span: Span) -> tuple[Any, str, str] | None:
    """The first recorded value of the instructions, where it was and the field an error names: the span's attribute,
    else a span event holding the key (the details event first), else a details log record's attribute or body key.
    (A span's file and line are added to its error by `read_span`; a log record's own are in its `where`.)"""
    if span.attrs.get(KEY) is not None:
        return span.attrs[KEY], f"span {span.span_id}", f"span {span.span_id}"
    events = sorted(span.events, key=lambda e: e[0] != DETAILS)  # (stable: among the others, their order)
    for name, attrs in events:
        if attrs.get(KEY) is not None:
            where = f"span {span.span_id}: span event {name!r}"
            return attrs[KEY], where, where
    for ev in sorted(span.logs, key=lambda e: e.time):
        if ev.name != DETAILS:
            continue
        got = ev.attrs.get(KEY)
        if got is None and isinstance(ev.body, dict):
            got = ev.body.get(KEY)
        if got is not None:
            field = f"log record {ev.name!r} of span {span.span_id}"
            return got, f"{ev.file or span.file}:{ev.line or span.line}: {field}", field
    return None


def holds_instructions(span: Span) -> bool:
    """Whether `span` (or one of its events) records system instructions at all, well formed or not."""
    return _found(span) is not None


def _bad(where: tuple[str, str], field: str, why: str) -> NoReturn:
    fail(f"{where[0]}: {field} {why}", field=f"{where[1]}: {field}")


def instructions(span: Span) -> dict[str, Any] | None:
    """The system message the span's `gen_ai.system_instructions` make (`{"role": "system", "parts": [...]}`, parts in
    the normalised form of `view`), or `None` when it records none or an empty array.

    Raises `AdapterError` when the value is not JSON, not an array, or holds a part that is not an object with a text
    `type` (module docstring)."""
    found = _found(span)
    if found is None:
        return None
    value, said_where, field = found
    where = (said_where, field)
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except JSON_ERRORS:
            if (limit := cut_at(value)) is not None:  # (the messages beside it may be whole: say why, not "not JSON")
                _bad(where, KEY, f"was cut at {limit} characters by the attribute length limit ({LIMIT_SETTING}) the "
                                 "recording ran under: the system prompt cannot be read whole; record with a higher limit")
            _bad(where, KEY, "is not valid JSON")
        # (an escaped lone surrogate, an exporter cutting mid-emoji, reads as U+FFFD, as the message attributes do)
        value = mend_surrogates(decoded) if ESCAPED_SURROGATE.search(value) else decoded
    if not isinstance(value, list):
        _bad(where, KEY, f"must be a JSON array of parts, got {json_kind(value)}")
    for i, part in enumerate(value):
        if not isinstance(part, dict):
            _bad(where, f"{KEY}[{i}]", f"must be a part object ({{type, …}}), got {json_kind(part)}")
        if not isinstance(part.get("type"), str) or not part["type"]:
            _bad(where, f"{KEY}[{i}].type", "is missing: every part names its type (text, blob, uri, file, …)")
        if part["type"] == "text" and not isinstance(part.get("content"), str):
            # (dropped, the prompt was lost without a word: a judge shown the instructions saw none)
            _bad(where, f"{KEY}[{i}].content", f"must be the instructions' text, got {json_kind(part.get('content'))}")
    if not value:
        return None
    return normalise_one({"role": "system", "parts": value})


def with_instructions(span: Span, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`inputs` (normalised) opening with the system message of the span's instructions (`instructions`), unless every
    part of it is already a part of a system message among them (an instrumentation writing the prompt in both places).

    Raises `AdapterError` as `instructions` does."""
    told = instructions(span)
    if told is None:
        return inputs
    said = [p for m in inputs if m.get("role") == "system" for p in m.get("parts") or []]
    if all(p in said for p in told["parts"]):
        return inputs
    return [told, *inputs]


def only_instructions(span: Span, inputs: list[dict[str, Any]] | None) -> bool:
    """Whether `inputs` are nothing but the system message `with_instructions` added: the request's own input messages
    were not recorded (`missing_inputs` still counts it). Never raises: a malformed value was said when it was read."""
    if not inputs or len(inputs) != 1 or inputs[0].get("role") != "system" or not holds_instructions(span):
        return False
    from tracejudge.stages.extract.errors import AdapterError

    try:
        return instructions(span) == inputs[0]
    except AdapterError:
        return False
