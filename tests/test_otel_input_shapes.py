"""Format `otel` reads every shape of OTLP/JSON that agentevals' loader reads, into the same spans.

agentevals-dev/agentevals reads, besides the collector's export documents (`src/agentevals/loader/otlp.py`,
`decode_otlp_text`; `src/agentevals/otel/decode.py`): attributes written as a JSON object, flat or nested as a
ClickHouse JSON column holds them (`tests/test_otlp_loader.py`, `TestFlatDictAttributes`, `TestNestedDictAttributes`);
bare spans, one a line or a JSON array of them, beside export documents in one file (`test_otlp_loader_jsonl_format`,
`test_otlp_loader_parent_child_relationships`); ids in base64 or capitals, an id of zeros as no id, and the enum names
of span kinds (`decode.normalize_id`, `_enum`); `instrumentationLibraryLogs` (`decode_json_document`).

Each real export of the developer set is rewritten into each shape and must still match its `.truth.json`, and read
as the same case as the export itself; small hand-built files check the rest, and that what is none of these shapes
stays a clear error naming its file, line and field.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from _otel_truth import assert_truth, extract
from conftest import DATA
from tracejudge.core.records import Case

OTEL = DATA / "otel_genai"
TRUTHS = sorted(OTEL.rglob("*.truth.json")) if OTEL.exists() else []
_KINDS = ["SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"]


def _plain(value: dict[str, Any]) -> Any:
    """An OTLP `AnyValue` as plain JSON, as a producer writing attributes as an object writes it."""
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        return [_plain(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:  # (an object inside a list: a list is a value, never key levels)
        return {i["key"]: _plain(i.get("value", {})) for i in value["kvlistValue"].get("values", [])}
    assert not value, f"no such value in the developer set: {value}"
    return None


def _flat(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {a["key"]: _plain(a["value"]) for a in items}


def _nested(items: list[dict[str, Any]]) -> dict[str, Any]:
    """`{"gen_ai": {"usage": {"input_tokens": 20}}}`: a ClickHouse JSON column of the attributes."""
    out: dict[str, Any] = {}
    for key, value in _flat(items).items():
        *path, leaf = key.split(".")
        node = out
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def _spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for rs in doc.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]]


def _records(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for rl in doc.get("resourceLogs", []) for sl in rl.get("scopeLogs", rl.get("instrumentationLibraryLogs", [])) for r in sl["logRecords"]]


def _as_objects(doc: dict[str, Any], how: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for rs in doc.get("resourceSpans", []):
        rs.setdefault("resource", {})["attributes"] = how(rs.get("resource", {}).get("attributes", []))
    for s in _spans(doc):
        s["attributes"] = how(s.get("attributes", []))
        for e in s.get("events", []):
            e["attributes"] = how(e.get("attributes", []))
    for r in _records(doc):
        r["attributes"] = how(r.get("attributes", []))
    return doc


def _respelled(doc: dict[str, Any], spell: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for item in _spans(doc) + _records(doc):
        for key in ("traceId", "spanId", "parentSpanId"):
            if item.get(key):
                item[key] = spell(item[key])
    return doc


def _odd_spellings(doc: dict[str, Any]) -> dict[str, Any]:
    """Ids in capitals, a root's parent written as zeros, kind names, times as numbers, logs under OTLP's old key."""
    doc = _respelled(doc, str.upper)
    for s in _spans(doc):
        s["parentSpanId"] = s.get("parentSpanId") or "0" * 16
        s["kind"] = _KINDS[int(s.get("kind", 0))]
        s["startTimeUnixNano"], s["endTimeUnixNano"] = int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"])
    for rl in doc.get("resourceLogs", []):
        rl["instrumentationLibraryLogs"] = rl.pop("scopeLogs")
    return doc


def _logs_only(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"resourceLogs": doc["resourceLogs"]}] if doc.get("resourceLogs") else []


def _write(path: Path, shape: str, doc: dict[str, Any]) -> Path:
    """`doc` (an export of the developer set) written in `shape` at `path` (its suffix chosen here)."""
    if shape == "flat attributes":
        text = json.dumps(_as_objects(doc, _flat))
    elif shape == "nested attributes":
        text = json.dumps(_as_objects(doc, _nested))
    elif shape == "a span a line":  # the spans, then the log records' export: one file, two shapes of line
        text = "\n".join(json.dumps(d) for d in [*_spans(doc), *_logs_only(doc)]) + "\n"
    elif shape == "pretty-printed spans":
        text = "\n".join(json.dumps(d, indent=2) for d in [*reversed(_spans(doc)), *_logs_only(doc)]) + "\n"
    elif shape == "base64 ids":  # protobuf's JSON mapping (`MessageToDict`)
        text = json.dumps(_respelled(doc, lambda h: base64.b64encode(bytes.fromhex(h)).decode()))
    else:
        text = json.dumps(_odd_spellings(doc))
    target = path.with_suffix(".jsonl" if "spans" in shape or "line" in shape else ".json")
    target.write_text(text)
    return target


SHAPES = ["flat attributes", "nested attributes", "a span a line", "pretty-printed spans", "base64 ids", "odd spellings"]


def _dump(case: Case) -> dict[str, Any]:
    return case.model_dump(mode="json")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("truth_path", TRUTHS, ids=lambda p: str(p.relative_to(OTEL)).removesuffix(".truth.json"))
def test_each_real_export_in_each_shape_reads_as_its_truth(tmp_path: Path, truth_path: Path, shape: str) -> None:
    # Before: flat or nested attributes read as a span with none (every request "recorded without content"), and a
    # span a line gave one invalid_input per line.
    source = truth_path.with_name(truth_path.name.replace(".truth.json", ".json"))
    path = _write(tmp_path / "export", shape, json.loads(source.read_text()))
    cases = extract(path)
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    assert_truth(cases[0], json.loads(truth_path.read_text()))
    assert _dump(cases[0]) == _dump(extract(source)[0])


def _attr(key: str, value: Any) -> dict[str, Any]:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def _chat(trace: str = "t1", span_id: str = "c1", parent: str | None = None, start: int = 1, user: str = "Hello") -> dict[str, Any]:
    """A model request: the span of `TestFlatDictAttributes` with the messages a GenAI instrumentation records."""
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 167,
             "gen_ai.usage.output_tokens": 42,
             "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
             "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": f"Hi: {user}"}]}])}
    span = {"traceId": trace, "spanId": span_id, "name": "chat gpt-4o", "kind": 3, "startTimeUnixNano": str(start * 1_000_000_000),
            "endTimeUnixNano": str(start * 1_000_000_000 + 500), "attributes": [_attr(k, v) for k, v in attrs.items()]}
    if parent:
        span["parentSpanId"] = parent
    return span


def _agent(trace: str = "t1", span_id: str = "a1", start: int = 0) -> dict[str, Any]:
    return {"traceId": trace, "spanId": span_id, "name": "invoke_agent dice_agent", "startTimeUnixNano": str(start * 1_000_000_000),
            "endTimeUnixNano": str(start * 1_000_000_000 + 5_000_000_000),
            "attributes": [_attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "dice_agent")]}


def _export(spans: list[dict[str, Any]], resource: Any = None) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": resource if resource is not None else [_attr("service.name", "my-agent")]},
                               "scopeSpans": [{"scope": {"name": "test-scope"}, "spans": spans}]}]}


def _read(tmp_path: Path, text: str, name: str = "trace.json", **options: Any) -> list[Any]:
    path = tmp_path / name
    path.write_text(text)
    return extract(path, **options)


def test_flat_object_attributes_read_as_the_key_value_list(tmp_path: Path) -> None:
    # agentevals tests/test_otlp_loader.py, TestFlatDictAttributes: span and resource attributes as flat objects.
    listed = _read(tmp_path, json.dumps(_export([_agent(), _chat(parent="a1")])), "listed.json")
    flat = _export([_agent(), _chat(parent="a1")], resource={"service.name": "my-agent"})
    for span in _spans(flat):
        span["attributes"] = _flat(span["attributes"])
    got = _read(tmp_path, json.dumps(flat))
    assert isinstance(got[0], Case), got
    assert (got[0].input, got[0].trace.output, got[0].trace.usage.input_tokens, got[0].trace.usage.output_tokens) == ("Hello", "Hi: Hello", 167, 42)
    assert _dump(got[0]) == _dump(listed[0])


def test_nested_object_attributes_read_with_dotted_keys_in_spans_and_events(tmp_path: Path) -> None:
    # agentevals tests/test_otlp_loader.py, TestNestedDictAttributes: a ClickHouse JSON column, the messages in the
    # `gen_ai.client.inference.operation.details` event, its attributes nested too.
    chat = _chat(parent="a1")
    messages = {a["key"]: a["value"]["stringValue"] for a in chat["attributes"] if a["key"].endswith(".messages")}
    chat["attributes"] = {"gen_ai": {"operation": {"name": "chat"}, "request": {"model": "gpt-4o"},
                                     "usage": {"input_tokens": 167, "output_tokens": 42}}}
    chat["events"] = [{"timeUnixNano": chat["endTimeUnixNano"], "name": "gen_ai.client.inference.operation.details",
                       "attributes": {"gen_ai": {"input": {"messages": messages["gen_ai.input.messages"]},
                                                 "output": {"messages": messages["gen_ai.output.messages"]}}}}]
    agent = _agent()
    agent["attributes"] = {"gen_ai": {"operation": {"name": "invoke_agent"}, "agent": {"name": "dice_agent"}}}
    got = _read(tmp_path, json.dumps(_export([agent, chat], resource={"service": {"name": "my-agent"}, "k8s": {"namespace": {"name": "prod"}}})))
    assert isinstance(got[0], Case), got
    assert (got[0].input, got[0].trace.output, got[0].trace.usage.input_tokens) == ("Hello", "Hi: Hello", 167)
    assert got[0].metadata["otel"]["turns"][0]["agents"] == ["dice_agent"]


def test_a_span_a_line_groups_by_trace_id_across_lines(tmp_path: Path) -> None:
    # agentevals tests/test_otlp_loader.py, test_otlp_loader_jsonl_format / _parent_child_relationships: JSON Lines of
    # bare spans, a trace's spans on several lines and out of order. Two traces interleaved are two cases by trace id.
    lines = [_chat("t2", "c2", "a2", 12, "Bye"), _chat(parent="a1"), _agent("t2", "a2", 11), _agent()]
    got = _read(tmp_path, "".join(json.dumps(s) + "\n" for s in lines), "spans.jsonl", group_by="trace")
    assert [(c.id, c.input) for c in got] == [("t1", "Hello"), ("t2", "Bye")]
    assert (got[0].metadata["otel"]["turns"][0]["agents"], got[1].metadata["otel"]["turns"][0]["agents"]) == (["dice_agent"], ["dice_agent"])


def test_export_documents_and_bare_spans_mix_in_one_file(tmp_path: Path) -> None:
    # agentevals src/agentevals/loader/otlp.py, decode_otlp_text: each line an export document or a span. The log
    # records of an export line attach to the bare spans they name.
    chat = _chat(parent="a1")
    chat["attributes"] = [a for a in chat["attributes"] if not a["key"].endswith(".messages")]
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"traceId": "t1", "spanId": "c1", "timeUnixNano": "1000000001", "eventName": "gen_ai.user.message",
         "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "Hello"}}]}}},
        {"traceId": "t1", "spanId": "c1", "timeUnixNano": "1000000002", "eventName": "gen_ai.choice",
         "body": {"kvlistValue": {"values": [{"key": "message", "value": {"kvlistValue": {"values": [
             {"key": "content", "value": {"stringValue": "Hi: Hello"}}]}}}]}}}]}]}]}
    text = "\n".join([json.dumps(_export([_agent()])), json.dumps(chat), json.dumps(logs)]) + "\n"
    got = _read(tmp_path, text, "mixed.jsonl")
    assert isinstance(got[0], Case) and len(got) == 1, got
    assert (got[0].input, got[0].trace.output) == ("Hello", "Hi: Hello")


def test_one_bare_span_or_an_array_of_them_is_a_file_of_spans(tmp_path: Path) -> None:
    # agentevals decode_otlp_text: "a single bare span or list of spans"; an empty list holds none.
    alone = _read(tmp_path, json.dumps(_chat()), "alone.json")
    assert isinstance(alone[0], Case) and alone[0].input == "Hello", alone
    array = _read(tmp_path, json.dumps([_chat(parent="a1"), _agent()]), "array.json")
    assert len(array) == 1 and array[0].metadata["otel"]["turns"][0]["agents"] == ["dice_agent"], array
    [(_, other)] = _read(tmp_path, json.dumps([_agent(), _export([_chat()])]), "two.json")  # an export in an array of spans is none
    assert "this JSON array holds spans, but its item [1] is not one" in other.message
    assert _read(tmp_path, "[]", "empty.json") == []  # no span: nothing to read, as `{"resourceSpans": []}`


def test_ids_in_base64_or_capitals_are_the_hex_ids_and_a_zero_parent_is_none(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # agentevals src/agentevals/otel/decode.py, normalize_id: hex lower-cased, base64 of 16 / 8 bytes to hex, zeros no id.
    trace, agent, chat = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174", "eee19b7ec3c1b173"
    b64 = lambda h: base64.b64encode(bytes.fromhex(h)).decode()  # noqa: E731
    root = {**_agent(trace.upper(), agent.upper()), "parentSpanId": "0" * 16}
    request = _chat(b64(trace), b64(chat), b64(agent))
    with caplog.at_level(logging.WARNING):
        got = _read(tmp_path, json.dumps(_export([root, request])), group_by="trace")
    assert [c.id for c in got] == [trace] and got[0].metadata["otel"]["turns"][0]["agents"] == ["dice_agent"], got
    assert not [r for r in caplog.records if "parent" in r.getMessage()], "a zero parent is no lost parent"


def test_what_is_neither_an_export_nor_spans_is_an_error_naming_its_line_or_field(tmp_path: Path) -> None:
    text = "\n".join([json.dumps(_agent()), json.dumps({"traceId": "t1", "id": "obs-1", "type": "GENERATION"}), json.dumps(_chat(parent="a1"))])
    got = _read(tmp_path, text + "\n", "spans.jsonl")
    errors = [g for g in got if not isinstance(g, Case)]
    assert len(got) == 2 and isinstance(got[1], Case) and got[1].input == "Hello", got
    assert errors[0][1].line == 2 and "or OTLP spans (objects with `traceId` and `spanId`" in errors[0][1].message  # a Langfuse observation
    mixed = _read(tmp_path, json.dumps([_chat(), {"role": "user"}]), "mixed.json")
    assert "its item [1] is not one" in mixed[0][1].message, mixed
    bad = _export([_chat()])
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = "gen_ai.operation.name=chat"
    refused = _read(tmp_path, json.dumps(bad), "bad.json")
    assert "resourceSpans[0].scopeSpans[0].spans[0].attributes must be a list of {key, value} or an object, got str" in refused[0][1].message
    # bare spans have no resourceSpans: their place is the one the file has, the line's span or the array's item
    span = {**_chat(), "attributes": "gen_ai.operation.name=chat"}
    lines = _read(tmp_path, json.dumps(_agent()) + "\n" + json.dumps(span) + "\n", "bare.jsonl")
    assert lines[0][1].line == 2 and lines[0][1].message.endswith(
        "not a valid OTLP/JSON export: the span's attributes must be a list of {key, value} or an object, got str"), lines
    array = _read(tmp_path, json.dumps([_agent(), span]), "bare.json")
    assert array[0][1].message.endswith("not a valid OTLP/JSON export: [1].attributes must be a list of {key, value} or an object, got str")


def test_tempo_batches_with_old_scope_keys_for_spans_and_logs(tmp_path: Path) -> None:
    # agentevals tests/test_otlp_loader.py, _tempo_v1_export (`batches`, `instrumentationLibrarySpans`); decode.py reads
    # `instrumentationLibraryLogs` too, and `batches` beside an empty `resourceSpans`.
    chat = _chat()
    chat["attributes"] = [a for a in chat["attributes"] if a["key"] != "gen_ai.input.messages"]
    record = {"traceId": "t1", "spanId": "c1", "timeUnixNano": "1000000001", "eventName": "gen_ai.user.message",
              "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "Hello"}}]}}}
    doc = {"resourceSpans": [], "batches": [{"resource": {"attributes": []}, "instrumentationLibrarySpans": [
        {"instrumentationLibrary": {"name": "opentelemetry.instrumentation.httpx"}, "spans": [chat]}]}],
        "resourceLogs": [{"instrumentationLibraryLogs": [{"logRecords": [record]}]}]}
    got = _read(tmp_path, json.dumps(doc))
    assert isinstance(got[0], Case) and got[0].input == "Hello", got


def test_a_lone_surrogate_in_an_object_attribute_reads_as_in_a_listed_one(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # An exporter cutting text mid-emoji writes half of a UTF-16 pair; a plain JSON value holds it as a stringValue does.
    from tracejudge.stages.extract.otel.spans import any_value, attributes  # (still importable where they were)
    from tracejudge.stages.extract.otel.values import flat_attributes

    mended: list[str] = []
    assert flat_attributes({"a": {"b": "x\ud83c", "c": ["y\ud83c", 1]}, "d": None}, mended) == {"a.b": "x\ufffd", "a.c": ["y\ufffd", 1], "d": None}
    assert mended == ["a.b", "a.c"] and attributes({"k": 1}) == {"k": 1} and any_value({"intValue": "2"}) == 2
    chat = _chat()
    chat["attributes"] = {**_flat(chat["attributes"]), "gen_ai.request.model": "gpt\ud83c"}
    with caplog.at_level(logging.WARNING):
        got = _read(tmp_path, json.dumps(_export([chat])))
    assert isinstance(got[0], Case), got
    assert any("gen_ai.request.model held a lone UTF-16 surrogate" in r.getMessage() for r in caplog.records)
