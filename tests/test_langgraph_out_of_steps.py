"""LangGraph runs that ran out of steps: the calls of the last reply, which never ran, read as not run.

Recorded by `tests/frameworks/record_langgraph_out_of_steps.py` (real langgraph 1.2, `ChatOpenAI` against the scripted
loopback server, OpenInference's and OpenLLMetry's LangChain instrumentations); each `<scenario>.truth.json` holds every
call the model asked for, every run of the tool (its own log), the state `invoke` returned and what it raised.

`create_react_agent` with too few steps left drops the model's reply and returns "Sorry, need more steps to process this
request." instead; a graph of its own raises `GraphRecursionError` before the last reply's calls run. Either way the model
span records calls no tool ran. Before, they read as calls that ran and returned nothing; now each is failed as not run,
saying why. The graph's answer (the stand-in text), or the run's error, reads as before, the error's type by its class
name (`GraphRecursionError: …`, as under MLflow and Langfuse; it read `langgraph.errors.GraphRecursionError: …`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _out_of_steps import assert_calls_ran_or_not_run
from framework_truth import only_case
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.conventions.langgraph_steps import SORRY

DATA = Path(__file__).parent / "data" / "langgraph-out-of-steps"
NAMES = [f"{k}-{s}" for s in ("react", "graph") for k in ("oi", "tl")]


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def reading(name: str, tmp_path: Path | None = None) -> Case:
    """The case of recording `name`; with `tmp_path`, of a copy without its instrumentation scope (as a store such as
    Phoenix gives the spans back)."""
    if tmp_path is None:
        return only_case(DATA / f"{name}.jsonl", "otel")
    scopeless = tmp_path / f"{name}.jsonl"
    scopeless.write_text(re.sub(r'"scope": \{"name": "[^"]*"', '"scope": {"name": ""', (DATA / f"{name}.jsonl").read_text()))
    return only_case(scopeless, "otel")


@pytest.mark.parametrize("name", NAMES)
def test_every_call_reads_as_it_ran_or_as_not_run(name: str) -> None:
    assert_calls_ran_or_not_run(reading(name), truth(name))


@pytest.mark.parametrize("kind", ["oi", "tl"])
def test_the_react_agents_stand_in_is_still_the_graphs_answer(kind: str) -> None:
    want = truth(f"{kind}-react")
    assert want["raised"] is None and want["answer"] == SORRY
    case = reading(f"{kind}-react")
    assert case.trace is not None and case.trace.output == SORRY and case.metadata.get("run_error") is None


@pytest.mark.parametrize("scoped", [True, False], ids=["scope", "no-scope"])
@pytest.mark.parametrize("kind", ["oi", "tl"])
def test_a_graph_recursion_error_is_the_runs_error_and_names_the_calls_it_stopped(kind: str, scoped: bool, tmp_path: Path) -> None:
    want = truth(f"{kind}-graph")
    assert want["raised"].startswith("GraphRecursionError: Recursion limit of 5 reached") and want["messages"] is None
    case = reading(f"{kind}-graph", None if scoped else tmp_path)
    assert case.trace is not None and case.trace.output is None
    # what the application got, its type by its class name as MLflow and Langfuse's readings name it (it read
    # `langgraph.errors.GraphRecursionError: …` here, the qualified name only these two instrumentations' events hold)
    assert case.metadata["run_error"] == want["raised"]
    first = want["raised"].splitlines()[0]
    assert [c.error for c in case.trace.steps[-1].tool_calls] == [  # type: ignore[union-attr]
        f"not run: the graph stopped before this call ran ({first}); no tool span records it"] * 2
