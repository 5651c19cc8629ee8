"""Format `otel` across span conventions, on small hand-made exports: one rule each.

The recordings of real frameworks are checked in `test_extract_framework_traces.py`;
these pin the rules those recordings cannot isolate (and the Vercel AI SDK,
a JavaScript library, whose attribute names come from its documentation).
"""

from __future__ import annotations

import json
from pathlib import Path

from test_extract_otel_cases import export, one, run, span
from tracejudge.core.records import Case
import _forkserver


def _oi_llm(sid: str, trace: str, start: int, inputs: list[tuple], outputs: list[tuple], parent: str | None = None) -> dict:
    """An OpenInference LLM span; messages are (role, content, [(call id, name, arguments json)], tool_call_id)."""
    attrs: dict = {"openinference__span__kind": "LLM"}
    for prefix, msgs in (("llm__input_messages", inputs), ("llm__output_messages", outputs)):
        for i, (role, content, calls, tcid) in enumerate(msgs):
            attrs[f"{prefix}__{i}__message__role"] = role
            if content is not None:
                attrs[f"{prefix}__{i}__message__content"] = content
            if tcid is not None:
                attrs[f"{prefix}__{i}__message__tool_call_id"] = tcid
            for j, (cid, name, args) in enumerate(calls):
                attrs[f"{prefix}__{i}__message__tool_calls__{j}__tool_call__id"] = cid
                attrs[f"{prefix}__{i}__message__tool_calls__{j}__tool_call__function__name"] = name
                attrs[f"{prefix}__{i}__message__tool_calls__{j}__tool_call__function__arguments"] = args
    return span(sid, parent, start, "ChatCompletion", trace=trace, **attrs)


def _plain_loop(prefix: str, question: str, city: str, start: int = 0, result: str = "sunny") -> list[dict]:
    """Phoenix's quick-start: an instrumented OpenAI client in a loop, one trace per request."""
    sys_msg = ("system", "You are helpful.", [], None)
    user = ("user", question, [], None)
    call = ("assistant", None, [(f"{prefix}c1", "get_weather", json.dumps({"city": city}))], None)
    tool = ("tool", result, [], f"{prefix}c1")
    answer = ("assistant", f"It is {result} in {city}.", [], None)
    return [
        _oi_llm(f"{prefix}1", f"{prefix}t1", start, [sys_msg, user], [call]),
        _oi_llm(f"{prefix}2", f"{prefix}t2", start + 10, [sys_msg, user, call, tool], [answer]),
    ]


def test_a_plain_instrumented_loop_is_one_conversation_with_its_calls(tmp_path: Path):
    case = one(tmp_path, export(_plain_loop("a", "Weather in Paris?", "Paris")))
    assert case.input == "Weather in Paris?" and case.trace.output == "It is sunny in Paris."
    [call] = case.trace.tool_calls()
    assert (call.name, call.arguments, call.result, call.error) == ("get_weather", {"city": "Paris"}, "sunny", None)
    assert case.metadata["otel"]["traces"] == ["at1", "at2"]
    assert [m.content for m in case.trace.user_messages] == ["Weather in Paris?"]


def test_repeated_trials_of_the_same_question_stay_apart(tmp_path: Path):
    """A second run with the same system prompt and question replays nothing of the first: two cases."""
    cases = run(tmp_path, export(_plain_loop("a", "Weather in Paris?", "Paris") + _plain_loop("b", "Weather in Paris?", "Paris", start=100, result="rainy")))
    assert len(cases) == 2 and all(isinstance(c, Case) for c in cases)
    assert [c.trace.tool_calls()[0].result for c in cases] == ["sunny", "rainy"]


def test_error_prefixes_fail_a_call_reported_as_text(tmp_path: Path):
    spans = _plain_loop("a", "Weather in Atlantis?", "Atlantis", result="Error: unknown city")
    assert one(tmp_path, export(spans)).trace.tool_calls()[0].error is None
    call = one(tmp_path, export(spans), error_prefixes=["Error:"]).trace.tool_calls()[0]
    assert call.error == "Error: unknown city" and call.result == "Error: unknown city"


def test_a_custom_span_naming_a_tool_is_not_a_call(tmp_path: Path):
    """pydantic-evals counts `running tool` / `execute_tool …` spans; a span that merely carries the attribute is not one."""
    spans = [
        span("r", None, 0, "agent run", gen_ai__operation__name="invoke_agent"),
        span("c", "r", 1, "audit log", gen_ai__tool__name="delete_account"),
        span("t", "r", 2, "running tool", gen_ai__tool__name="search", tool_arguments={"q": "x"}),
    ]
    assert [c.name for c in one(tmp_path, export(spans)).trace.tool_calls()] == ["search"]


def test_the_models_part_gives_arguments_the_tool_span_the_result(tmp_path: Path):
    """LangChain's one-argument tool records a bare string; the model's part says which parameter it was."""
    spans = [
        span("root", None, 0, "LangGraph", openinference__span__kind="CHAIN", input__value=json.dumps({"messages": [["user", "Weather in Rome?"]]})),
        _oi_llm("m1", "t1", 1, [("user", "Weather in Rome?", [], None)], [("assistant", None, [("c1", "get_weather", '{"city": "Rome"}')], None)], parent="root"),
        span("tool", "root", 2, "get_weather", openinference__span__kind="TOOL", tool__name="get_weather", input__value="Rome",
             output__value=json.dumps({"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"],
                                       "kwargs": {"content": "cloudy", "tool_call_id": "c1", "status": "success"}})),
        _oi_llm("m2", "t1", 3, [("user", "Weather in Rome?", [], None)], [("assistant", "Cloudy in Rome.", [], None)], parent="root"),
    ]
    for s in spans:
        s["traceId"] = "t1"
    case = one(tmp_path, export(spans))
    [call] = case.trace.tool_calls()
    assert (call.arguments, call.result, call.error) == ({"city": "Rome"}, "cloudy", None)
    assert case.trace.steps[0].tool_calls and case.trace.output == "Cloudy in Rome."


def test_vercel_ai_sdk_spans(tmp_path: Path):
    """Attribute names from the AI SDK's telemetry documentation (`ai.toolCall.*`, `ai.prompt.messages`, `ai.response.*`)."""
    msgs = [{"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]}]
    spans = [
        span("g", None, 0, "ai.generateText", ai__operationId="ai.generateText", ai__prompt=json.dumps({"prompt": "Weather in Oslo?"}), ai__response__text="Snowing in Oslo."),
        span("d1", "g", 1, "ai.generateText.doGenerate", ai__operationId="ai.generateText.doGenerate", ai__prompt__messages=json.dumps(msgs),
             ai__response__toolCalls=json.dumps([{"toolCallType": "function", "toolCallId": "k1", "toolName": "weather", "args": '{"city":"Oslo"}'}]),
             ai__usage__promptTokens=12, ai__usage__completionTokens=5),
        span("tc", "g", 2, "ai.toolCall", ai__operationId="ai.toolCall", ai__toolCall__name="weather", ai__toolCall__id="k1", ai__toolCall__args='{"city":"Oslo"}', ai__toolCall__result='"snow"'),
        span("d2", "g", 3, "ai.generateText.doGenerate", ai__operationId="ai.generateText.doGenerate", ai__prompt__messages=json.dumps(msgs), ai__response__text="Snowing in Oslo.",
             ai__usage__promptTokens=20, ai__usage__completionTokens=4),
    ]
    case = one(tmp_path, export(spans))
    [call] = case.trace.tool_calls()
    assert (call.id, call.name, call.arguments, call.result) == ("k1", "weather", {"city": "Oslo"}, "snow")
    assert case.input == "Weather in Oslo?" and case.trace.output == "Snowing in Oslo."
    assert (case.trace.usage.input_tokens, case.trace.usage.output_tokens, case.trace.usage.requests) == (32, 9, 2)
    assert case.metadata["otel"]["conventions"] == {"vercel-ai": {"used": 4, "ignored": 0}}


def test_retrieval_documents_become_passages(tmp_path: Path):
    spans = [
        span("r", None, 0, "rag", openinference__span__kind="CHAIN", input__value="What is the refund window?", output__value="Five days."),
        span("q", "r", 1, "retrieve", openinference__span__kind="RETRIEVER", retrieval__documents__0__document__id="doc-4",
             retrieval__documents__0__document__content="refund is issued within 5 days", retrieval__documents__0__document__score=0.82),
    ]
    case = one(tmp_path, export(spans))
    assert [(p.id, p.content, p.score) for p in case.trace.retrieved] == [("doc-4", "refund is issued within 5 days", 0.82)]
    assert case.input == "What is the refund window?" and case.trace.output == "Five days."


def test_a_malformed_export_in_a_folder_is_one_invalid_record(tmp_path: Path):
    """`scopeSpans` that is not a list (or a span that is not an object) costs that export, never the run."""
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "good.json").write_text(json.dumps(export(_plain_loop("a", "Weather in Paris?", "Paris"))))
    (folder / "bad1.json").write_text(json.dumps({"resourceSpans": [{"scopeSpans": "x"}]}))
    (folder / "bad2.json").write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [5]}]}]}))
    got = _folder(folder)
    cases = [g for g in got if isinstance(g, Case)]
    errors = sorted((e.file.rsplit("/", 1)[-1], e.message) for _, e in (g for g in got if not isinstance(g, Case)))
    assert len(cases) == 1 and cases[0].input == "Weather in Paris?"
    assert errors == [
        ("bad1.json", "not a valid OTLP/JSON export: resourceSpans[0].scopeSpans must be a list, got str"),
        ("bad2.json", "not a valid OTLP/JSON export: resourceSpans[0].scopeSpans[0].spans[0] must be an object, got int"),
    ]


def _folder(path: Path) -> list:
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig
    from tracejudge.stages.extract import extract_record

    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=path, format="otel", options={})
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


def test_extract_says_which_conventions_each_file_used(tmp_path: Path):
    """A user whose field comes out empty sees at once what tracejudge recognised in the file."""
    import subprocess
    import sys

    noise = span("h", "at1_root", 5, "GET /weather", trace="at1", http__method="GET")
    data = tmp_path / "spans.json"
    data.write_text(json.dumps(export([*_plain_loop("a", "Weather in Paris?", "Paris"), noise])))
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"dataset": {"path": str(data), "format": "otel"}, "metrics": [{"type": "MaxToolCalls", "max_calls": 5}]}))
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "extract", str(config), "-o", str(tmp_path / "cases.jsonl")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"{data}: spans by convention: openinference 2 used; 1 spans of no known convention ignored" in done.stderr
