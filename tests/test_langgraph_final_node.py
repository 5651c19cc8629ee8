"""LangGraph runs whose last node asks no model, read from real recordings in `tests/data/langgraph-final-node/`.

Recorded by `tests/frameworks/record_langgraph_final_node.py` (its docstring says what runs; the folder's README what
each recording holds): after the model's answer, a node `sign` adds an `AIMessage` of its own, the last message of the
state the graph returned. That message is the graph's answer, under OpenInference (its root chain's output) and
OpenLLMetry alike: OpenLLMetry records the state on its `LangGraph.workflow` span inside an `invoke_agent LangGraph`
span that records no output, and that wrapper was given the state's answer only when it was a structured response or a
`return_direct` tool's message (before: the last request's text, "Paris is sunny; Tokyo is rainy."). The model's own
answer stays the text of its step, said on the way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record

DATA = Path(__file__).parent / "data" / "langgraph-final-node"
NAMES = ["oi-sign-flat", "tl-sign-flat", "oi-sign-subgraph", "tl-sign-subgraph"]


def extract(name: str) -> Case:
    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=DATA / f"{name}.jsonl", format="otel", options={})
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    return cases[0]


@pytest.mark.parametrize("name", NAMES)
def test_the_answer_is_the_last_message_the_graph_returned(name: str) -> None:
    want = json.loads((DATA / f"{name}.truth.json").read_text())
    case = extract(name)
    assert want["last_message"]["type"] == "ai" and want["requests"] == len(case.trace.steps) == 2
    assert case.trace.output == want["last_message"]["content"] == "Paris is sunny; Tokyo is rainy. -- WeatherBot"
    (turn,) = case.metadata["otel"]["turns"]
    assert turn["final_text"] == case.trace.output
    assert case.trace.steps[-1].output == turn["intermediate_texts"][-1] == "Paris is sunny; Tokyo is rainy."  # the model's own reply
    sent = {m["tool_call_id"]: m["content"] for m in want["tool_messages"]}
    assert [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == [
        (c["id"], c["name"], c["arguments"], sent[c["id"]], None) for c in want["calls"]]
