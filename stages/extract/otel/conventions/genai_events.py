"""A model request's messages written as GenAI events: the details event, and the one-event-per-message events of
semantic conventions 1.27 to 1.36.

The conventions now keep a request's messages in `gen_ai.input.messages` / `gen_ai.output.messages`, on the span or in
its `gen_ai.client.inference.operation.details` event. Before, each message was an event of its own, in input order:
`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message`, then one
`gen_ai.choice` per choice of the reply. The event's body holds the message's fields: `content`, `role` (when it is not
the one the name says), an assistant message's `tool_calls` (`[{"id", "type", "function": {"name", "arguments"}}]`), a
tool message's `id` (the call it answers), and a choice's `index`, `finish_reason` and `message` (its `content`, `role`,
`tool_calls`). Producers write them

- as OTLP log records, named by `eventName` (or the `event.name` attribute), the body in the record's `body`:
  opentelemetry-instrumentation-openai and -anthropic (OpenLLMetry) with `use_attributes=False`, OTel's openai-v2,
  vertexai and google-genai instrumentations, Google's ADK for Go;
- as span events, the body in the event's attributes: its fields each an attribute (JetBrains' Koog, an attribute of
  an object or a list holding its JSON text where the SDK holds no such value), the whole body as JSON text in
  `gen_ai.event.content` (Azure AI Inference SDK, Semantic Kernel), or under `event.body` / `body` (an object, or its
  JSON text).

Both are read into the messages `gen_ai.input.messages` / `gen_ai.output.messages` would hold. A choice's tool calls
are under its `message` (the conventions) or beside it (OpenLLMetry 0.62); content is text, a list of content parts
(OpenAI's `{"type": "text", "text"}`, Gemini's `{"text"}`, or a whole Gemini `Content`, `{"parts", "role"}`, as
Google ADK 2 writes it) or, in a tool message, any value (the call's result); a
placeholder (`<elided>`: content capture off) is no content. The name of a system, assistant or tool message says its
role, whatever its body's `role` says (OTel's vertexai instrumentation writes the Gemini content's, `user`, for a
function's response); a user message's body may name another (OpenLLMetry's `developer`). Each `gen_ai.choice` is an
output message: several are alternatives of a request for `n` > 1 only where the span says so (`openai_choices`: as
many finish reasons as choices), as OpenLLMetry's Anthropic instrumentation writes each block of one reply as a
choice of its own, indexed by the block. A body that is not of this shape raises `AdapterError`
naming the file and line of the span or log record, the event and the field: its conversation is an `invalid_input`,
the others read on.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from tracejudge.stages.extract.common import fail, maybe_json
from tracejudge.stages.extract.otel.conventions.adk import gemini_part
from tracejudge.stages.extract.otel.messages import normalise_one
from tracejudge.stages.extract.otel.spans import LogEvent, Span
from tracejudge.stages.extract.otel.view import MISSING, present, tool_response_part
from tracejudge.stages.load import JSON_ERRORS

__all__ = ["DETAILS", "INPUT_EVENTS", "MESSAGE_EVENTS", "MESSAGE_KEYS", "event_messages", "holds_messages"]

DETAILS = "gen_ai.client.inference.operation.details"  # the event holding a request's input and output messages
MESSAGE_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages")
_ROLES = {"gen_ai.system.message": "system", "gen_ai.user.message": "user", "gen_ai.assistant.message": "assistant",
          "gen_ai.tool.message": "tool"}
INPUT_EVENTS = frozenset(_ROLES)
# Events whose body `role` is not read: only a user message's says more than its name (OpenLLMetry names a message of a
# role the conventions have no event for, `developer`, `gen_ai.user.message` and keeps its role in the body)
_NAMED_ROLES = frozenset({"gen_ai.system.message", "gen_ai.tool.message", "gen_ai.assistant.message"})
CHOICE = "gen_ai.choice"
MESSAGE_EVENTS = INPUT_EVENTS | {CHOICE}
_FIELDS = ("content", "role", "tool_calls", "id", "index", "finish_reason", "message")
_BODY_KEYS = ("event.body", "body")
_JSON_BODY = "gen_ai.event.content"


def holds_messages(span: Span, keys: tuple[str, ...] = MESSAGE_KEYS, names: frozenset[str] = MESSAGE_EVENTS) -> bool:
    """Whether some span event of `span` holds GenAI messages: the details event, one of the message events `names`,
    or another event carrying one of `keys`."""
    return any(name == DETAILS or name in names or any(k in attrs for k in keys) for name, attrs in span.events)


def _named_otherwise(span: Span) -> list[LogEvent]:
    """The GenAI message keys a span without a details event holds in span events of another name, as one details event.

    An SDK may name its event its own way (Strands before the details event, a hand-made `span.add_event("messages",
    …)`); the keys still mean what the conventions say. Each key is taken from the first event holding it, as agentevals
    promotes them, so two events repeating one history do not read it twice.
    """
    found: dict[str, Any] = {}
    for _, attrs in span.events:
        for key in MESSAGE_KEYS:
            if key not in found and attrs.get(key) is not None:
                found[key] = attrs[key]
    return [LogEvent(DETAILS, None, found, 0)] if found else []


def event_messages(span: Span) -> tuple[list[Any] | None, list[Any] | None]:
    """A span's input and output messages rebuilt from its GenAI events (`None` for a side none of them holds): its
    details event (a span event, as Strands writes it, or a log record), else message keys in a span event of another
    name, then its message events written as span events, in their order, then those written as log records, in order of
    time. Raises `AdapterError` for a message event whose body is not of the conventions' shape (module docstring)."""
    inputs: list[Any] = []
    outputs: list[Any] = []
    details = [LogEvent(name, None, attrs, 0) for name, attrs in span.events if name == DETAILS] or _named_otherwise(span)
    on_span = []
    for name, attrs in span.events:
        if name in MESSAGE_EVENTS:
            where = f"{span.file}:{span.line}: span {span.span_id}: span event {name!r}"
            on_span.append((name, _span_event_body(attrs, where), where))
    for ev in details + [ev for ev in sorted(span.logs, key=lambda e: e.time) if ev.name == DETAILS]:
        for key, into in (("gen_ai.input.messages", inputs), ("gen_ai.output.messages", outputs)):
            got = ev.attrs.get(key)
            got = maybe_json(got) if isinstance(got, str) else got
            if isinstance(got, list):
                into.extend(got)
    logged = [(ev.name, _record_body(ev, _where(ev, span)), _where(ev, span))
              for ev in sorted(span.logs, key=lambda e: e.time) if ev.name in MESSAGE_EVENTS]
    for name, body, where in on_span + logged:
        (outputs if name == CHOICE else inputs).append(_message(name, body, where))
    return inputs or None, outputs or None


def _where(ev: LogEvent, span: Span) -> str:
    return f"{ev.file or span.file}:{ev.line or span.line}: log record {ev.name!r} of span {span.span_id}"


def _record_body(ev: LogEvent, where: str) -> dict[str, Any]:
    """The body of a message event written as a log record: the record's body (an object, or its JSON text), else the
    fields among its attributes, as a span event holds them."""
    if ev.problem is not None:
        _bad(where, ev.problem.split(" ", 1)[0], ev.problem.split(" ", 1)[1])
    if ev.body is None:
        return _span_event_body(ev.attrs, where)
    return _object(ev.body, "body", where)


def _nested(attrs: dict[str, Any], key: str) -> Any:
    """`attrs[key]`, or the object its dotted sub-keys make (an object attribute is read as key levels: `values`)."""
    if key in attrs:
        return attrs[key]
    out: dict[str, Any] = {}
    for k, v in attrs.items():
        if k.startswith(key + "."):
            node = out
            *path, leaf = k[len(key) + 1:].split(".")
            for part in path:
                if not isinstance(node.get(part), dict):
                    node[part] = {}
                node = node[part]
            node[leaf] = v
    return out or MISSING


def _span_event_body(attrs: dict[str, Any], where: str) -> dict[str, Any]:
    """The body of a message event written as a span event (module docstring): under `event.body` / `body`, else the JSON
    text of `gen_ai.event.content`, else its fields among the attributes."""
    for key in _BODY_KEYS:
        got = _nested(attrs, key)
        if got is not MISSING:
            return _object(got, key, where)
    if _JSON_BODY in attrs:
        return _object(attrs[_JSON_BODY], _JSON_BODY, where)
    body = {f: v for f in _FIELDS if (v := _nested(attrs, f)) is not MISSING}
    if isinstance(body.get("content"), str) and (parts := _parts_text(body["content"])) is not None:
        body["content"] = parts
    return body


def _parts_text(text: str) -> list[Any] | None:
    """The content parts a flat `content` attribute holds as JSON text (an SDK whose span events hold no list writes
    them so: a list of objects each with a `type` or a `text`), or `None` for any other text, which is the message's."""
    if not text.startswith("[{"):
        return None
    try:
        parts = json.loads(text)
    except JSON_ERRORS:
        return None
    ok = isinstance(parts, list) and parts and all(isinstance(p, dict) and ("type" in p or "text" in p) for p in parts)
    return parts if ok else None


def _bad(where: str, field: str, why: str) -> NoReturn:
    """Raise the `AdapterError` of a message event that does not read: `where` is `<file>:<line>: <the event>`."""
    fail(f"{where}: {field} {why}", field=f"{where.split(': ', 1)[-1]}: {field}")


def _kind(value: Any) -> str:
    return {str: "text", bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _decoded(value: Any, field: str, where: str) -> Any:
    """`value`, or the JSON its text holds when it is text starting as an object or a list does (a Java SDK's span event
    holds no object: Koog writes one as its JSON text); raises `AdapterError` when that text is not JSON."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except JSON_ERRORS as exc:
            _bad(where, field, f"is not valid JSON ({exc})")
    return value


def _object(value: Any, field: str, where: str) -> dict[str, Any]:
    got = _decoded(value, field, where)
    if not isinstance(got, dict):
        _bad(where, field, f"must be an object (or its JSON text), got {_kind(got)}")
    return got


_GEMINI_PARTS = ("text", "function_call", "function_response")


def _content(value: Any, role: str, field: str, where: str) -> Any:
    """A message's content as `normalise_one` reads it: text, content parts, or for a tool message any value; `None` when
    nothing was recorded. A Gemini part (`{"text"}`, `{"function_call"}`, `{"function_response"}`: OTel's vertexai
    instrumentation writes a content's parts as they are) is read as ADK's content is (`adk`), and so are the parts of
    a whole Gemini `Content` (`{"parts": [...], "role"}`: Google ADK 2's events of conventions 1.x write that)."""
    if not present(value):
        return None
    if role == "tool" or isinstance(value, str):
        return value
    if _gemini_content(value):
        # ADK 2's 1.x events write a message's whole `Content`, each part with every field of the model, most empty
        value = value["parts"]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        _bad(where, field, f"must be text or a list of content parts, got {_kind(value)}")
    return [gemini_part(p) if isinstance(p, dict) and "type" not in p and any(k in p for k in _GEMINI_PARTS) else p for p in value]


def _gemini_content(value: Any) -> bool:
    """Whether `value` is a Gemini `Content`, `{"parts": [...], "role"}`, rather than one content part."""
    return isinstance(value, dict) and isinstance(value.get("parts"), list) and "type" not in value and not any(k in value for k in _GEMINI_PARTS)


def _tool_calls(value: Any, field: str, where: str) -> list[dict[str, Any]]:
    value = _decoded(value, field, where)
    if value is None:
        return []
    if not isinstance(value, list):
        _bad(where, field, f"must be a list of tool calls, got {_kind(value)}")
    for i, call in enumerate(value):
        if not isinstance(call, dict):
            _bad(where, f"{field}[{i}]", f"must be an object ({{id, type, function: {{name, arguments}}}}), got {_kind(call)}")
        if not isinstance(call.get("function"), (dict, type(None))):
            _bad(where, f"{field}[{i}].function", f"must be an object ({{name, arguments}}), got {_kind(call['function'])}")
    return value


def _message(name: str, body: dict[str, Any], where: str) -> dict[str, Any]:
    """One message event's body as a normalised message (`view`)."""
    prefix, msg = "", body
    if name == CHOICE:
        raw = body.get("message")
        msg = {} if raw is None else _object(raw, "message", where)
        prefix = "message."
    role = msg.get("role") or _ROLES.get(name, "assistant")
    if not isinstance(role, str):
        _bad(where, f"{prefix}role", f"must be text, got {_kind(role)}")
    if name in _NAMED_ROLES:
        # the name says the role: OTel's vertexai instrumentation writes the Gemini content's own there, `user` for a
        # function's response and for the system instruction
        role = _ROLES[name]
    # a choice's content and calls are its message's; OpenLLMetry writes the calls beside the message, ADK Go the content
    content_field = f"{prefix}content" if "content" in msg else "content"
    calls_field = f"{prefix}tool_calls" if "tool_calls" in msg else "tool_calls"
    given = msg["content"] if "content" in msg else body.get("content")
    if name == "gen_ai.user.message" and not msg.get("role") and _gemini_content(given) and given.get("role") == "model":
        role = "assistant"  # ADK 2 writes each content of the history as a user message: the model's earlier replies too
    content = _content(given, role, content_field, where)
    calls = _tool_calls(msg["tool_calls"] if "tool_calls" in msg else body.get("tool_calls"), calls_field, where)
    if role == "tool":
        cid = body.get("id")
        if isinstance(cid, (dict, list)):
            _bad(where, "id", f"must be the id of the tool call answered, got {_kind(cid)}")
        return {"role": "tool", "parts": [tool_response_part(cid, content)] if content is not None else []}
    if calls and isinstance(content, list):  # (vertexai writes a choice's calls twice: as parts, and beside, with ids)
        content = [p for p in content if not (isinstance(p, dict) and p.get("type") == "tool_call")]
    normalised = normalise_one({"role": role, "content": content, "tool_calls": calls})
    return normalised if normalised is not None else {"role": role, "parts": []}
