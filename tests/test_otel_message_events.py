"""Format `otel` reads the GenAI message events of semantic conventions 1.27–1.36 into the conversation they record.

`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message` and `gen_ai.choice`
hold a request's messages one event each, as OTLP log records (the logs export beside the traces one, or both in one
file) or as span events. The recordings (`tests/data/openllmetry-events/`, made by
`tests/frameworks/record_openllmetry_events.py`: OpenLLMetry's `opentelemetry-instrumentation-openai` 0.62.4 with
`use_attributes=False`, against a loopback server) hold the log records: a user message whose content is a list of
content parts, a choice whose tool calls stand beside its `message`, tool messages with no call id. Before, such a
conversation read with no user turn and no call. The span-event forms are the same records moved onto their spans as
the producers that write span events lay a body out: each field an attribute (JetBrains' Koog; an object or list as its
JSON text), the body as JSON text in `gen_ai.event.content` (Azure AI Inference SDK, Semantic Kernel), or under
`event.body` / `body`.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from test_otel_loop_faults import facts
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.values import any_value

DATA = Path(__file__).parent / "data" / "openllmetry-events"


def _truth(name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / f"{name}.truth.json").read_text())["cases"]


def _docs(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()]


def _records(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for d in docs for rl in d.get("resourceLogs", []) for sl in rl["scopeLogs"] for r in sl["logRecords"]]


def _write(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


@pytest.mark.parametrize("name", ["tl-events", "tl-events-n2", "tl-events-stream"])
def test_recorded_events_read_as_the_conversation_the_application_had(name: str) -> None:
    got = extract_path(DATA / f"{name}.jsonl", "otel")
    assert [facts(c) for c in got] == _truth(name), got


@pytest.mark.parametrize("name", ["tl-anthropic-events", "tl-anthropic-events-stream"])
def test_anthropic_events_written_outside_their_spans_read_as_the_conversation(name: str) -> None:
    # OpenLLMetry's Anthropic instrumentation writes every record with no trace or span id, and each block of a reply
    # (thinking, text, each tool_use) as a `gen_ai.choice` of its own: all of them are the one reply of their request
    got = extract_path(DATA / f"{name}.jsonl", "otel")
    want = _truth(name)
    if name.endswith("-stream"):  # the instrumentation counts one output token more per streamed request (README)
        want = [{**want[0], "usage": {**want[0]["usage"], "output_tokens": want[0]["usage"]["output_tokens"] + want[0]["usage"]["requests"]}}]
    assert [facts(c) for c in got] == want, got
    failed = [(c.id, c.error) for c in got[0].trace.tool_calls() if c.failed]
    assert failed == [("toolu_02", "weather service unavailable for Tokyo")]  # its tool_result's `is_error`


def test_a_logs_export_given_beside_the_traces_export_is_read_with_it() -> None:
    # one folder: the spans' export and the logs' export, the latter as protobuf's JSON mapping writes it (base64 ids)
    assert "==" in (DATA / "tl-events-split" / "logs.jsonl").read_text()[:2000]
    got = extract_path(DATA / "tl-events-split", "otel")
    assert [facts(c) for c in got] == _truth("tl-events"), got


def test_of_several_choices_the_first_is_the_reply() -> None:
    (case,) = extract_path(DATA / "tl-events-n2.jsonl", "otel")
    first = case.trace.steps[0]
    assert [c.id for c in first.tool_calls] == ["call_p"]  # not choice 1's `call_x`, which the application never ran
    assert case.trace.output == "Sunny in Paris, 21 C."


def _flat(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"stringValue": v if isinstance(v, str) else json.dumps(v)}} for k, v in body.items()]


def _any(v: Any) -> dict[str, Any]:
    """`v` as an OTLP/JSON `AnyValue`."""
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_any(i) for i in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _any(i)} for k, i in v.items()]}}
    return {}


FORMS = {
    "flat": _flat,  # Koog: each body field an attribute, an object or a list as its JSON text
    "object": lambda body: body,  # attributes written as a JSON object: the body's objects become key levels
    "json-text": lambda body: [{"key": "gen_ai.event.content", "value": {"stringValue": json.dumps(body)}}],  # Azure AI Inference SDK
    "event.body": lambda body: [{"key": "event.body", "value": _any(body)}],  # the body as a map
    "body-text": lambda body: [{"key": "body", "value": {"stringValue": json.dumps(body)}}],
}


def _as_span_events(docs: list[dict[str, Any]], form: str) -> list[dict[str, Any]]:
    """`docs` with each log record moved onto its span as a span event, its body laid out as `FORMS[form]` lays it."""
    docs = copy.deepcopy(docs)
    spans = {s["spanId"]: s for d in docs for rs in d.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]}
    for rec in _records(docs):
        body = any_value(rec["body"])
        spans[rec["spanId"]].setdefault("events", []).append(
            {"name": rec["eventName"], "timeUnixNano": rec["observedTimeUnixNano"], "attributes": FORMS[form](body)})
    return [d for d in docs if "resourceSpans" in d]


@pytest.mark.parametrize("form", list(FORMS))
def test_the_same_events_as_span_events_read_alike(tmp_path: Path, form: str) -> None:
    path = _write(tmp_path / "spans.jsonl", _as_span_events(_docs("tl-events"), form))
    got = extract_path(path, "otel")
    assert [facts(c) for c in got] == _truth("tl-events"), got


RECORD_FORMS = {
    "body-json-text": lambda rec, body: rec.__setitem__("body", {"stringValue": json.dumps(body)}),  # a bridge logging JSON text
    "fields-as-attributes": lambda rec, body: (rec.pop("body"), rec.__setitem__("attributes", rec["attributes"] + _flat(body))),
    "event-body-attribute": lambda rec, body: (rec.pop("body"), rec.__setitem__("attributes", rec["attributes"] + FORMS["event.body"](body))),
}


@pytest.mark.parametrize("form", list(RECORD_FORMS))
def test_a_log_records_body_in_another_form_reads_alike(tmp_path: Path, form: str) -> None:
    docs = _docs("tl-events")
    for rec in _records(docs):
        RECORD_FORMS[form](rec, any_value(rec["body"]))
    got = extract_path(_write(tmp_path / "records.jsonl", docs), "otel")
    assert [facts(c) for c in got] == _truth("tl-events"), got


def test_the_system_message_is_read_as_the_requests_input() -> None:
    inputs = _request_inputs(DATA / "tl-events-n2.jsonl")[0]  # (the spans, not the case: a system prompt is no user turn)
    assert inputs[:2] == [{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
                          {"role": "user", "parts": [{"type": "text", "content": "What is the weather in Paris?"}]}]


OTHER = "Is it sunny in Paris?"  # `tl-events-n2` asked another way: a conversation of its own beside `tl-events`


def _two_conversations(tmp_path: Path, spoil: Any) -> tuple[Path, list[Any]]:
    """One file: the records of `tl-events` with `spoil(record)` applied to its first choice, then `tl-events-n2` asking
    `OTHER` (so that it replays no request of the first); what it reads as."""
    path = tmp_path / "two.jsonl"
    bad = _docs("tl-events")
    spoil(next(r for r in _records(bad) if r["eventName"] == "gen_ai.choice"))
    other = [json.loads(json.dumps(d).replace("What is the weather in Paris?", OTHER)) for d in _docs("tl-events-n2")]
    _write(path, bad + other)
    return path, extract_path(path, "otel")


@pytest.mark.parametrize(("spoil", "field", "says"), [
    (lambda r: r["body"]["kvlistValue"]["values"].append({"key": "tool_calls", "value": {"intValue": "3"}}),
     "tool_calls", "must be a list of tool calls, got a number"),
    (lambda r: r["body"]["kvlistValue"]["values"].__setitem__(1, {"key": "message", "value": {"stringValue": "{content: hi"}}),
     "message", "is not valid JSON"),
    (lambda r: r.__setitem__("body", {"stringValue": "hello"}), "body", "must be an object (or its JSON text), got text"),
    (lambda r: r["body"]["kvlistValue"]["values"].append({"key": "index", "value": {"intValue": "zero"}}),
     ".body", "does not decode"),
    (lambda r: r.__setitem__("observedTimeUnixNano", "soon"), ".timeUnixNano", "is not a time ('soon')"),
    # read as they were, a body of no content: the choice was lost with nothing said
    (lambda r: r["body"]["kvlistValue"].__setitem__("values", "nope"), ".body", "kvlistValue.values must be a list, got str"),
    (lambda r: r["body"]["kvlistValue"]["values"].append({"key": "index", "value": {"arrayValue": "x"}}),
     ".body", "arrayValue must be an object holding `values`, got str"),
])
def test_a_malformed_event_is_an_error_naming_file_line_and_field_and_the_rest_reads(tmp_path: Path, spoil: Any, field: str, says: str) -> None:
    path, got = _two_conversations(tmp_path, spoil)
    errors = [g for g in got if not isinstance(g, Case)]
    cases = [g for g in got if isinstance(g, Case)]
    # the other conversation reads on (the spoiled one's requests after the bad event, which no longer replay a request
    # that reads, read as a conversation of their own, as after any request that does not read)
    assert {**_truth("tl-events-n2")[0], "user_turns": [OTHER]} in [facts(c) for c in cases], got
    assert len(errors) == 1, got
    (_, error) = errors[0]
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "gen_ai.choice" in text)
    assert f"{path}:{line}: log record 'gen_ai.choice' of span " in error.message, error.message
    assert says in error.message and field in error.field and "gen_ai.choice" in error.field, error


@pytest.mark.parametrize("value", [{"arrayValue": "x"}, {"kvlistValue": [1]}, {"arrayValue": {"values": "abc"}}])
def test_a_span_attribute_of_no_otlp_shape_costs_that_attribute_not_the_export(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                                               value: Any) -> None:
    # It lost the whole export line to Python's own error (`'str' object has no attribute 'get'`), naming no attribute.
    docs = _docs("tl-events")
    span = next(s for d in docs for rs in d.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"])
    span["attributes"].append({"key": "app.note", "value": value})
    with caplog.at_level(logging.WARNING):
        got = extract_path(_write(tmp_path / "t.jsonl", docs), "otel")
    assert [facts(c) for c in got] == _truth("tl-events")
    assert any(f"span {span['spanId']}: attribute app.note" in r.getMessage() and "does not decode" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_a_log_records_attributes_of_no_otlp_shape_are_warned_of_and_the_record_reads(tmp_path: Path,
                                                                                     caplog: pytest.LogCaptureFixture) -> None:
    docs = _docs("tl-events")
    _records(docs)[1]["attributes"] = "gen_ai.provider.name=openai"
    path = _write(tmp_path / "t.jsonl", docs)
    with caplog.at_level(logging.WARNING):
        got = extract_path(path, "otel")
    assert [facts(c) for c in got] == _truth("tl-events")
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "resourceLogs" in text)
    assert (f"otel: {path}:{line}: resourceLogs[0].scopeLogs[0].logRecords[1].attributes must be a list of {{key, value}} or an "
            "object, got str: the record is read without them") in [r.getMessage() for r in caplog.records]


def test_a_logs_export_that_cannot_be_read_is_named_by_the_traces_it_leaves_without_content(tmp_path: Path) -> None:
    # Each trace said only that content capture was off, sending the reader to the instrumentation's settings.
    import shutil

    folder = tmp_path / "split"
    shutil.copytree(DATA / "tl-events-split", folder)
    logs = (folder / "logs.jsonl").read_text()
    (folder / "logs.jsonl").write_text(logs[: len(logs) // 2] + "\n")
    errors = [g[1].message for g in extract_path(folder, "otel") if not isinstance(g, Case)]
    assert errors[0].startswith("invalid JSON: ") and "the line ends early" in errors[0], errors
    assert len(errors) == 5 and all("or they were in an export that could not be read (logs.jsonl:1: its own error says why)" in e
                                    for e in errors[1:]), errors


def test_a_resource_attribute_that_does_not_decode_is_named_with_the_export_it_costs(tmp_path: Path) -> None:
    docs = _docs("tl-events")
    next(d for d in docs if "resourceSpans" in d)["resourceSpans"][0]["resource"]["attributes"].append(
        {"key": "host.name", "value": {"intValue": "many"}})
    path = _write(tmp_path / "t.jsonl", docs)
    errors = [(g[0], g[1].message) for g in extract_path(path, "otel") if not isinstance(g, Case)]
    assert (f"{path}:1", "not a valid OTLP/JSON export: resourceSpans[0].resource.attributes: a value does not decode "
            "(invalid literal for int() with base 10: 'many')") in errors, errors


def test_a_malformed_span_event_names_its_span_and_attribute(tmp_path: Path) -> None:
    docs = _as_span_events(_docs("tl-events-n2"), "json-text")
    span = next(s for d in docs for rs in d["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"] if s.get("events"))
    span["events"][0]["attributes"] = [{"key": "gen_ai.event.content", "value": {"stringValue": "{\"content\": "}}]
    path = _write(tmp_path / "spans.jsonl", docs)
    ((_, error),) = [g for g in extract_path(path, "otel") if not isinstance(g, Case)]
    assert f"span {span['spanId']}: span event 'gen_ai.system.message': gen_ai.event.content is not valid JSON" in error.message
    assert error.field == f"span {span['spanId']}: span event 'gen_ai.system.message': gen_ai.event.content"


def test_a_record_whose_span_never_came_belongs_to_its_trace(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # agentevals groups a record by its span, else by its trace; a trace of one request owns it (`links.lone_request`)
    docs = _docs("tl-events-n2")
    for rec in _records(docs):
        rec["spanId"] = rec["spanId"][:-4] + "beef"  # a span the exporter dropped (each trace's its own)
    got = extract_path(_write(tmp_path / "lost.jsonl", docs), "otel")
    assert [facts(c) for c in got] == _truth("tl-events-n2"), got
    logs_alone = _write(tmp_path / "logs.jsonl", [d for d in _docs("tl-events-n2") if "resourceLogs" in d])
    with caplog.at_level(logging.WARNING):
        extract_path(logs_alone, "otel")
    said = [r.getMessage() for r in caplog.records if "no file read holds" in r.getMessage()]
    assert len(said) == 1 and f"{logs_alone}:1: " in said[0] and "'gen_ai.system.message'" in said[0], said


def test_a_64_bit_trace_id_in_base64_is_its_16_hex_digits(tmp_path: Path) -> None:
    # Jaeger's and Zipkin's trace ids are 8 bytes; protobuf's JSON mapping writes them in base64 (12 characters), Jaeger's
    # download as 16 hex digits. Both spellings are one trace: the spans' in base64, the records' in hex.
    short = "00f067aa0ba902b7"
    docs = _docs("tl-events-n2")
    first = next(s for d in docs for rs in d.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"])
    old = first["traceId"]
    for d in docs:
        for rs in d.get("resourceSpans", []):
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    if s["traceId"] == old:
                        s["traceId"] = base64.b64encode(bytes.fromhex(short)).decode()
    for rec in _records(docs):
        if rec["traceId"] == old:
            rec["traceId"] = short.upper()
    got = extract_path(_write(tmp_path / "short.jsonl", docs), "otel", {"group_by": "trace"})
    assert short in [c.id for c in got], [getattr(c, "id", c) for c in got]
    case = next(c for c in got if c.id == short)
    assert facts(case)["user_turns"] == ["What is the weather in Paris?"] and facts(case)["calls"][0]["id"] == "call_p"


def test_a_streamed_choice_written_outside_its_span_joins_the_request_running_at_its_time(tmp_path: Path,
                                                                                         caplog: pytest.LogCaptureFixture) -> None:
    # OpenLLMetry 0.62 writes a streamed reply's `gen_ai.choice` once the stream is read, with no trace or span id
    docs = _docs("tl-events-stream")
    untraced = [r for r in _records(docs) if not r.get("traceId")]
    assert [r["eventName"] for r in untraced] == ["gen_ai.choice", "gen_ai.choice"]  # what the recording shows
    # the same run twice at the same times, other ids: which request each choice was written in cannot be told
    again = json.loads(json.dumps(docs))
    for d in again:
        for item in [s for rs in d.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]] + _records([d]):
            for key in ("traceId", "spanId", "parentSpanId"):
                if item.get(key):
                    item[key] = item[key][::-1]
    with caplog.at_level(logging.WARNING):
        got = extract_path(_write(tmp_path / "twice.jsonl", docs + again), "otel")
    said = [r.getMessage() for r in caplog.records if "name no trace nor span" in r.getMessage()]
    assert len(said) == 1 and "4 GenAI event log record(s) (the first 'gen_ai.choice')" in said[0], said
    assert all(c.trace.steps[0].tool_calls == [] for c in got), got  # no call made up from another request's reply


def test_vertexai_shaped_events_read_alike(tmp_path: Path) -> None:
    # OTel's vertexai instrumentation (`utils.request_to_events`, `response_to_events`) writes the Gemini content's role
    # into the body, `user` for a function's response (`tool_event(role=content.role, …)`) and for a system instruction;
    # a content as its Gemini parts (`{"text"}`, `{"function_call": {"name", "args"}}`), so the assistant's earlier calls
    # only as parts; a choice's message says `model`, and its calls stand twice: as parts, and beside with ids
    def gemini(call: dict[str, Any]) -> dict[str, Any]:
        return {"function_call": {"name": call["function"]["name"], "args": json.loads(call["function"]["arguments"])}}

    docs = _docs("tl-events")
    for rec in _records(docs):
        body = any_value(rec["body"])
        if rec["eventName"] in ("gen_ai.tool.message", "gen_ai.system.message"):
            body["role"] = "user"
        if rec["eventName"] == "gen_ai.user.message":
            body["content"] = [{"text": p["text"]} for p in body["content"]]
        if rec["eventName"] == "gen_ai.assistant.message":
            text = body.get("content")
            body = {"role": "model", "content": ([{"text": text}] if text else []) + [gemini(c) for c in body.get("tool_calls", [])]}
        if rec["eventName"] == "gen_ai.choice":
            text = body["message"].get("content")
            body["message"] = {"role": "model", "content": ([{"text": text}] if text else []) + [gemini(c) for c in body.get("tool_calls", [])]}
        rec["body"] = _any(body)
    path = _write(tmp_path / "vertex.jsonl", docs)
    got = extract_path(path, "otel")
    assert [facts(c) for c in got] == _truth("tl-events"), got
    replayed = [m for inputs in _request_inputs(path) for m in inputs if m["role"] == "assistant"]
    assert {"type": "tool_call", "id": None, "name": "get_weather", "arguments": {"city": "Paris"}} in replayed[0]["parts"], replayed


def _request_inputs(path: Path) -> list[list[dict[str, Any]]]:
    """The input messages of each model request in `path`, in order of start (the spans, not the case)."""
    from tracejudge.core.config import DatasetConfig
    from tracejudge.stages.extract.otel import read
    from tracejudge.stages.extract.otel.conventions.genai import messages

    spans = [s for r in read(DatasetConfig(path=path, format="otel")) if r.error is None for s in r.payload.spans]
    return [messages(s)[0] for s in sorted(spans, key=lambda s: s.start) if s.name == "openai.chat"]
