"""A LangGraph handoff (`Command(goto=…, graph=Command.PARENT)`) read from real recordings in `tests/data/langgraph-handoff/`.

Recorded by `tests/frameworks/record_langgraph_handoff.py` (its docstring says what runs; the folder's README what each
recording holds): the triage agent calls `lookup_user`, then the handoff tool of LangGraph's multi-agent docs, whose
`Command` carries the conversation so far plus its reply as a plain `{"role": "tool", …}` dict; the parent graph goes on
at the weather agent, which answers. Under OpenInference, OpenLLMetry, Langfuse's `CallbackHandler` and MLflow (`otel`,
and `mlflow` for MLflow's own traces):

- the handoff's result is its reply, "Successfully transferred to weather", what the model was sent (before: the
  serialised Command; OpenInference and OpenLLMetry, unable to tell the reply from the history, took the history's
  `lookup_user` message and read a third call, `transfer_to_weather` with `lookup_user`'s id and result);
- LangGraph's `ParentCommand`, with which the Command leaves the triage subgraph, is no error: OpenLLMetry's ERROR
  status on the triage agent span made the run fail (before: `metadata.run_error` `ParentCommand…` and no output), and
  format `mlflow` listed it in `metadata.mlflow.errors`.
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

DATA = Path(__file__).parent / "data" / "langgraph-handoff"
READINGS = [("oi-handoff", "oi-handoff.jsonl", "otel"), ("tl-handoff", "tl-handoff.jsonl", "otel"), ("lf-handoff", "lf-handoff.jsonl", "otel"),
            ("ml-handoff", "ml-handoff.otlp.jsonl", "otel"), ("ml-handoff", "ml-handoff.mlflow.jsonl", "mlflow")]


def extract(file: str, fmt_name: str, data: Path = DATA) -> Case:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=data / file, format=fmt_name, options={})
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    return cases[0]


def truth(name: str, data: Path = DATA) -> dict[str, Any]:
    return json.loads((data / f"{name}.truth.json").read_text())


@pytest.mark.parametrize("name, file, fmt", READINGS, ids=[f"{f}:{fmt}" for _, f, fmt in READINGS])
def test_the_handoff_is_the_call_the_model_made_with_the_reply_it_got(name: str, file: str, fmt: str) -> None:
    want = truth(name)
    sent = {m["tool_call_id"]: m for m in want["tool_messages"]}
    case = extract(file, fmt)
    got = [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]
    assert got == [(c["id"], c["name"], c["arguments"], sent[c["id"]]["content"], None) for c in want["calls"]]
    assert got[-1][3] == "Successfully transferred to weather"
    assert [r["name"] for r in want["tool_runs"]] == [c["name"] for c in want["calls"]]  # every call ran once


@pytest.mark.parametrize("name, file, fmt", READINGS, ids=[f"{f}:{fmt}" for _, f, fmt in READINGS])
def test_the_command_leaving_the_subgraph_is_no_error(name: str, file: str, fmt: str) -> None:
    want = truth(name)
    case = extract(file, fmt)
    assert "run_error" not in case.metadata
    assert case.trace.output == want["last_message"]["content"] and want["last_message"]["type"] == "ai"
    assert case.input == want["asked"] and case.trace.usage.requests == want["requests"]
    assert [s.error for s in case.trace.steps] == [None] * want["requests"]
    assert not (case.metadata.get("mlflow") or {}).get("errors")


@pytest.mark.parametrize("name, file, fmt", READINGS, ids=[f"{f}:{fmt}" for _, f, fmt in READINGS])
def test_the_named_agent_node_is_an_agent_of_the_turn(name: str, file: str, fmt: str) -> None:
    # node `triage` runs `create_react_agent(..., name="triage")`: OpenLLMetry's `invoke_agent triage` span names it, the
    # other instrumentations only the graph's chain span `triage` (node `weather` is a function: no agent). They listed none.
    agents = extract(file, fmt).metadata["otel"]["turns"][0]["agents"]
    assert agents == ["triage"]  # (not the unnamed parent graph, though OpenLLMetry writes `invoke_agent LangGraph` for it)
