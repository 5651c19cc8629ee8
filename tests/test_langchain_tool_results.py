"""LangChain / LangGraph tool results and errors, read from real recordings in `tests/data/langchain-tool-results/`.

Recorded by `tests/frameworks/record_langchain_results.py` (its docstring says what each scenario runs):

- MLflow's `mlflow.langchain.autolog()` records a ToolNode tool's output as the serialised `ToolMessage`:
  the call's result is its `content` (a dict a tool returned: the dict), in `mlflow` and `otel` alike.
- ToolNode answering an unknown tool name runs no tool (no tool span): the error `ToolMessage`'s
  `status: "error"` is on the graph's chain spans only, and it fails the call (OpenInference,
  OpenLLMetry, MLflow).
- OpenLLMetry's LangChain tool span invoked with plain arguments (`tool.invoke(args)` in a custom node)
  records `{"output": <value>, "kwargs": {…, "name": <tool>}}`: the result is the value, one level only.
- A payload of that shape is unwrapped only where the convention writes it and it names the span's tool.
- Langfuse's LangChain `CallbackHandler`: the same `ToolMessage` results, call ids written as JSON text, and
  LangGraph's node "agent" typed `agent` (a step of the graph, not an agent run splitting the turn).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record

DATA = Path(__file__).parent / "data" / "langchain-tool-results"
UNKNOWN = "Error: get_wether is not a valid tool, try one of [get_weather]."
LOOKALIKE = {"output": "inner", "kwargs": {"name": "echo_payload"}}  # echo_payload's genuine return value


def extract(path: Path, fmt_name: str = "otel") -> Case:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=path, format=fmt_name, options={})
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    return cases[0]


def calls(case: Case) -> list[tuple[str | None, str, Any, str | None]]:
    return [(c.id, c.name, c.result, c.error) for c in case.trace.tool_calls()]


def _otlp_rewrite(src: Path, dst: Path, span_name: str, edit: Any) -> None:
    """Copy OTLP/JSON `src` to `dst`, `edit(attributes)` applied to the attribute list of every span named `span_name`."""
    lines = []
    for line in src.read_text().splitlines():
        doc = json.loads(line)
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    if span["name"] == span_name:
                        span["attributes"] = edit(span["attributes"])
        lines.append(json.dumps(doc))
    dst.write_text("\n".join(lines) + "\n")


MLFLOW_FILES = [("mlflow-react.mlflow.jsonl", "mlflow"), ("mlflow-react.otlp.jsonl", "otel")]


@pytest.mark.parametrize(("name", "fmt"), MLFLOW_FILES)
def test_mlflow_langchain_tool_result_is_the_tool_message_content(name, fmt):
    case = extract(DATA / name, fmt)
    assert calls(case)[:2] == [("call_m1", "get_weather", "sunny, 21 C", None),
                               ("call_m2", "lookup_order", {"order_id": "#W1", "status": "shipped"}, None)]
    assert case.trace.output == "Paris is sunny; #W1 shipped."


@pytest.mark.parametrize(("name", "fmt"), [("oi-unknown-tool.jsonl", "otel"), ("tl-unknown-tool.jsonl", "otel")])
def test_unknown_tool_is_a_failed_call(name, fmt):
    # No tool span: the call is the model's part, its result the tool message; only the `tools` node's (and the
    # root's) output keeps the ToolMessage's `status: "error"`. The successful call beside it stays a success.
    assert calls(extract(DATA / name, fmt)) == [("call_u0", "get_wether", UNKNOWN, UNKNOWN), ("call_u1", "get_weather", "sunny, 21 C", None)]


@pytest.mark.parametrize(("name", "fmt"), MLFLOW_FILES)
def test_mlflow_unknown_tool_is_a_failed_call(name, fmt):
    text = "Error: get_wether is not a valid tool, try one of [get_weather, lookup_order]."
    assert calls(extract(DATA / name, fmt))[2] == ("call_m3", "get_wether", text, text)


def test_unknown_tool_needs_the_error_status(tmp_path):
    # The same run with the status the `tools` node recorded turned to success: the call is no failure (the
    # error comes from the recorded status, not from the text looking like one).
    path = tmp_path / "ok.jsonl"
    path.write_text((DATA / "oi-unknown-tool.jsonl").read_text().replace('\\"status\\": \\"error\\"', '\\"status\\": \\"success\\"'))
    assert calls(extract(path))[0] == ("call_u0", "get_wether", UNKNOWN, None)
    assert calls(extract(DATA / "oi-unknown-tool.jsonl"))[0][3] == UNKNOWN


def test_custom_node_tool_result_is_the_tools_value():
    # OpenLLMetry wraps every value in LangChain's callback payload; echo_payload's own value has that shape
    # too, and is kept: one level is removed.
    case = extract(DATA / "tl-custom-node.jsonl")
    assert calls(case) == [("call_c1", "search_flights", [{"flight_number": "HAT170", "price": 320}], None),
                           ("call_c2", "echo_payload", LOOKALIKE, None)]


def test_callback_payload_is_unwrapped_only_for_its_own_tool(tmp_path):
    wrapped = {"output": "[1]", "kwargs": {"tags": ["seq:step:1"], "color": "green", "name": "search_flights"}}

    def strip_traceloop(attrs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # the same span as a plain GenAI tool span (no OpenLLMetry keys): its result is the tool's own value
        return [a for a in attrs if not a["key"].startswith("traceloop.")]

    def other_name(attrs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # kwargs naming another tool: not LangChain's payload for this span
        out = []
        for a in attrs:
            if a["key"] in ("traceloop.entity.output", "gen_ai.tool.call.result"):
                a = {"key": a["key"], "value": {"stringValue": json.dumps({**wrapped, "kwargs": {**wrapped["kwargs"], "name": "other"}})}}
            out.append(a)
        return out

    def set_wrapped(attrs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"key": a["key"], "value": {"stringValue": json.dumps(wrapped)}} if a["key"] in ("traceloop.entity.output", "gen_ai.tool.call.result")
                else a for a in attrs]

    plain, other = tmp_path / "plain.jsonl", tmp_path / "other.jsonl"
    _otlp_rewrite(DATA / "tl-custom-node.jsonl", plain, "execute_tool search_flights", lambda attrs: strip_traceloop(set_wrapped(attrs)))
    _otlp_rewrite(DATA / "tl-custom-node.jsonl", other, "execute_tool search_flights", other_name)
    assert calls(extract(plain))[0][2] == wrapped
    assert calls(extract(other))[0][2] == {**wrapped, "kwargs": {**wrapped["kwargs"], "name": "other"}}
    assert calls(extract(DATA / "tl-custom-node.jsonl"))[0][2] == [{"flight_number": "HAT170", "price": 320}]


def test_mlflow_unwraps_only_a_message_of_its_own_call(tmp_path):
    # A TOOL span's output shaped like another tool's ToolMessage (other name, other call id) is the tool's own value.
    src = DATA / "mlflow-react.mlflow.jsonl"
    doc = json.loads(src.read_text())
    for span in doc["data"]["spans"]:
        if span["name"] == "get_weather":
            out = json.loads(span["attributes"]["mlflow.spanOutputs"])
            span["attributes"]["mlflow.spanOutputs"] = json.dumps({**out, "name": "other", "tool_call_id": "call_other"})
    path = tmp_path / "other.mlflow.jsonl"
    path.write_text(json.dumps(doc) + "\n")
    result = calls(extract(path, "mlflow"))[0][2]
    assert isinstance(result, dict) and result["name"] == "other" and result["content"] == "sunny, 21 C"
    assert calls(extract(src, "mlflow"))[0][2] == "sunny, 21 C"


def test_langfuse_langchain_calls_pair_with_the_models_and_read_their_content():
    # Before: each tool span was a call of its own (its id `"call_m1"` with the quotes, in a step apart from the
    # model's), its result the ToolMessage; the model's parts were calls again.
    case = extract(DATA / "langfuse-react.jsonl")
    text = "Error: get_wether is not a valid tool, try one of [get_weather, lookup_order]."
    assert calls(case) == [("call_m1", "get_weather", "sunny, 21 C", None), ("call_m2", "lookup_order", {"order_id": "#W1", "status": "shipped"}, None),
                           ("call_m3", "get_wether", text, text)]
    assert [len(s.tool_calls or []) for s in case.trace.steps] == [3, 0]
    assert case.trace.output == "Paris is sunny; #W1 shipped."
