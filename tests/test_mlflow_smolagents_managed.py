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
  call (no `nested_steps`);
- the `researcher` call's result was the agent's bare answer, while the call returned smolagents' report around it
  ("Here is the final answer from your managed agent 'researcher':\n…", what the manager's step observed); MLflow records
  the text of neither, but the run's span records the agent's report template, name and answer;
- a managed run that raised (no output recorded) made both formats fail on a `NameError`: format `otel` the whole file;
- the `researcher` call's argument was the whole task smolagents gave the run (its `managed_agent.task` template around
  the manager's), not the `task` the manager's model passed; the run's span records that template too.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import pytest
import yaml
from _mlflow_smolagents import FORMATS, MlflowSmolagents, managed_task
from tracejudge.core.records import Case
from tracejudge.stages.judge.trace_text import nested_steps, render_steps

RECORDINGS = MlflowSmolagents("mlflow-smolagents-managed")
TASK = "Find the weather in Paris."  # what the manager's model passed (`researcher(task=…)`, a tool call's `task`)
truth, read = RECORDINGS.truth, RECORDINGS.read


def report(name: str, answer: str) -> str:
    """What smolagents' `MultiStepAgent.__call__` returns to the manager: its default report template, filled by smolagents."""
    from smolagents.agents import populate_template

    template = yaml.safe_load(files("smolagents.prompts").joinpath("code_agent.yaml").read_text())["managed_agent"]["report"]
    return populate_template(template, variables={"name": name, "final_answer": answer})


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
    returned = report(managed["name"], managed["answer"])
    assert returned in want["observations"][0]  # (what the manager's step observed)
    # the call's argument is the task the manager's model gave, not the template smolagents framed it in for the run
    assert managed_task(managed["name"], TASK) == managed["task"]
    assert [c[1:] for c in calls(case)] == [(time["arguments"], time["result"], None),
                                            ({"task": TASK}, returned, None),
                                            (weather["arguments"], weather["result"], None)]
    assert calls(case)[1][0] == managed["name"]
    # the managed agent's call is inside its run's call, labelled with the agent
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 1, "agent": "researcher"}]
    text = render_steps(case.trace.steps, nested=nested_steps(case))
    assert "[sub-agent researcher, inside call 2: researcher]\n call 3: SimpleTool({city:Paris})" in text
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (None, None, None)  # (MLflow kept no model request)


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
def test_a_managed_run_that_raised_is_a_failed_call(fmt: str, ext: str) -> None:
    """The researcher's model is unreachable: its run raised (MLflow records its exception and no output) and the manager's
    step failed with it, then the manager answered."""
    want = truth("tool-manager-fails")
    assert want["managed"]["answer"] is None and [e["type"] for e in want["step_errors"]] == ["AgentToolExecutionError"]
    (case,) = read("tool-manager-fails", fmt, ext)
    assert case.trace is not None and case.trace.output == want["output"]
    (time, managed) = case.trace.tool_calls()
    assert (time.arguments, time.result, time.error) == (want["calls"][0]["arguments"], want["calls"][0]["result"], None)
    assert managed_task("researcher", TASK) == want["managed"]["task"]
    assert (managed.name, managed.arguments, managed.result) == ("researcher", {"task": TASK}, None)
    assert managed.error is not None and managed.error.startswith("AgentGenerationError: Error in generating model output")
