"""LangGraph runs that ran out of steps, traced by MLflow and by Langfuse: the calls of the last reply read as not run.

Recorded by `tests/frameworks/record_langgraph_out_of_steps_stores.py` (the runs of `test_langgraph_out_of_steps.py`:
`create_react_agent` that returns "Sorry, need more steps…", a graph of its own that raises `GraphRecursionError`) under
`mlflow.langchain.autolog()` (format `mlflow`, and its OTLP under `otel`) and Langfuse's LangChain `CallbackHandler` (the
trace as Langfuse's API returns it, format `langfuse`, and the OTLP its SDK sent, `otel`).

Langfuse records the `GraphRecursionError` only as the graph's root span's status message, without the type or an
exception event. Before, its run error was that bare message and the calls of the last reply read as calls that ran and
returned nothing; now the error names `GraphRecursionError` and those calls are failed as not run, as under the other
instrumentations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _out_of_steps import assert_calls_ran_or_not_run
from framework_truth import only_case
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.conventions.langgraph_steps import SORRY

DATA = Path(__file__).parent / "data" / "langgraph-out-of-steps-stores"
# (recording, file, format): each tracer's own shape and the OTLP of the same spans
READINGS = [(f"{tracer}-{shape}", file, fmt) for shape in ("react", "graph")
            for tracer, files in (("mlflow", (("mlflow.jsonl", "mlflow"), ("otlp.jsonl", "otel"))), ("lf", (("json", "langfuse"), ("otlp.jsonl", "otel"))))
            for file, fmt in files]
IDS = [f"{name}.{file}" for name, file, _ in READINGS]
RECURSION = "GraphRecursionError: Recursion limit of 5 reached"


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def reading(name: str, file: str, fmt: str) -> Case:
    return only_case(DATA / f"{name}.{file}", fmt)


@pytest.mark.parametrize(("name", "file", "fmt"), READINGS, ids=IDS)
def test_every_call_reads_as_it_ran_or_as_not_run(name: str, file: str, fmt: str) -> None:
    assert_calls_ran_or_not_run(reading(name, file, fmt), truth(name))


@pytest.mark.parametrize(("name", "file", "fmt"), [r for r in READINGS if r[0].endswith("-react")], ids=[i for i in IDS if "-react." in i])
def test_the_react_agents_stand_in_is_still_the_graphs_answer(name: str, file: str, fmt: str) -> None:
    want = truth(name)
    assert want["raised"] is None and want["answer"] == SORRY
    case = reading(name, file, fmt)
    assert case.trace is not None and case.trace.output == SORRY and case.metadata.get("run_error") is None


@pytest.mark.parametrize(("name", "file", "fmt"), [r for r in READINGS if r[0].endswith("-graph")], ids=[i for i in IDS if "-graph." in i])
def test_a_graph_recursion_error_is_the_runs_error_and_names_the_calls_it_stopped(name: str, file: str, fmt: str) -> None:
    want = truth(name)
    assert want["raised"].startswith(RECURSION) and want["messages"] is None
    case = reading(name, file, fmt)
    assert case.trace is not None and case.trace.output is None
    # (the type as each recorded it: MLflow `GraphRecursionError`; Langfuse keeps only the message, read as that error)
    assert case.metadata["run_error"].startswith(RECURSION)
    assert case.metadata["run_error"].split("\n")[0] == want["raised"].split("\n")[0]
    assert all(RECURSION in c.error for c in case.trace.steps[-1].tool_calls)  # type: ignore[operator]
