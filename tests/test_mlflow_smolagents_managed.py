"""A smolagents managed agent that is itself a `CodeAgent`, under `mlflow.smolagents.autolog()`, read by formats `mlflow` and
`otel` as one run: the manager's, with the managed agent's run as the call that ran it and its code's calls inside it.

The recordings (`tests/data/mlflow-smolagents-managed`, made by `tests/frameworks/record_mlflow_smolagents_managed.py` with
MLflow 3.17.2 and smolagents 1.26 against a loopback server; the folder's README says what each is) are checked against what
the application ran and got (`<scenario>.truth.json`). A `CodeAgent` runs its model's code in a worker thread where MLflow
loses its context, so the managed agent's `get_weather` call is a trace of its own, held in time by both the manager's run
and the managed run. What was wrong before:

- format `mlflow`, `CodeAgent` manager: four cases — the manager's run with `get_time` only, the managed run as a case of its
  own (its task read as a user's question), its `get_weather` call alone and its `final_answer` alone: a call held by two runs
  was left apart, and the managed run, being a `CodeAgent` run, was never joined to its manager;
- format `otel`, either manager: one case, but `get_weather` read as the manager's own call, not inside the `researcher`
  call (no `nested_steps`).
"""

from __future__ import annotations

from typing import Any

import pytest
from _mlflow_smolagents import FORMATS, MlflowSmolagents
from tracejudge.core.records import Case
from tracejudge.stages.judge.trace_text import nested_steps, render_steps

RECORDINGS = MlflowSmolagents("mlflow-smolagents-managed")
truth, read = RECORDINGS.truth, RECORDINGS.read


def calls(case: Case) -> list[tuple[Any, ...]]:
    assert case.trace is not None
    return [(c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
@pytest.mark.parametrize("name", ["tool-manager", "code-manager"])
def test_a_managed_code_agents_run_is_its_managers_call(name: str, fmt: str, ext: str) -> None:
    want = truth(name)
    assert want["traces"] > 1  # (the code's calls, and under a `CodeAgent` manager the managed run, are traces of their own)
    (case,) = read(name, fmt, ext)  # one case: the manager's run, not one a trace
    assert case.input == want["input"] and case.trace is not None and case.trace.output == want["output"]
    managed = want["managed"]
    (time, weather) = want["calls"]
    # (MLflow records a `@tool` function's call as its class, `SimpleTool`, and no tool name)
    assert [c[1:] for c in calls(case)] == [(time["arguments"], time["result"], None),
                                            ({"task": managed["task"]}, managed["answer"], None),
                                            (weather["arguments"], weather["result"], None)]
    assert calls(case)[1][0] == managed["name"]
    # the managed agent's call is inside its run's call, labelled with the agent
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 1, "agent": "researcher"}]
    text = render_steps(case.trace.steps, nested=nested_steps(case))
    assert "[sub-agent researcher, inside call 2: researcher]\n call 3: SimpleTool({city:Paris})" in text
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (None, None, None)  # (MLflow kept no model request)
