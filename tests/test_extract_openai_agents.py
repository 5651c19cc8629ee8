"""Format `openai-agents`: traces exported by the real OpenAI Agents SDK's tracing.

Live tests run a real `Agent` through `Runner.run` with the SDK's own
Chat Completions / Responses models over a real `AsyncOpenAI` client whose
HTTP transport answers with scripted completions (no network), collect
`Trace.export()` / `Span.export()` with a `TracingProcessor`, and check the
extracted case field by field, in both framings (one trace per line, and a
stream of items grouped by trace id).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import assert_truth, extract, only_case, recording_id, recordings
from tracejudge.core.records import Case

agents = pytest.importorskip("agents")
import httpx  # noqa: E402
from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool, set_trace_processors  # noqa: E402
from agents.tracing import TracingProcessor  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402


class Collect(TracingProcessor):
    """Keeps every exported trace and span, in the order the SDK hands them over."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def on_trace_start(self, trace: Any) -> None:
        self.items.append(trace.export())  # as the SDK's batch exporter does: traces go out when they start

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        self.items.append(span.export())

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}[city]


@function_tool
def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    raise ValueError(f"order {order_id} not found")


def _chat(messages: list[dict[str, Any]]) -> httpx.MockTransport:
    script = list(messages)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                                         "choices": [{"index": 0, "finish_reason": "stop", "message": script.pop(0)}],
                                         "usage": {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}})
    return httpx.MockTransport(answer)


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _run(transport: httpx.MockTransport, question: str, responses: bool = False) -> list[dict[str, Any]]:
    collect = Collect()
    set_trace_processors([collect])
    client = AsyncOpenAI(api_key="test", base_url="http://model.invalid/v1", http_client=httpx.AsyncClient(transport=transport))
    model = OpenAIResponsesModel("m", client) if responses else OpenAIChatCompletionsModel("m", client)
    agent = Agent(name="helper", instructions="Help.", tools=[get_weather, cancel_order], model=model)
    asyncio.run(Runner.run(agent, question))
    return collect.items


@pytest.fixture(scope="module")
def chat_items() -> list[dict[str, Any]]:
    return _run(_chat([
        {"role": "assistant", "content": None, "tool_calls": [_call("call_p", "get_weather", {"city": "Paris"}), _call("call_t", "get_weather", {"city": "Tokyo"})]},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_x", "cancel_order", {"order_id": "#W9"})]},
        {"role": "assistant", "content": "Paris is sunny, Tokyo rainy; order #W9 was not found."},
    ]), "Compare Paris and Tokyo, then cancel #W9.")


TRUTH = {
    "input": "Compare Paris and Tokyo, then cancel #W9.",
    "output": "Paris is sunny, Tokyo rainy; order #W9 was not found.",
    "user_turns": ["Compare Paris and Tokyo, then cancel #W9."],
    "calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": "sunny, 21 C", "error": None},
              {"name": "get_weather", "arguments": {"city": "Tokyo"}, "result": "rainy, 14 C", "error": None},
              {"name": "cancel_order", "arguments": {"order_id": "#W9"}}],
}


def _bundle(items: list[dict[str, Any]]) -> dict[str, Any]:
    trace = next(i for i in items if i["object"] == "trace")
    return {"trace": trace, "spans": [i for i in items if i["object"] == "trace.span"]}


def test_one_trace_per_line(tmp_path: Path, chat_items: list[dict[str, Any]]) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(_bundle(chat_items)) + "\n")
    case = only_case(path, "openai-agents")
    assert_truth(case, TRUTH)
    calls = case.trace.tool_calls()
    assert [c.id for c in calls] == ["call_p", "call_t", "call_x"]
    assert calls[2].failed and calls[2].error.startswith("Error running tool")
    assert [len(s.tool_calls) for s in case.trace.steps] == [2, 1, 0]
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (33, 12, 3)
    info = case.metadata["openai_agents"]
    assert info["workflow_name"] == "Agent workflow" and info["agents"][0]["name"] == "helper"
    assert info["agents"][0]["tools"] == ["get_weather", "cancel_order"]
    assert case.id == _bundle(chat_items)["trace"]["id"]


def test_a_stream_of_items_and_batches_is_grouped_by_trace(tmp_path: Path, chat_items: list[dict[str, Any]]) -> None:
    other = _run(_chat([{"role": "assistant", "content": "Hello."}]), "Hi")
    # Interleave the two traces, half as single items, half as the exporter's {"data": [...]} batches.
    lines = []
    for k, (a, b) in enumerate(zip(chat_items, other + [None] * len(chat_items))):
        lines.append(json.dumps({"data": [a, b]} if b and k % 2 else a))
        if b and not k % 2:
            lines.append(json.dumps(b))
    path = tmp_path / "stream.jsonl"
    path.write_text("\n".join(lines) + "\n")
    cases = extract(path, "openai-agents")
    assert all(isinstance(c, Case) for c in cases) and len(cases) == 2
    by_input = {c.input: c for c in cases}
    assert_truth(by_input[TRUTH["input"]], TRUTH)
    hi = by_input["Hi"]
    assert hi.trace.output == "Hello." and hi.trace.tool_calls() == []


def test_an_item_for_a_closed_trace_is_one_invalid_record(tmp_path: Path, chat_items: list[dict[str, Any]]) -> None:
    other = _run(_chat([{"role": "assistant", "content": "Hello."}]), "Hi")
    lines = [json.dumps(i) for i in chat_items[:2]] + [json.dumps(i) for i in other] + [json.dumps(i) for i in chat_items[2:]]
    path = tmp_path / "stream.jsonl"
    path.write_text("\n".join(lines) + "\n")
    results = extract(path, "openai-agents", max_open_traces=1)
    bad = [r for r in results if not isinstance(r, Case)]
    assert len(bad) == len(chat_items) - 2
    assert bad[0][1].kind == "invalid_input" and bad[0][1].line == 2 + len(other) + 1 and "max_open_traces" in bad[0][1].message
    assert sum(isinstance(r, Case) for r in results) == 2  # the first trace (cut short) and the second


def test_responses_model_spans_give_calls_and_usage(tmp_path: Path) -> None:
    outputs = [[{"type": "function_call", "id": "fc1", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}', "status": "completed"}],
               [{"type": "message", "id": "m1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}]}]]

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": f"resp_{len(outputs)}", "object": "response", "created_at": 0, "model": "m", "status": "completed",
                                         "output": outputs.pop(0), "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                                         "usage": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10,
                                                   "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}})
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in _run(httpx.MockTransport(answer), "Weather in Paris?", responses=True)))
    case = only_case(path, "openai-agents")
    (call,) = case.trace.tool_calls()
    assert (call.name, call.arguments, call.result, call.error) == ("get_weather", {"city": "Paris"}, "sunny, 21 C", None)
    assert (case.trace.usage.input_tokens, case.trace.usage.output_tokens, case.trace.usage.requests) == (14, 6, 2)
    assert case.input is None and case.trace.output is None  # the SDK's response spans keep neither


def test_malformed_items_cost_one_record_each(tmp_path: Path, chat_items: list[dict[str, Any]]) -> None:
    bundle = _bundle(chat_items)
    broken = {"trace": bundle["trace"], "spans": [{"id": "s", "span_data": {"name": "x"}}]}
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([json.dumps(bundle), "[1, 2", json.dumps({"object": "other"}), json.dumps(broken)]) + "\n")
    results = extract(path, "openai-agents")
    assert [type(r) for r in results].count(Case) == 1  # (the chat trace comes out once the file is read: a later one may go on it)
    errors = sorted((r[1] for r in results if not isinstance(r, Case)), key=lambda e: e.line)
    assert [(e.kind, e.line) for e in errors] == [("invalid_input", 2), ("invalid_input", 3), ("invalid_input", 4)]
    assert errors[2].field == "spans[0].span_data.type"


RECORDED = recordings("openai-agents-export")


@pytest.mark.skipif(not RECORDED, reason="no Agents SDK recordings in tests/data/frameworks/openai-agents-export")
@pytest.mark.parametrize("export,truth", RECORDED, ids=[recording_id(r) for r in RECORDED])
def test_recorded_trace_matches_its_truth(export: Path, truth: dict[str, Any]) -> None:
    assert_truth(only_case(export, "openai-agents"), truth)


def test_a_long_item_stream_is_read_in_flat_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracemalloc
    from types import SimpleNamespace

    from tracejudge.stages.extract import openai_agents

    monkeypatch.setattr(openai_agents, "_CLOSED_KEPT", 100)
    path = tmp_path / "big.jsonl"
    with path.open("w") as fh:
        for t in range(3000):
            tid = f"trace_{t:08d}"
            fh.write(json.dumps({"object": "trace", "id": tid}) + "\n")
            for k in range(3):
                fh.write(json.dumps({"object": "trace.span", "id": f"s{k}", "trace_id": tid, "started_at": f"2026-01-01T00:00:0{k}+00:00",
                                     "span_data": {"type": "function", "name": "f", "input": json.dumps({"x": "y" * 200}), "output": "z" * 300}}) + "\n")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        count = sum(1 for _ in openai_agents.read(SimpleNamespace(path=path, options={"max_open_traces": 20}, limit=None)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 3000
    assert peak < size / 5, (peak, size)  # 20 open traces and 100 closed ids, not the file


def test_a_handoff_is_a_call_and_is_listed_in_metadata(tmp_path: Path) -> None:
    collect = Collect()
    set_trace_processors([collect])
    transport = _chat([
        {"role": "assistant", "content": None, "tool_calls": [_call("call_h", "transfer_to_billing", {})]},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_w", "get_weather", {"city": "Paris"})]},
        {"role": "assistant", "content": "Sunny in Paris."},
    ])
    client = AsyncOpenAI(api_key="test", base_url="http://model.invalid/v1", http_client=httpx.AsyncClient(transport=transport))
    billing = Agent(name="billing", instructions="Bill.", tools=[get_weather], model=OpenAIChatCompletionsModel("m", client))
    triage = Agent(name="triage", instructions="Route.", handoffs=[billing], model=OpenAIChatCompletionsModel("m", client))
    asyncio.run(Runner.run(triage, "Weather in Paris?"))
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in collect.items))
    case = only_case(path, "openai-agents")
    assert [(c.id, c.name, c.arguments) for c in case.trace.tool_calls()] == [("call_h", "transfer_to_billing", {}), ("call_w", "get_weather", {"city": "Paris"})]
    assert case.trace.tool_calls()[0].result == json.dumps({"assistant": "billing"})  # the SDK's tool message to the model
    assert case.trace.tool_calls()[1].result == "sunny, 21 C" and case.trace.output == "Sunny in Paris."
    info = case.metadata["openai_agents"]
    assert info["handoffs"] == [{"from_agent": "triage", "to_agent": "billing"}] and [a["name"] for a in info["agents"]] == ["triage", "billing"]
