"""OpenAI Agents SDK runs under MLflow's own tracing processor read as the SDK's export and OpenInference read them.

The recordings (`tests/data/mlflow-agents-sdk`, made by `tests/frameworks/record_mlflow_agents_sdk.py` with the real
MLflow 3.17.2 and openai-agents 0.24.0 against a loopback server) are each read as format `mlflow` (the trace as
`Trace.to_json()` wrote it) and `otel` (the same spans over OTLP) and checked against what the application itself saw
(`<scenario>.truth.json`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import assert_truth, only_case
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "mlflow-agents-sdk"
FORMATS = [("mlflow", "mlflow"), ("otel", "otlp")]
SCENARIOS = sorted(p.name.removesuffix(".truth.json") for p in DATA.glob("*.truth.json"))


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def read(name: str, fmt: str, ext: str) -> Case:
    return only_case(DATA / f"{name}.{ext}.jsonl", fmt)


def test_every_scenario_is_recorded() -> None:
    assert SCENARIOS == ["custom_failure", "failure_none", "filtered_handoffs", "invalid_output_handler", "nested_history", "two_runs"]


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
@pytest.mark.parametrize("name", SCENARIOS)
def test_reads_as_the_application_saw_the_run(name: str, fmt: str, ext: str) -> None:
    """Input, questions, calls (results and errors) and final output, as the application saw them:

    - a handoff whose transfer an `input_filter` or `nest_handoff_history` kept from the next agent has the SDK's
      reply as its result, read from the `Handoff` span (it read as no result);
    - a failed tool has the SDK's error with the tool's own text (`Error running tool (non-fatal): no such order`,
      as the export reads it; MLflow keeps it in the exception event's data: it read as the message alone), and no
      result when it returned none (the `null` MLflow writes read as the text "null");
    - the value an `invalid_final_output` error handler made is the output (it read as the model's text that failed);
    - two `Runner.run`s in one `trace()` are two turns, the second question kept (it was lost, one turn read).
    """
    want, case = truth(name), read(name, fmt, ext)
    assert_truth(case, want)
    assert [c.id for c in case.trace.tool_calls()] == [c["id"] for c in want["calls"]]
    turns = case.metadata["otel"]["turns"]
    assert [t["user_text"] for t in turns] == want["user_turns"]
    assert case.trace.usage.requests == want["requests"]


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
def test_an_invalid_final_output_handled_keeps_the_error(fmt: str, ext: str) -> None:
    """The turn that failed ("Invalid JSON provided", on the SDK's turn span, which MLflow names `Unknown`) is the run's
    error, as for the SDK's export and OpenInference; the model's text that failed is an intermediate text."""
    case = read("invalid_output_handler", fmt, ext)
    (turn,) = case.metadata["otel"]["turns"]
    assert turn["error"] == "Invalid JSON provided" and turn["intermediate_texts"] == ["not json"]
    assert json.loads(case.trace.output) == {"city": "?", "summary": "unknown"}


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
def test_two_runs_in_one_trace_are_a_turn_each(fmt: str, ext: str) -> None:
    case = read("two_runs", fmt, ext)
    turns = case.metadata["otel"]["turns"]
    assert [(t["final_text"], t["agents"], t["steps"]) for t in turns] == [("Paris is sunny.", ["Weather"], [0, 2]), ("A1 shipped.", ["Orders"], [2, 4])]
