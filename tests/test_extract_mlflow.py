"""Format `mlflow`: traces written by the real MLflow tracing (`mlflow.openai.autolog`, `@mlflow.trace`).

The live test runs a small tool-calling loop: an `AGENT` function calls the
real OpenAI client (traced by `mlflow.openai.autolog`, its HTTP transport
answering with scripted completions), runs `TOOL` functions (one raises)
and a `RETRIEVER`, then writes `mlflow.get_trace(...).to_json()` as JSONL
and checks the extracted case field by field.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from framework_truth import assert_truth, extract, only_case, recording_id, recordings
from tracejudge.core.records import Case

mlflow = pytest.importorskip("mlflow")
import httpx  # noqa: E402
from openai import OpenAI  # noqa: E402

QUESTION = "Compare Paris and Tokyo, then cancel #W9."
ANSWER = "Paris is sunny, Tokyo rainy; #W9 was not found."


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


@pytest.fixture(scope="module")
def trace_line(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from mlflow.entities import Document, SpanType

    folder = tmp_path_factory.mktemp("mlflow")
    saved_env, saved_uri = os.environ.get("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"), mlflow.get_tracking_uri()
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"  # the trace is in the store when the run returns
    mlflow.set_tracking_uri(f"sqlite:///{folder / 'mlflow.db'}")
    mlflow.set_experiment("tracejudge")
    mlflow.openai.autolog()
    script = [
        {"role": "assistant", "content": None, "tool_calls": [_call("call_p", "get_weather", {"city": "Paris"}), _call("call_t", "get_weather", {"city": "Tokyo"})]},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_x", "cancel_order", {"order_id": "#W9"})]},
        {"role": "assistant", "content": ANSWER},
    ]

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                                         "choices": [{"index": 0, "finish_reason": "stop", "message": script.pop(0)}],
                                         "usage": {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}})

    client = OpenAI(api_key="test", base_url="http://model.invalid/v1", http_client=httpx.Client(transport=httpx.MockTransport(answer)))

    @mlflow.trace(span_type=SpanType.TOOL)
    def get_weather(city: str) -> str:
        return {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}[city]

    @mlflow.trace(span_type=SpanType.TOOL)
    def cancel_order(order_id: str) -> str:
        raise ValueError(f"order {order_id} not found")

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def search(query: str) -> list[Document]:
        return [Document(page_content="Orders can be cancelled within 24 hours.", metadata={"doc_uri": "policy.md", "chunk_id": "p1"})]

    tools = {"get_weather": get_weather, "cancel_order": cancel_order}

    @mlflow.trace(span_type=SpanType.AGENT)
    def agent(question: str) -> str:
        messages: list[Any] = [{"role": "user", "content": question}]
        search(question)
        while True:
            reply = client.chat.completions.create(model="m", messages=messages).choices[0].message
            if not reply.tool_calls:
                return reply.content
            messages.append(reply.model_dump(exclude_none=True))
            for tc in reply.tool_calls:
                try:
                    result = tools[tc.function.name](**json.loads(tc.function.arguments))
                except ValueError as exc:
                    result = f"Error: {exc}"
                messages.append({"role": "tool", "tool_call_id": tc.id, "content": result})

    agent(QUESTION)
    trace = mlflow.get_trace(mlflow.get_last_active_trace_id())
    mlflow.openai.autolog(disable=True)
    yield trace.to_json()
    mlflow.set_tracking_uri(saved_uri)
    if saved_env is None:
        os.environ.pop("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", None)
    else:
        os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = saved_env


def test_autologged_trace(tmp_path: Path, trace_line: str) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(trace_line + "\n")
    case = only_case(path, "mlflow")
    assert_truth(case, {"input": QUESTION, "output": ANSWER, "user_turns": [QUESTION],
                        "calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": "sunny, 21 C", "error": None},
                                  {"name": "get_weather", "arguments": {"city": "Tokyo"}, "result": "rainy, 14 C", "error": None},
                                  {"name": "cancel_order", "arguments": {"order_id": "#W9"}, "result": "Error: order #W9 not found",
                                   "error": "ValueError: order #W9 not found"}]})  # the result is the tool message the loop sent the model
    assert [c.id for c in case.trace.tool_calls()] == ["call_p", "call_t", "call_x"]
    assert [len(s.tool_calls) for s in case.trace.steps] == [2, 1, 0]
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (33, 12, 3) and usage.latency_s is not None
    assert [(p.id, p.content, p.source) for p in case.trace.retrieved] == [("p1", "Orders can be cancelled within 24 hours.", "policy.md")]
    assert case.id == json.loads(trace_line)["info"]["trace_id"] and case.metadata["mlflow"]["trace_name"] == "agent"


def test_malformed_traces_cost_one_record_each(tmp_path: Path, trace_line: str) -> None:
    record = json.loads(trace_line)
    record["data"]["spans"][1]["attributes"] = "oops"
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([trace_line, json.dumps({"info": {}}), json.dumps(record), "{"]) + "\n")
    results = extract(path, "mlflow")
    assert isinstance(results[0], Case)
    errors = [r[1] for r in results[1:]]
    assert [(e.kind, e.line, e.field) for e in errors] == [("invalid_input", 2, "data.spans"), ("invalid_input", 3, "data.spans[1].attributes"),
                                                           ("invalid_input", 4, None)]


RECORDED = recordings("mlflow", ".mlflow.jsonl")


@pytest.mark.skipif(not RECORDED, reason="no MLflow recordings in tests/data/frameworks/mlflow")
@pytest.mark.parametrize("export,truth", RECORDED, ids=[recording_id(r) for r in RECORDED])
def test_recorded_trace_matches_its_truth(export: Path, truth: dict[str, Any]) -> None:
    assert_truth(only_case(export, "mlflow"), truth)


def test_mlflow_2_span_shape(tmp_path: Path) -> None:
    # MLflow 2's Trace.to_json(): `request_id`, spans with `context`, `parent_id`, `start_time`, `status_code`.
    def span(sid: str, parent: str | None, start: int, kind: str, name: str, inputs: Any, outputs: Any, **extra: Any) -> dict[str, Any]:
        attrs = {"mlflow.spanType": json.dumps(kind), "mlflow.spanInputs": json.dumps(inputs)}
        if outputs is not None:
            attrs["mlflow.spanOutputs"] = json.dumps(outputs)
        return {"name": name, "context": {"span_id": sid, "trace_id": "0xabc"}, "parent_id": parent, "start_time": start, "end_time": start + 5,
                "status_code": "OK", "status_message": "", "attributes": attrs, "events": [], **extra}

    reply = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "cancel_order", "arguments": '{"order_id": "#W9"}'}}]}}]}
    record = {"info": {"request_id": "tr-2", "execution_time_ms": 40, "status": "OK"}, "data": {"spans": [
        span("0x1", None, 100, "AGENT", "agent", {"question": QUESTION}, ANSWER),
        span("0x2", "0x1", 110, "LLM", "chat", {"messages": [{"role": "user", "content": QUESTION}]}, reply),
        span("0x3", "0x1", 120, "TOOL", "cancel_order", {"order_id": "#W9"}, None, status_code="ERROR", status_message="order #W9 not found"),
    ]}}
    path = tmp_path / "v2.jsonl"
    path.write_text(json.dumps(record) + "\n")
    case = only_case(path, "mlflow")
    assert case.id == "tr-2" and case.input == QUESTION and case.trace.output == ANSWER and case.trace.usage.latency_s == 0.04
    (call,) = case.trace.tool_calls()
    assert (call.id, call.name, call.arguments, call.error) == ("c1", "cancel_order", {"order_id": "#W9"}, "order #W9 not found")


def _sequence_variant(tmp_path: Path, change: Any) -> Case:
    """The recorded `sequence` trace with `change(record)` applied, extracted."""
    record = json.loads((Path(__file__).parent / "data/frameworks/mlflow/sequence.mlflow.jsonl").read_text().splitlines()[0])
    change(record)
    path = tmp_path / "variant.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return only_case(path, "mlflow")


def test_without_model_spans_the_question_argument_is_the_input(tmp_path: Path) -> None:
    # The AGENT span recorded run(question=..., task="sequence", tools=...): the question, not the first string argument.
    truth = json.loads((Path(__file__).parent / "data/frameworks/mlflow/sequence.truth.json").read_text())

    def drop_models(record: dict[str, Any]) -> None:
        record["data"]["spans"] = [s for s in record["data"]["spans"] if "CHAT_MODEL" not in s["attributes"]["mlflow.spanType"]]

    case = _sequence_variant(tmp_path, drop_models)
    assert case.input == truth["input"] and [m.content for m in case.trace.user_messages] == [truth["input"]]
    assert [c.name for c in case.trace.tool_calls()] == [c["name"] for c in truth["calls"]] and case.trace.output == truth["output"]


def test_spans_whose_parent_is_missing_hang_from_the_root(tmp_path: Path) -> None:
    # A parent id that is not in the trace (a span lost on export) must not split the run into an extra user turn.
    truth = json.loads((Path(__file__).parent / "data/frameworks/mlflow/sequence.truth.json").read_text())

    def orphan(record: dict[str, Any]) -> None:
        for span in record["data"]["spans"]:
            if span["parent_span_id"]:
                span["parent_span_id"] = "AAAAAAAAAAA="

    assert_truth(_sequence_variant(tmp_path, orphan), truth)
