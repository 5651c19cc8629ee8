"""What a span is, once a convention has read it: the `View` every convention reader fills.

A span export mixes conventions (OTel GenAI, OpenInference, OpenLLMetry,
Vercel AI SDK, Langfuse, MLflow, pydantic-ai's own keys); each reader in
`conventions/` looks at one span and says what it recognises. The assembler
sees only `View`s, so it never knows which convention a fact came from.

Messages are normalised to the OTel GenAI parts form, whatever the source:
`{"role": "user" | "assistant" | "system" | "tool", "parts": [...]}` with parts
`{"type": "text", "content": str}`, `{"type": "tool_call", "id", "name",
"arguments"}` and `{"type": "tool_call_response", "id", "response"}`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from tracejudge.stages.load import JSON_ERRORS

__all__ = ["ESCAPED_SURROGATE", "MISSING", "View", "as_int", "mend_surrogates", "merge", "nested", "present", "text_message", "tool_call_part",
           "tool_response_part", "unjson", "whole_text"]

# ADK's placeholders and OpenInference's redaction marker mean "not recorded".
PLACEHOLDERS = frozenset({"<not specified>", "N/A", "<elided>", "__REDACTED__"})


class _Missing:
    """Marks a field no convention recorded (distinct from a recorded `null`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "MISSING"  # unpickles as the module's one instance: views travel with their group to worker processes


MISSING: Any = _Missing()


@dataclass(slots=True)
class View:
    """What one span is and carries.

    `role`: `model` (one model request), `tool` (one tool execution),
    `agent` (an agent run: a turn anchor), `chain` (a workflow or graph node:
    an anchor only at the root), `retrieval`, or `None` (noise).
    `args` / `result` are `MISSING` when the span recorded none; `args_wrapped`
    says they were unwrapped from a framework payload (the model's own
    tool-call part is preferred when both exist). `inputs` / `outputs` are
    normalised messages of a model request. `request` / `answer` are an agent
    or root span's user input and final output text. `answer_tool` marks a
    framework-internal tool whose call is the answer (smolagents'
    `final_answer`, pydantic-ai's output functions), not a tool call.
    `span_order`: the span records the model's call id as the OTel GenAI
    convention does (`gen_ai.tool.call.id`), so its start time orders the
    call among parallel ones, as pydantic-evals reads them.
    `output_tools` names the tools a model request could give its answer
    through (pydantic-ai's structured output: not tool calls);
    `answer_texts` holds, by call id, the answer each such call of this
    request's output gave, as text (a value that is not text as compact
    JSON), and `refused_answers`, by call id, what the framework sent back for
    such a call shown in this request's input when it did not take the answer
    (`"output rejected: …"`: pydantic-ai's validation errors, an output
    validator's `ModelRetry`); a call the framework took is in neither.
    `interrupts` holds the `(id, value)` of each LangGraph `interrupt` the span paused at, `resume` the value a
    `Command(resume=…)` input gave it (`MISSING`: none; `conventions.langgraph`).
    `response_id` / `previous_response_id`: a Responses API request's own response id and the one it
    continued from (`previous_response_id`: the server prepended that response's input and output; `stitch`).
    `query`: what a retrieval span was asked (its question text), to find the request it retrieved for.
    `input_start`: the position of `inputs[0]` in the request's messages when the span lost its first ones to the
    attribute limit (`None`: they start at 0); `partial_inputs`: what the messages just before it still show, each cut
    at its start (no role), never read as whole messages (`dropped`).
    `inputs_cut`: the length a request's input messages attribute was cut at by the attribute length limit, `inputs`
    then holding the messages decoded whole before the cut until `value_tails` gives it the rest (`value_limit`);
    `inputs_whole`: how many of `inputs` are that attribute's own (the system instructions lead them from another).
    `resumed`: an agent run that sent no user message of its own but went on with the run before it (pydantic-ai
    resumed with `deferred_tool_results`): the same turn (`conventions.pydantic_ai_deferred`).
    `agent_name`: the agent an agent span ran (a tool span's: the agent that ran inside the call; a chain span's: the
    named LangGraph graph or LangChain runnable whose run it is, `conventions.graph_names`).
    `conventions` names the readers that recognised the span.
    `unreadable`: the `AdapterError` a reader raised on the span (a usage count that is no number), which `adapt`
    raises for the span's conversation (`conventions.read_span`).
    """

    role: str | None = None
    conventions: list[str] = field(default_factory=list)
    tool_name: str | None = None
    call_id: str | None = None
    span_order: bool = False
    args: Any = MISSING
    args_wrapped: bool = False
    result: Any = MISSING
    error: str | None = None
    inputs: list[dict[str, Any]] | None = None
    outputs: list[dict[str, Any]] | None = None
    request: Any = None
    answer: str | None = None
    usage_in: int | None = None
    usage_out: int | None = None
    agent_name: str | None = None
    documents: list[dict[str, Any]] | None = None
    answer_tool: bool = False
    deferral: str | None = None
    deferral_metadata: Any = MISSING  # (what the tool raised its deferral with: pydantic-ai's `ApprovalRequired(metadata=…)`)
    output_tools: set[str] = field(default_factory=set)
    deferred_tools: dict[str, str] = field(default_factory=dict)
    answer_texts: dict[str, str] = field(default_factory=dict)
    refused_answers: dict[str, str] = field(default_factory=dict)
    interrupts: list[tuple[str | None, Any]] = field(default_factory=list)
    resume: Any = MISSING
    response_id: str | None = None
    previous_response_id: str | None = None
    query: str | None = None
    input_start: int | None = None
    partial_inputs: list[dict[str, Any]] | None = None
    inputs_cut: int | None = None
    inputs_whole: int | None = None
    resumed: bool = False
    unreadable: Exception | None = None


_MAPS = ("deferred_tools", "answer_texts", "refused_answers")  # merged key by key: the first reader to say a key wins
_FIELDS = [f for f in View.__slots__ if f not in ("role", "conventions", "output_tools", "answer_tool", "args_wrapped", "span_order", "interrupts", "resume", "resumed",
                                                  *_MAPS)]  # type: ignore[attr-defined]


def merge(base: View, other: View, name: str) -> None:
    """Fill what `base` lacks from `other` (readers run in priority order: the first to say a thing wins)."""
    base.conventions.append(name)
    if base.role is None:
        base.role = other.role
    for f in _FIELDS:
        if getattr(base, f) in (None, MISSING) and getattr(other, f) not in (None, MISSING):
            setattr(base, f, getattr(other, f))
            if f == "args":
                base.args_wrapped = other.args_wrapped
    base.answer_tool = base.answer_tool or other.answer_tool
    base.span_order = base.span_order or other.span_order
    base.output_tools |= other.output_tools
    for f in _MAPS:
        mine, theirs = getattr(base, f), getattr(other, f)
        mine.update({k: v for k, v in theirs.items() if k not in mine})


def present(value: Any) -> bool:
    """A value that was really recorded: not `None`, `MISSING` or a placeholder text."""
    return value is not None and value is not MISSING and not (isinstance(value, str) and value.strip() in PLACEHOLDERS)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # (in a str, a pair is one code point: any surrogate left is alone)


def whole_text(text: Any) -> Any:
    """`text` with each lone UTF-16 surrogate replaced by U+FFFD; anything else (and text without one) as it is.

    An exporter that cuts a string mid-emoji (a JS exporter's truncation) writes half of a UTF-16 pair
    (`"\\ud83c"`), which Python's `json` decodes into a `str` no UTF-8 file can hold: one such attribute
    made the whole conversation invalid. The same object is returned when nothing changed.
    """
    if not isinstance(text, str) or text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


def unjson(value: Any) -> Any:
    """Decode a string holding JSON (object, array, string, number); other values unchanged.

    Used for attributes that conventions define as JSON text (`input.value`
    with mime type `application/json`, `mlflow.spanInputs`, Langfuse's
    observation input). Text that is not JSON is returned as it is.
    """
    if isinstance(value, str):
        head = value.lstrip()[:1]
        if head in ("{", "[", '"') or (head and (head.isdigit() or head == "-")):
            try:
                decoded = json.loads(value)
            except JSON_ERRORS:
                return value
            return mend_surrogates(decoded) if ESCAPED_SURROGATE.search(value) else decoded
    return value


ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # a surrogate escape in JSON text: a pair, or half of one


def mend_surrogates(value: Any) -> Any:
    """Decoded JSON with every lone surrogate replaced (`whole_text`), keys included."""
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, list):
        return [mend_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {whole_text(k): mend_surrogates(v) for k, v in value.items()}
    return value


def as_int(value: Any) -> int | None:
    """An integer count recorded as a number or numeric text; `None` when absent or not a number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


_INDEX = re.compile(r"^(\d+)$")


def nested(attrs: dict[str, Any], prefix: str) -> Any:
    """Rebuild the structure an SDK flattened into dotted keys under `prefix`.

    `{"p.0.role": "user", "p.0.tool_calls.1.name": "f"}` under `"p"` gives
    `[{"role": "user", "tool_calls": [None, {"name": "f"}]}]`: numeric path
    segments become list indices (holes are `None`), others mapping keys.
    Returns `None` when no key starts with `prefix + "."`.
    """
    head = prefix + "."
    items = [(k[len(head) :].split("."), v) for k, v in attrs.items() if k.startswith(head)]
    if not items:
        return None
    root: dict[str, Any] = {}
    for path, value in items:
        node = root
        for part in path[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        if not isinstance(node.get(path[-1]), dict):
            node[path[-1]] = value
    return _listify(root)


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(_INDEX.match(k) for k in node):
        size = max(int(k) for k in node) + 1
        if size <= 4 * len(node) + 16:  # a sparse index past that is a mapping that happens to use digits
            out: list[Any] = [None] * size
            for k, v in node.items():
                out[int(k)] = _listify(v)
            return out
    return {k: _listify(v) for k, v in node.items()}


def text_message(role: str, text: str | None) -> dict[str, Any]:
    """A normalised message holding one text part (none when `text` is empty)."""
    return {"role": role, "parts": [{"type": "text", "content": text}] if isinstance(text, str) and present(text) and text != "" else []}


def tool_call_part(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A normalised `tool_call` part; ids become strings, arguments stay as recorded (JSON text or mapping)."""
    return {"type": "tool_call", "id": None if call_id in (None, "") else str(call_id), "name": name, "arguments": arguments}


def tool_response_part(call_id: Any, response: Any) -> dict[str, Any]:
    """A normalised `tool_call_response` part."""
    return {"type": "tool_call_response", "id": None if call_id in (None, "") else str(call_id), "response": response}
