"""Format `otel` on small hand-made OTLP/JSON exports, one awkward case each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}  # OTLP/JSON encodes 64-bit ints as strings
    elif isinstance(value, float):
        v = {"doubleValue": value}
    elif isinstance(value, (dict, list)):
        v = {"stringValue": json.dumps(value)}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def span(sid: str, parent: str | None, start: int, name: str = "", trace: str = "t1", status: dict | None = None, kind: int = 1, **attrs: Any) -> dict[str, Any]:
    out = {"traceId": trace, "spanId": sid, "name": name, "kind": kind,
           "startTimeUnixNano": str(1_000_000 + start * 1000), "endTimeUnixNano": str(1_000_000 + start * 1000 + 500),
           "attributes": [_attr(k.replace("__", "."), v) for k, v in attrs.items()]}
    if parent:
        out["parentSpanId"] = parent
    if status:
        out["status"] = status
    return out


def export(spans: list[dict], logs: list[dict] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "svc")]}, "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    if logs:
        doc["resourceLogs"] = [{"scopeLogs": [{"logRecords": logs}]}]
    return doc


def run(tmp_path: Path, docs: list[dict] | dict, name: str = "trace.json", **options) -> list[Any]:
    path = tmp_path / name
    if isinstance(docs, list):
        path.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    else:
        path.write_text(json.dumps(docs))
    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=path, format="otel", options=options)
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


def one(tmp_path: Path, doc: dict, **options) -> Case:
    got = run(tmp_path, doc, **options)
    assert len(got) == 1 and isinstance(got[0], Case), got
    return got[0]


OP = "gen_ai__operation__name"
TOOL = "gen_ai__tool__name"
ARGS = "gen_ai__tool__call__arguments"
RES = "gen_ai__tool__call__result"
OUT = "gen_ai__output__messages"
IN = "gen_ai__input__messages"


def chat(sid, parent, start, text=None, calls=(), user=None, tin=0, tout=0, **kw):
    parts = ([{"type": "text", "content": text}] if text else []) + [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    attrs = {OP: "chat", "gen_ai__usage__input_tokens": tin, "gen_ai__usage__output_tokens": tout, OUT: [{"role": "assistant", "parts": parts}], **kw}
    if user:
        attrs[IN] = [{"role": "user", "parts": [{"type": "text", "content": user}]}]
    return span(sid, parent, start, "chat m", **attrs)


def test_spans_out_of_order_with_string_ints(tmp_path: Path):
    spans = [
        chat("c2", "a", 30, text="It is sunny.", user="weather?", tin=40, tout=6),
        span("t1", "a", 20, "execute_tool get_weather", **{OP: "execute_tool", TOOL: "get_weather", ARGS: '{"city": "Paris"}', RES: '{"temp_c": 21}', "gen_ai__tool__call__id": "call_1"}),
        span("a", None, 0, "invoke_agent w", **{OP: "invoke_agent", "gen_ai__agent__name": "w"}),
        chat("c1", "a", 10, calls=[("call_1", "get_weather", {"city": "Paris"})], user="weather?", tin=20, tout=5),
    ]
    case = one(tmp_path, export(spans))
    assert [(c.name, c.arguments, c.result) for c in case.trace.tool_calls()] == [("get_weather", {"city": "Paris"}, {"temp_c": 21})]
    assert [len(s.tool_calls) for s in case.trace.steps] == [1, 0]
    assert case.trace.output == "It is sunny."
    assert (case.trace.usage.input_tokens, case.trace.usage.output_tokens, case.trace.usage.requests) == (60, 11, 2)
    assert case.id == "t1" and case.metadata["otel"]["group_key"] == "trace_id"


def test_status_error_is_a_failed_call(tmp_path: Path):
    spans = [span("a", None, 0, **{OP: "invoke_agent"}),
             span("t", "a", 1, "execute_tool f", status={"code": "STATUS_CODE_ERROR", "message": "boom"}, **{OP: "execute_tool", TOOL: "f", "error__type": "RuntimeError"}),
             span("u", "a", 2, "execute_tool g", status={"code": 1}, **{OP: "execute_tool", TOOL: "g"})]
    calls = one(tmp_path, export(spans)).trace.tool_calls()
    assert [(c.name, c.error) for c in calls] == [("f", "RuntimeError: boom"), ("g", None)]
    assert all(c.arguments_missing and c.arguments == {} for c in calls)


def test_mcp_client_with_nested_server_span_is_one_call(tmp_path: Path):
    spans = [span("a", None, 0, **{OP: "invoke_agent"}),
             span("cl", "a", 1, "tools/call f", kind=3, **{OP: "execute_tool", TOOL: "f", "mcp__method__name": "tools/call"}),
             span("sv", "cl", 2, "tools/call f", kind=2, **{OP: "execute_tool", TOOL: "f", ARGS: '{"x": 1}', RES: '{"ok": true}'})]
    calls = one(tmp_path, export(spans)).trace.tool_calls()
    assert [(c.name, c.arguments, c.result) for c in calls] == [("f", {"x": 1}, {"ok": True})]


def test_adk_parallel_wrapper_is_not_a_call_but_its_children_are(tmp_path: Path):
    spans = [span("a", None, 0, **{OP: "invoke_agent"}),
             span("w", "a", 1, "execute_tool (merged)", **{OP: "execute_tool", TOOL: "(merged tools)", "gcp__vertex__agent__tool_call_args": "N/A"}),
             span("x", "w", 2, **{OP: "execute_tool", TOOL: "f", "gcp__vertex__agent__tool_call_args": '{"n": 1}', "gcp__vertex__agent__tool_response": '{"result": 5}'}),
             span("y", "w", 3, **{OP: "execute_tool", TOOL: "f", "gcp__vertex__agent__tool_call_args": '{"n": 2}', "gcp__vertex__agent__tool_response": '{"result": "<not specified>"}'})]
    calls = one(tmp_path, export(spans)).trace.tool_calls()
    assert [(c.name, c.arguments, c.result) for c in calls] == [("f", {"n": 1}, 5), ("f", {"n": 2}, None)]


def test_unknown_span_kinds_and_noise_are_ignored(tmp_path: Path):
    spans = [span("h", None, 0, "HTTP POST", **{"http__request__method": "POST"}),
             span("a", "h", 1, **{OP: "invoke_agent"}),
             span("e", "a", 2, "embeddings", **{OP: "embeddings", "gen_ai__usage__input_tokens": 999}),
             span("z", "a", 3, "something new", **{OP: "future_operation"}),
             span("t", "a", 4, **{OP: "execute_tool", TOOL: "f"})]
    case = one(tmp_path, export(spans))
    assert [c.name for c in case.trace.tool_calls()] == ["f"]
    assert case.trace.usage.input_tokens == 0 and case.trace.usage.requests == 0


def test_handoff_tool_call_part_without_span_is_a_call(tmp_path: Path):
    spans = [span("a", None, 0, **{OP: "invoke_agent", "gen_ai__agent__name": "triage"}),
             chat("c", "a", 1, calls=[("h1", "transfer_to_billing", {})], user="refund")]
    calls = one(tmp_path, export(spans)).trace.tool_calls()
    assert [(c.id, c.name, c.arguments, c.arguments_missing, c.result) for c in calls] == [("h1", "transfer_to_billing", {}, False, None)]


def test_invalid_json_arguments_are_kept_raw_and_flagged(tmp_path: Path):
    spans = [span("a", None, 0, **{OP: "invoke_agent"}), span("t", "a", 1, **{OP: "execute_tool", TOOL: "f", ARGS: "{city: Paris"})]
    call = one(tmp_path, export(spans)).trace.tool_calls()[0]
    assert call.arguments == "{city: Paris" and call.arguments_invalid


def test_custom_argument_and_result_keys(tmp_path: Path):
    spans = [span("t", None, 0, **{OP: "execute_tool", TOOL: "f", "my__args": '{"a": 1}', "my__out": "[1]"})]
    call = one(tmp_path, export(spans), argument_keys=["my.args"], result_keys=["my.out"]).trace.tool_calls()[0]
    assert (call.arguments, call.result) == ({"a": 1}, [1])


def test_log_event_mode_fills_messages_from_logs(tmp_path: Path):
    spans = [span("a", None, 0, **{OP: "invoke_agent"}),
             span("c", "a", 1, "chat", **{OP: "chat", "gen_ai__usage__input_tokens": 7}),
             span("t", "a", 2, **{OP: "execute_tool", TOOL: "lookup"})]
    logs = [{"traceId": "t1", "spanId": "c", "timeUnixNano": "1000001", "eventName": "gen_ai.user.message",
             "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "find x"}}]}}},
            {"traceId": "t1", "spanId": "c", "timeUnixNano": "1000002", "eventName": "gen_ai.choice",
             "body": {"kvlistValue": {"values": [{"key": "index", "value": {"intValue": "0"}}, {"key": "message", "value": {"kvlistValue": {"values": [
                 {"key": "role", "value": {"stringValue": "assistant"}},
                 {"key": "tool_calls", "value": {"arrayValue": {"values": [{"kvlistValue": {"values": [
                     {"key": "id", "value": {"stringValue": "k1"}},
                     {"key": "function", "value": {"kvlistValue": {"values": [{"key": "name", "value": {"stringValue": "lookup"}},
                                                                               {"key": "arguments", "value": {"stringValue": "{\"q\": \"x\"}"}}]}}}]}}]}}}]}}}]}}}]
    case = one(tmp_path, export(spans, logs))
    assert case.input == "find x"
    assert [(c.name, c.arguments) for c in case.trace.tool_calls()] == [("lookup", {"q": "x"})]
    assert case.trace.usage.input_tokens == 7


def test_export_with_logs_delivered_twice_reads_spans_and_events_once(tmp_path: Path):
    spans = [span("a", None, 0, **{OP: "invoke_agent"}),
             span("c", "a", 1, "chat", **{OP: "chat", "gen_ai__usage__input_tokens": 7})]
    logs = [{"traceId": "t1", "spanId": "c", "timeUnixNano": "1000001", "eventName": "gen_ai.user.message",
             "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "find x"}}]}}},
            {"traceId": "t1", "spanId": "c", "timeUnixNano": "1000002", "eventName": "gen_ai.choice",
             "body": {"kvlistValue": {"values": [{"key": "index", "value": {"intValue": "0"}}, {"key": "message", "value": {"kvlistValue": {"values": [
                 {"key": "role", "value": {"stringValue": "assistant"}}, {"key": "content", "value": {"stringValue": "found"}}]}}}]}}}]
    case = one(tmp_path, [export(spans, logs)] * 2, name="trace.jsonl")  # an exporter's retry
    assert (case.input, case.trace.output) == ("find x", "found")
    assert [m.content for m in case.trace.user_messages] == ["find x"]
    assert (case.trace.usage.input_tokens, case.trace.usage.requests) == (7, 1)


def test_group_by_conversation_across_traces_and_files(tmp_path: Path):
    d1 = export([span("a1", None, 0, trace="t1", **{OP: "invoke_agent", "gen_ai__conversation__id": "conv"}), chat("c1", "a1", 1, text="hi", user="one", trace="t1")])
    d2 = export([span("a2", None, 10, trace="t2", **{OP: "invoke_agent", "gen_ai__conversation__id": "conv"}), chat("c2", "a2", 11, text="bye", user="two", trace="t2")])
    d3 = export([span("a3", None, 5, trace="t3", **{OP: "invoke_agent", "session__id": "other"})])
    got = run(tmp_path, [d2, d1, d3], name="export.jsonl")
    assert [c.id for c in got] == ["conv", "other"]
    assert (got[0].input, got[0].turns, got[0].trace.output) == ("one", ["two"], "bye")
    by_attr = run(tmp_path, [d2, d1, d3], name="export.jsonl", group_by=["session.id"])
    assert sorted(c.id for c in by_attr) == ["other", "t1", "t2"]


def test_bad_span_is_invalid_input_naming_the_span(tmp_path: Path):
    bad = span("deadbeef", "a", 1, **{OP: "execute_tool", TOOL: "f"})
    bad["startTimeUnixNano"] = "yesterday"
    ok = export([span("b", None, 0, trace="t2", **{OP: "execute_tool", TOOL: "g"})])
    got = run(tmp_path, [export([span("a", None, 0, **{OP: "invoke_agent"}), bad]), ok], name="x.jsonl")
    (cid, err), good = got
    assert cid == "t1" and err.kind == "invalid_input" and err.line == 1 and err.file.endswith("x.jsonl")
    assert err.field == "span deadbeef" and "startTimeUnixNano" in err.message
    assert isinstance(good, Case) and good.id == "t2"


@pytest.mark.parametrize(
    "text,line,message",
    [('{"resourceSpans": [', 1, "invalid JSON"), ('{"spans": []}', 1, "not an OTLP/JSON export"), ('{"resourceSpans": []}\n{oops}\n', 2, "invalid JSON")],
)
def test_unreadable_exports_are_invalid_input(tmp_path: Path, text: str, line: int, message: str):
    path = tmp_path / "e.json"
    path.write_text(text)
    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=path, format="otel")
    got = [extract_record(raw, fmt, None) for raw in fmt.read(ds)]
    (cid, err), = got
    assert (err.kind, err.line) == ("invalid_input", line) and message in err.message


def test_a_link_to_a_missing_file_in_a_folder_is_invalid_input_naming_it(tmp_path: Path):
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(export([span("a", None, 0, **{OP: "execute_tool", TOOL: "f"})])))
    for name in ("b.json", "c.jsonl"):
        (folder / name).symlink_to(tmp_path / "gone" / name)
    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=folder, format="otel")
    got = [extract_record(raw, fmt, fmt.prepare(ds)) for raw in fmt.read(ds)]
    bad = sorted((err.file, err.line, err.message) for _, err in (g for g in got if not isinstance(g, Case)))
    assert [(Path(f).name, line) for f, line, _ in bad] == [("b.json", 1), ("c.jsonl", 1)]
    assert all("cannot read the file" in m and "target is missing" in m for _, _, m in bad)
    assert sum(isinstance(g, Case) for g in got) == 1


RECORDINGS = Path(__file__).resolve().parent / "data" / "frameworks"


def _lose_parents(line: str) -> dict:
    """An OTLP export line with every span's parent pointing at a span the export lost."""
    doc = json.loads(line)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                if span.get("parentSpanId"):
                    span["parentSpanId"] = "AAAAAAAAAAAAAAAA"
    return doc


def _what_counts(case: Case) -> tuple:
    trace = case.trace
    assert trace is not None
    return (case.input, [u.content for u in trace.user_messages], [(c.name, json.dumps(c.arguments, sort_keys=True)) for c in trace.tool_calls()],
            trace.output, len(case.turns or []))


@pytest.mark.parametrize("framework", ["openinference-openai-agents", "openinference-langchain", "openinference-smolagents",
                                       "openinference-openai", "traceloop-langchain", "traceloop-openai"])
def test_spans_whose_parents_were_lost_hang_from_the_traces_root(tmp_path: Path, framework: str) -> None:
    # Each lost-parent span started a turn of its own: the Agents SDK recording lost its input, and LangGraph's node
    # inputs and smolagents' step reprs became user messages the user never sent ('tool_call_with_context', 'ActionStep(…').
    for recording in sorted((RECORDINGS / framework).glob("*.jsonl")):
        lines = recording.read_text().splitlines()
        (tmp_path / "whole.jsonl").write_text("\n".join(lines) + "\n")
        whole = run(tmp_path, [json.loads(line) for line in lines], name="whole.jsonl")
        lost = run(tmp_path, [_lose_parents(line) for line in lines], name="lost.jsonl")
        assert all(isinstance(c, Case) for c in whole + lost), (recording.name, lost)
        assert [_what_counts(c) for c in lost] == [_what_counts(c) for c in whole], recording.name


def test_a_blank_conversation_key_is_none_and_one_with_a_space_at_its_end_is_another_conversation(tmp_path: Path):
    # The SDKs group by the exact text: `thread-1 ` is a conversation of its own, its id quoted to show it (as formats
    # openai-agents, langfuse and mlflow name theirs); a blank key names no conversation: its trace is a case of its own.
    def turn(n: int, key: str) -> dict:
        t = f"t{n}"
        return export([span(f"a{n}", None, 10 * n, trace=t, **{OP: "invoke_agent", "gen_ai__conversation__id": key}),
                       chat(f"c{n}", f"a{n}", 10 * n + 1, text=f"answer {n}", user=f"ask {n}", trace=t)])

    got = run(tmp_path, [turn(1, "thread-1"), turn(2, "thread-1 "), turn(3, "thread-1"), turn(4, "   ")], name="export.jsonl")
    assert [c.id for c in got] == ["thread-1", '"thread-1 "', "t4"]
    assert (got[0].input, got[0].turns) == ("ask 1", ["ask 3"]) and got[1].input == "ask 2"
    assert got[1].metadata["otel"]["traces"] == ["t2"]
