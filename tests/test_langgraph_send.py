"""A LangGraph run that fans out to agent runs with `Send`, read from real recordings in `tests/data/langgraph-send/`.

Recorded by `tests/frameworks/record_langgraph_send.py` (its docstring says what runs): a graph whose state holds no
messages, invoked once with `{"cities": ["Paris", "Tokyo"], "reports": []}`, sends each city to a node `research` that
invokes a `create_react_agent` ("Weather in <city>?": one `get_weather` call, then the answer); the two nodes run at
once, then `summarise` (no model) adds the joined reports. Under OpenInference, OpenLLMetry, Langfuse (its OTLP and the
API's JSON) and MLflow (its trace JSON and its OTLP copy) this is one run, one turn: its input the state the graph was
invoked with, as JSON text (before: OpenLLMetry, Langfuse and MLflow read each `research` node's input, `{"city":
"Paris"}`, as a user's request, two turns "Paris" and "Tokyo"; OpenInference the first model request's question), its
steps the four model requests, its calls both agents', and its output the last model text (the state holds no message
to answer with).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "langgraph-send"
# (recording, format, scenario whose truth it holds)
READINGS = [("oi-send.jsonl", "otel", "oi-send"), ("tl-send.jsonl", "otel", "tl-send"), ("lf-send.jsonl", "otel", "lf-send"),
            ("lf-send.api.json", "langfuse", "lf-send"), ("ml-send.mlflow.jsonl", "mlflow", "ml-send"), ("ml-send.otlp.jsonl", "otel", "ml-send")]


def extract(name: str, fmt: str, **options: Any) -> list[Case]:
    cases = extract_path(DATA / name, fmt, options)
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


@pytest.mark.parametrize("name,fmt,scenario", READINGS)
def test_a_send_fan_out_to_agents_is_one_run_asked_what_the_graph_was_invoked_with(name: str, fmt: str, scenario: str) -> None:
    truth = json.loads((DATA / f"{scenario}.truth.json").read_text())
    [case] = extract(name, fmt)
    (turn,) = case.metadata["otel"]["turns"]  # one run: no turn per node the `Send`s ran
    assert isinstance(case.input, str) and json.loads(case.input) == truth["invoked"] == {"cities": ["Paris", "Tokyo"], "reports": []}
    assert turn["user_text"] == case.input and case.turns == []
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, case.input)]  # the agents' questions are the graph's own
    answers = {a["answer"] for a in truth["agents"].values()}
    assert case.trace.usage.requests == truth["requests"] == len(case.trace.steps) == 4
    # the output: the last model text (the state holds no message), the other agent's answer said on the way
    assert case.trace.output == turn["final_text"] == case.trace.steps[-1].output
    assert {case.trace.output, *turn["intermediate_texts"]} == answers == {"Paris is sunny, 21 C.", "Tokyo is rainy, 14 C."}
    assert truth["reports"][-1] == "Paris is sunny, 21 C.; Tokyo is rainy, 14 C."  # (what `summarise` added, no model text)
    sent = {m["tool_call_id"]: m["content"] for a in truth["agents"].values() for m in a["tool_messages"]}
    asked = sorted((c["id"], c["name"], c["arguments"], sent[c["id"]], None) for a in truth["agents"].values() for c in a["calls"])
    assert sorted((c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()) == asked == [
        ("call_P", "get_weather", {"city": "Paris"}, "sunny, 21 C", None), ("call_T", "get_weather", {"city": "Tokyo"}, "rainy, 14 C", None)]
    assert sorted((r["name"], r["arguments"]["city"], r["result"]) for r in truth["tool_runs"]) == [("get_weather", "Paris", "sunny, 21 C"),
                                                                                                    ("get_weather", "Tokyo", "rainy, 14 C")]


@pytest.mark.parametrize("name,fmt,scenario", [r for r in READINGS if r[1] == "otel"])
def test_group_by_run_keeps_the_fan_out_one_run(name: str, fmt: str, scenario: str) -> None:
    [whole] = extract(name, fmt)
    [run] = extract(name, fmt, group_by="run")
    assert run.input == whole.input and run.trace.output == whole.trace.output
    assert len(run.trace.tool_calls()) == 2 and len(run.metadata["otel"]["turns"]) == 1


def test_a_fan_out_under_an_application_span_is_asked_what_the_graph_was_invoked_with() -> None:
    """`tests/data/concurrent-runs/oi-langgraph-fanout.jsonl` (`record_concurrent_runs.py`): the same kind of graph,
    invoked with `{"cities": ["Paris", "Tokyo"], "notes": []}` inside a span of the application's own, the turn's anchor;
    its nodes ask the model themselves (before: the input was the first node's question, "Weather report for Paris")."""
    [case] = extract_path(Path(__file__).parent / "data" / "concurrent-runs" / "oi-langgraph-fanout.jsonl", "otel")
    assert isinstance(case, Case) and json.loads(case.input) == {"cities": ["Paris", "Tokyo"], "notes": []}
    assert [m.content for m in case.trace.user_messages] == [case.input] and case.trace.output == "Both summarised."
