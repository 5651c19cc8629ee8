"""Format `otel` reads the system prompt GenAI semantic conventions 1.37+ keep in `gen_ai.system_instructions`.

The conventions put what a provider takes apart from the chat history in a JSON array of parts, on the inference span
or its `gen_ai.client.inference.operation.details` event; it becomes the request's leading `system` message, as a system
message recorded among `gen_ai.input.messages` is. The real recordings: OTel's google-genai instrumentation (the span
attribute, and the details log record), OpenLLMetry's LangChain instrumentation (which moves every `SystemMessage`
there, and also writes the prompt as plain text on its `create_agent` span). The rest are exports built by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _otel_truth import extract
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel import read
from tracejudge.stages.extract.otel.conventions import read_span

DATA = Path(__file__).parent / "data"
KEY = "gen_ai.system_instructions"
TRACE, OTHER_TRACE, START = "5a0c1d2e3f405162738495a6b7c8d9e0", "6b1d2e3f405162738495a6b7c8d9e0f1", 1760000000000000000
PROMPT = "You are a weather assistant. Answer in one sentence."
TOLD = [{"type": "text", "content": PROMPT}]
USER = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
OUT = [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny, 21 C."}], "finish_reason": "stop"}]
SYSTEM = {"role": "system", "parts": TOLD}


def _value(v: Any) -> dict[str, Any]:
    """An OTLP/JSON `AnyValue`: an attribute holding an array is written structured, as the conventions prefer."""
    if isinstance(v, list):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _value(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def _attrs(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in pairs.items()]


def _chat(trace: str, attrs: dict[str, Any], events: list[tuple[str, dict[str, Any]]] = ()) -> dict[str, Any]:
    base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1-mini"}
    return {"traceId": trace, "spanId": trace[:16], "name": "chat gpt-4.1-mini", "kind": 3, "startTimeUnixNano": str(START),
            "endTimeUnixNano": str(START + 10_000_000), "attributes": _attrs({**base, **attrs}),
            "events": [{"name": n, "timeUnixNano": str(START + 9_000_000), "attributes": _attrs(a)} for n, a in events]}


def _export(tmp_path: Path, *spans: dict[str, Any]) -> Path:
    path = tmp_path / "export.jsonl"
    doc = {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "agent"})},
                              "scopeSpans": [{"scope": {"name": "opentelemetry.util.genai.handler"}, "spans": list(spans)}]}]}
    path.write_text(json.dumps(doc) + "\n")
    return path


def _inputs(path: Path) -> list[list[dict[str, Any]]]:
    """The input messages of each model request in `path`, in order of start (the spans, not the case)."""
    spans = [s for r in read(DatasetConfig(path=path, format="otel")) if r.error is None for s in r.payload.spans]
    views = [read_span(s) for s in sorted(spans, key=lambda s: (s.start, s.span_id))]
    return [v.inputs or [] for v in views if v.role == "model"]


def _messages(inputs: list[Any]) -> str:
    return json.dumps(inputs)


@pytest.mark.parametrize("form", ["json text", "structured"])
def test_the_span_attribute_is_the_requests_leading_system_message(tmp_path: Path, form: str) -> None:
    told = json.dumps(TOLD) if form == "json text" else TOLD
    path = _export(tmp_path, _chat(TRACE, {KEY: told, "gen_ai.input.messages": _messages([USER]), "gen_ai.output.messages": _messages(OUT)}))
    assert _inputs(path) == [[SYSTEM, USER]]
    (case,) = extract(path)
    assert isinstance(case, Case), case
    # a system prompt is no user turn: the case reads as it would without it
    assert case.input == "Weather in Paris?" and [m.content for m in case.trace.user_messages] == ["Weather in Paris?"]
    assert case.trace.output == "Sunny, 21 C."


def test_the_details_span_event_holds_them_too(tmp_path: Path) -> None:
    details = ("gen_ai.client.inference.operation.details", {KEY: TOLD, "gen_ai.input.messages": [USER], "gen_ai.output.messages": OUT})
    path = _export(tmp_path, _chat(TRACE, {}, [details]))
    assert _inputs(path) == [[SYSTEM, USER]]


@pytest.mark.parametrize("recording", ["otel-span-only", "otel-event-only", "otel-span-only-afc-stream", "otel-event-only-afc"])
def test_google_genai_instrumentation_gives_every_request_its_system_instruction(recording: str) -> None:
    """OTel's google-genai instrumentation (through opentelemetry-util-genai): the span attribute, or with EVENT_ONLY the
    details log record's attribute (an OTLP array of maps); each request opens with the application's `Be brief.`, once."""
    requests = _inputs(DATA / "google-genai" / f"{recording}.jsonl")
    assert requests and all(inputs[0] == {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]} for inputs in requests)
    assert all([m["role"] for m in inputs].count("system") == 1 and inputs[1]["role"] == "user" for inputs in requests)


def test_openllmetry_langchain_system_message_comes_back_and_its_agent_span_is_no_request() -> None:
    """OpenLLMetry's LangChain instrumentation takes each `SystemMessage` out of `gen_ai.input.messages`; its
    `create_agent` span holds the prompt as plain text, not JSON: that span is no request, so it is neither read nor an error."""
    path = DATA / "frameworks" / "traceloop-langchain" / "booking.jsonl"
    requests = _inputs(path)
    assert len(requests) == 3
    assert all(inputs[0] == {"role": "system", "parts": [{"type": "text", "content": "You are a helpful assistant."}]} for inputs in requests)
    assert all(isinstance(c, Case) for c in extract(path))


def test_instructions_the_input_messages_already_hold_are_said_once(tmp_path: Path) -> None:
    both = _chat(TRACE, {KEY: json.dumps(TOLD), "gen_ai.input.messages": _messages([SYSTEM, USER]), "gen_ai.output.messages": _messages(OUT)})
    assert _inputs(_export(tmp_path, both)) == [[SYSTEM, USER]]


def test_instructions_lead_a_system_message_of_the_history(tmp_path: Path) -> None:
    """Instructions are given apart from the history: they come first, the history's own system message after them."""
    own = {"role": "system", "parts": [{"type": "text", "content": "Today is Monday."}]}
    span = _chat(TRACE, {KEY: json.dumps(TOLD), "gen_ai.input.messages": _messages([own, USER]), "gen_ai.output.messages": _messages(OUT)})
    assert _inputs(_export(tmp_path, span)) == [[SYSTEM, own, USER]]


def test_parts_that_are_not_text_read_as_an_input_messages_parts(tmp_path: Path) -> None:
    parts = [{"type": "text", "content": PROMPT}, {"type": "uri", "modality": "image", "uri": "https://example.com/logo.png"},
             {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0KGgo="},
             {"type": "thinking", "content": "a pydantic-ai part name"}]
    told = _chat(TRACE, {KEY: json.dumps(parts), "gen_ai.input.messages": _messages([USER]), "gen_ai.output.messages": _messages(OUT)})
    said = _chat(OTHER_TRACE, {"gen_ai.input.messages": _messages([{"role": "system", "parts": parts}, USER]),
                               "gen_ai.output.messages": _messages(OUT)})
    (from_instructions,) = _inputs(_export(tmp_path, told))
    (from_messages,) = _inputs(_export(tmp_path, said))
    assert from_instructions == from_messages
    assert from_instructions[0]["parts"][1:3] == parts[1:3] and from_instructions[0]["parts"][3]["type"] == "reasoning"


@pytest.mark.parametrize(("value", "field", "said"), [
    ("You are terse.", KEY, "is not valid JSON"),
    (json.dumps([{"type": "text", "content": "You are terse. " * 80}])[:1024], KEY,
     "was cut at 1024 characters by the attribute length limit (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT)"),
    (json.dumps({"type": "text", "content": PROMPT}), KEY, "must be a JSON array of parts, got an object"),
    (json.dumps(PROMPT), KEY, "must be a JSON array of parts, got a string"),
    (json.dumps([{"type": "text", "content": PROMPT}, {"content": "no type"}]), f"{KEY}[1].type", "is missing"),
    (json.dumps(["You are terse."]), f"{KEY}[0]", "must be a part object ({type, …}), got a string"),
    (json.dumps([{"type": "text", "content": 5}]), f"{KEY}[0].content", "must be the instructions' text, got a number"),
    (json.dumps([{"type": "text"}]), f"{KEY}[0].content", "must be the instructions' text, got null"),
])
def test_malformed_instructions_are_their_conversations_invalid_input(tmp_path: Path, value: str, field: str, said: str) -> None:
    """As a `gen_ai.input.messages` that is not JSON: the conversation is one `invalid_input` naming file, line, span and
    field; the next conversation of the file reads on."""
    bad = _chat(TRACE, {KEY: value, "gen_ai.input.messages": _messages([USER]), "gen_ai.output.messages": _messages(OUT)})
    good = _chat(OTHER_TRACE, {KEY: json.dumps(TOLD), "gen_ai.input.messages": _messages([USER]), "gen_ai.output.messages": _messages(OUT)})
    got = extract(_export(tmp_path, bad, good))
    assert len(got) == 2 and isinstance(got[1], Case), got
    case_id, error = got[0]
    assert case_id == TRACE and error.kind == "invalid_input"
    assert error.field == f"span {TRACE[:16]}: {field}"
    assert f"span {TRACE[:16]}: {field} {said}" in error.message and "export.jsonl line 1" in error.message, error.message


@pytest.mark.parametrize("key", ["gen_ai.input.messages", "gen_ai.output.messages"])
@pytest.mark.parametrize(("value", "kind"), [
    (json.dumps("Weather in Paris?"), "a string"),
    (json.dumps({"role": "user", "parts": []}), "an object"),
    ("42", "a number"),
    ("null", "null"),
    (json.dumps({"messages": None}), "an object whose `messages` is null"),
    (json.dumps({"messages": "Weather in Paris?"}), "an object whose `messages` is a string"),
])
def test_message_attributes_that_are_no_array_are_invalid_input_as_the_instructions_are(
        tmp_path: Path, key: str, value: str, kind: str) -> None:
    """The conventions define both as arrays of messages: JSON of anything else (but LangGraph's `{"messages": [...]}`
    state, which the reader unwraps) is its conversation's `invalid_input` naming span and field, not a request that
    said nothing; the next conversation reads on."""
    attrs = {"gen_ai.input.messages": _messages([USER]), "gen_ai.output.messages": _messages(OUT)}
    bad = _chat(TRACE, {**attrs, key: value})
    got = extract(_export(tmp_path, bad, _chat(OTHER_TRACE, attrs)))
    assert len(got) == 2 and isinstance(got[1], Case), got
    case_id, error = got[0]
    assert case_id == TRACE and error.kind == "invalid_input" and error.field == f"span {TRACE[:16]}: {key}"
    assert f"{key} must be a JSON array of messages, got {kind}" in error.message and "export.jsonl line 1" in error.message


@pytest.mark.parametrize(("value", "field", "said"), [
    (json.dumps([1, 2]), "[0]", "must be a message object, got a number"),
    (json.dumps([{"role": "assistant", "parts": "x"}]), "[0].parts", "must be a JSON array of parts, got a string"),
    (json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": 5}]}]), "[0].parts[0].content",
     "must be the text, got a number"),
    (json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": True}]}]), "[0].parts[0].content",
     "must be the text, got a boolean"),
    # no role, or nothing said (neither parts nor content): read as a message that said nothing
    (json.dumps([{"parts": [{"type": "text", "content": "Sunny."}]}]), "[0].role", "is missing"),
    (json.dumps([{"role": None, "content": "Sunny."}]), "[0].role", "is missing"),
    (json.dumps([{"role": "", "parts": []}]), "[0].role", "is blank"),
    (json.dumps([{"role": 3, "parts": []}]), "[0].role", "must be a name, got a number"),
    (json.dumps([{"role": "assistant"}]), "[0]", "has neither parts nor content"),
    (json.dumps([{"role": "assistant", "finish_reason": "stop"}]), "[0]", "has neither parts nor content"),
])
def test_message_items_of_the_wrong_shape_are_invalid_input(tmp_path: Path, value: str, field: str, said: str) -> None:
    # Both read as a request that said nothing: input None, output None, `ok`.
    key = "gen_ai.output.messages"
    attrs = {"gen_ai.input.messages": _messages([USER]), key: value}
    ((case_id, error),) = extract(_export(tmp_path, _chat(TRACE, attrs)))
    assert error.kind == "invalid_input" and error.field == f"span {TRACE[:16]}: {key}{field}", error
    assert f"{key}{field} {said}" in error.message


@pytest.mark.parametrize("key", ["gen_ai.input.messages", "gen_ai.output.messages"])
def test_a_message_with_no_role_is_its_conversations_invalid_input_and_the_file_reads_on(tmp_path: Path, key: str) -> None:
    attrs = {"gen_ai.input.messages": _messages([USER]), "gen_ai.output.messages": _messages(OUT)}
    bad = _chat(TRACE, {**attrs, key: json.dumps([{"parts": [{"type": "text", "content": "Weather in Paris?"}]}])})
    got = extract(_export(tmp_path, bad, _chat(OTHER_TRACE, attrs)))
    assert len(got) == 2 and isinstance(got[1], Case), got
    case_id, error = got[0]
    assert case_id == TRACE and error.kind == "invalid_input" and error.field == f"span {TRACE[:16]}: {key}[0].role"
    assert "export.jsonl line 1" in error.message, error.message


def test_a_null_content_stays_content_not_captured(tmp_path: Path) -> None:
    attrs = {"gen_ai.input.messages": _messages([{"role": "user", "content": None}]), "gen_ai.output.messages": _messages(OUT)}
    (case,) = extract(_export(tmp_path, _chat(TRACE, attrs)))
    assert isinstance(case, Case), case


@pytest.mark.parametrize("content", [{"text": "hi"}, ["hi"]])
def test_a_text_part_holding_an_object_is_its_conversations_invalid_input_and_the_file_reads_on(
        tmp_path: Path, content: Any) -> None:
    # It stopped the whole file's run: `TypeError: unhashable type` where requests are matched to their replays.
    bad = [{"role": "system", "parts": [{"type": "text", "content": content}]}, USER]
    got = extract(_export(tmp_path, _chat(TRACE, {"gen_ai.input.messages": _messages(bad), "gen_ai.output.messages": _messages(OUT)}),
                          _chat(OTHER_TRACE, {"gen_ai.input.messages": _messages([USER]), "gen_ai.output.messages": _messages(OUT)})))
    assert len(got) == 2 and isinstance(got[1], Case), got
    assert got[0][1].field == f"span {TRACE[:16]}: gen_ai.input.messages[0].parts[0].content", got[0]


def test_a_messages_wrapper_still_reads(tmp_path: Path) -> None:
    wrapped = json.dumps({"messages": [USER]})
    (case,) = extract(_export(tmp_path, _chat(TRACE, {"gen_ai.input.messages": wrapped, "gen_ai.output.messages": _messages(OUT)})))
    assert isinstance(case, Case) and case.input == "Weather in Paris?", case


def test_malformed_instructions_in_the_details_event_name_the_event(tmp_path: Path) -> None:
    details = ("gen_ai.client.inference.operation.details", {KEY: "[{", "gen_ai.input.messages": [USER], "gen_ai.output.messages": OUT})
    ((_, error),) = extract(_export(tmp_path, _chat(TRACE, {}, [details])))
    assert error.field == f"span {TRACE[:16]}: span event 'gen_ai.client.inference.operation.details': {KEY}"
    assert "is not valid JSON" in error.message


def test_instructions_alone_are_no_recorded_input(tmp_path: Path) -> None:
    """A request whose input messages were not written (content capture of inputs partly off, an instrumentation that
    gave up) is still counted as such: its system prompt is not what the user said."""
    path = _export(tmp_path, _chat(TRACE, {KEY: json.dumps(TOLD), "gen_ai.output.messages": _messages(OUT)}))
    assert _inputs(path) == [[SYSTEM]]
    (case,) = extract(path)
    assert case.metadata["otel"]["missing_inputs"] == {"requests": 1, "no_messages": 1, "empty_messages": 0}


# --- the same system prompt where other conventions keep it ------------------------------------------------------------
def _system(inputs: list[dict[str, Any]]) -> str | None:
    """The text of the request's leading system message (`None`: it opens with none)."""
    first = inputs[0] if inputs else {}
    return "\n".join(p["content"] for p in first.get("parts") or []) if first.get("role") == "system" else None


@pytest.mark.parametrize("recording", ["v2_no_content/S1.json", "v1_default/S1.json"])
def test_adk_call_llm_request_opens_with_its_system_instruction(recording: str) -> None:
    """Google ADK's `call_llm` holds the Gemini request in `gcp.vertex.agent.llm_request`, the agent's instruction in its
    `config.system_instruction`; with GenAI content off (`v2_no_content`) that is the only place it is written."""
    requests = _inputs(DATA / "agentevals" / "adk_py" / recording)
    assert _system(requests[0]) == 'You are a helpful assistant.\n\nYou are an agent. Your internal name is "assistant".'
    assert requests[0][1]["role"] == "user"


def test_mlflow_pydantic_ai_instructions_lead_every_request() -> None:
    """`mlflow.pydantic_ai.autolog()` records pydantic-ai's own messages: the agent's `instructions` ride on each
    `ModelRequest`, in no part."""
    requests = _inputs(DATA / "mlflow-agents" / "pydantic-tools.otlp.jsonl")
    assert requests and all(_system(r) == "Use the tool." and [m["role"] for m in r].count("system") == 1 for r in requests)


def test_mlflow_agents_sdk_response_span_carries_the_instructions() -> None:
    """The Agents SDK under MLflow: the `Response` span's input is the run's items alone; the response it records, its
    fields attributes of the span, names the `instructions`. Its `AsyncResponses` request sends them as `instructions`."""
    requests = _inputs(DATA / "mlflow-agents" / "agents-tools.otlp.jsonl")
    assert len(requests) == 4 and all(_system(r) == "Answer with the weather tool." for r in requests)


def test_mlflow_anthropic_system_argument_is_the_system_message(tmp_path: Path) -> None:
    """MLflow's Anthropic autolog records `messages.create`'s keyword arguments; `system` (text, or text blocks) is not
    one of the `messages`. The recording asked with no system prompt: here it is given one, both ways."""
    path = tmp_path / "anthropic.otlp.jsonl"
    lines = []
    for n, line in enumerate((DATA / "mlflow-agents" / "anthropic-tools.otlp.jsonl").read_text().splitlines()):
        doc = json.loads(line)
        for span in (sp for rs in doc.get("resourceSpans", []) for ss in rs["scopeSpans"] for sp in ss["spans"]):
            for attr in span["attributes"]:
                if span["name"] == "Messages.create" and attr["key"] == "mlflow.spanInputs":
                    inputs = json.loads(attr["value"]["stringValue"])
                    inputs["system"] = PROMPT if n % 2 == 0 else [{"type": "text", "text": PROMPT}]
                    attr["value"]["stringValue"] = json.dumps(inputs)
        lines.append(json.dumps(doc))
    path.write_text("\n".join(lines) + "\n")
    requests = _inputs(path)
    assert len(requests) == 2 and all(_system(r) == PROMPT and r[1]["role"] == "user" for r in requests)


def test_openllmetry_flat_prompt_system_role_is_the_system_message(tmp_path: Path) -> None:
    """OpenLLMetry before it wrote `gen_ai.input.messages`: `gen_ai.prompt.<n>.role` / `.content`, one message a number."""
    span = _chat(TRACE, {})
    span["name"], span["attributes"] = "openai.chat", _attrs({
        "llm.request.type": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o", "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": PROMPT, "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Weather in Paris?",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Sunny, 21 C."})
    assert _inputs(_export(tmp_path, span)) == [[SYSTEM, USER]]
