"""A smolagents manager that calls two managed agents in one reply, or one managed agent twice in a run: each managed
call returns smolagents' report, the text its manager's model was shown, under OpenInference as under MLflow.

The recordings (`tests/data/smolagents-managed-calls`, made by `tests/frameworks/record_smolagents_managed_calls.py` with
smolagents 1.26.0, openinference-instrumentation-smolagents 0.1.43 and MLflow 3.17.2 against a loopback server; the
folder's README says what each is) are checked against what the application ran and got (`<scenario>.<oi|mlflow>.truth.json`:
smolagents' own `MultiStepAgent.__call__` values and the manager's memory). What was wrong before, under OpenInference:

- `researcher` and `writer` called in one reply: each call's result was the managed agent's bare answer. smolagents joins
  the two reports into one observation (the `Step n` span's output), and only one report was ever cut out of it;
- `researcher` called alone, then again beside `get_time`: the first call's result was the bare answer. Its report is
  the tool message answering its call id, but that was looked up only for an agent the run called once;
- a `CodeAgent` manager's code calling `researcher(task=…)`: the call's argument was the task smolagents ran the agent on
  (its template around the task the code passed), where MLflow's reading has the task passed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "smolagents-managed-calls"
MANAGED = {"researcher", "writer"}
# (recording, format, truth): OpenInference's spans, MLflow's traces and MLflow's same spans over OTLP
READINGS = [("oi", "otel", "oi"), ("mlflow", "mlflow", "mlflow"), ("otlp", "otel", "mlflow")]


def truth(name: str, run: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.{run}.truth.json").read_text())


def read(name: str, ext: str, fmt: str) -> Case:
    (case,) = extract_path(DATA / f"{name}.{ext}.jsonl", fmt)
    assert isinstance(case, Case) and case.trace is not None, case
    return case


def expected(want: dict[str, Any]) -> list[tuple[str, dict[str, str], str]]:
    """Each managed call in the order the manager's model made them: its agent, the task passed and the report smolagents
    returned (`managed`, in the order they returned, is told apart by agent and task)."""
    made = [c for step in want["steps"] for c in step["calls"] if c["name"] in MANAGED]
    reports = [next(m["report"] for m in want["managed"] if (m["name"], m["task"]) == (c["name"], c["arguments"]["task"])) for c in made]
    return [(c["name"], c["arguments"], r) for c, r in zip(made, reports)]


@pytest.mark.parametrize(("ext", "fmt", "run"), READINGS)
@pytest.mark.parametrize("name", ["tool-two-managed", "tool-managed-twice"])
def test_each_managed_call_returns_the_report_its_managers_model_saw(name: str, ext: str, fmt: str, run: str) -> None:
    want = truth(name, run)
    case = read(name, ext, fmt)
    assert case.input == want["input"] and case.trace.output == want["output"]
    calls = [c for c in case.trace.tool_calls() if c.name in MANAGED]
    assert [(c.name, c.arguments, c.result) for c in calls] == expected(want)
    assert all(c.error is None for c in calls)
    seen = "\n".join(m["text"] for m in want["seen"])
    for step in want["steps"][:-1]:  # (the last is the manager's `final_answer`)
        assert f"Observation:\n{step['observations']}" in seen  # (what the manager's model was shown)
    for call in calls:
        assert call.result in seen
    if run == "oi":  # (MLflow records no model request, so no call id)
        made = [c for step in want["steps"] for c in step["calls"] if c["name"] in MANAGED]
        assert [c.id for c in calls] == [c["id"] for c in made]


def test_both_readers_agree_on_the_managed_calls() -> None:
    for name in ("tool-two-managed", "tool-managed-twice"):
        readings = {ext: [(c.name, c.arguments, c.result) for c in read(name, ext, fmt).trace.tool_calls() if c.name in MANAGED]
                    for ext, fmt, _ in READINGS}
        assert readings["oi"] == readings["mlflow"] == readings["otlp"], name


def test_a_joined_observation_that_splits_more_than_one_way_is_not_cut() -> None:
    """Two reports whose answers leave the joined text two ways to split are not guessed at: neither is read (each
    call then keeps its run's answer), where a text that splits one way gives each its own."""
    from tracejudge.stages.extract.otel.conventions.smolagents import _cut
    from tracejudge.stages.extract.otel.spans import Span

    a, b = (Span(trace_id="t", span_id=i, parent_id="s", name=f"{i}.run", kind=0, start=0, end=0, attrs={}, status_error=False,
                 status_message=None, events=[], service=None, file="", line=0) for i in ("a", "b"))
    assert _cut("x\nx\nx", [a, b], {"a": "x", "b": "x"}) == {}  # ("x" + "x\nx", or "x\nx" + "x")
    assert _cut("A: x\nB: y\n12:00Z", [a, b, "12:00Z"], {"a": "x", "b": "y"}) == {"a": "A: x", "b": "B: y"}


@pytest.mark.parametrize(("ext", "fmt", "run"), READINGS)
def test_a_code_agent_managers_calls_have_the_task_its_code_passed(ext: str, fmt: str, run: str) -> None:
    """A `CodeAgent` manager's code calls `researcher(task=…)` and `writer(task=…)`. Each call's argument is the task the
    code passed, not smolagents' template around it (the run's recorded task): OpenInference records no template, so it
    is read from the code the model wrote. The report the code got back is recorded under MLflow only (its template is
    on the run's span); under OpenInference the call keeps the agent's answer, the end of that report."""
    want = truth("code-two-managed", run)
    case = read("code-two-managed", ext, fmt)
    calls = [c for c in case.trace.tool_calls() if c.name in MANAGED]
    assert [(c.name, c.arguments) for c in calls] == [(m["name"], {"task": m["task"]}) for m in want["managed"]]
    assert all(m["run_task"] != m["task"] and m["task"] in m["run_task"] for m in want["managed"])
    if run == "oi":
        assert all(m["report"].endswith(f"\n{c.result}") and c.result != m["report"] for c, m in zip(calls, want["managed"]))
    else:
        assert [c.result for c in calls] == [m["report"] for m in want["managed"]]


def test_a_task_the_code_did_not_pass_as_one_literal_is_left_as_recorded() -> None:
    from tracejudge.stages.extract.otel.conventions.smolagents_code_tasks import code_task

    given = "You're a helpful agent named 'researcher'.\nTask:\nFind Paris weather.\n---"
    assert code_task(given, "researcher", ['Thought: go.\n<code>\nw = researcher(task="Find Paris weather.")\nprint(w)\n</code>']) == "Find Paris weather."
    assert code_task(given, "researcher", ['<code>\nw = researcher("Find Paris weather.")\n</code>']) == "Find Paris weather."
    for code in ('q = "Find Paris weather."\nw = researcher(task=q)',  # (built at run time)
                 'r = researcher\nw = r(task="Find Paris weather.")',  # (the agent passed around)
                 'a = researcher(task="Find Paris")\nb = researcher(task="Find Paris weather.")',  # (both inside the run's task)
                 'w = researcher(task="Find Paris weather."'):  # (does not parse)
        assert code_task(given, "researcher", [f"<code>\n{code}\n</code>"]) is None, code
    assert code_task(given, "researcher", ['w = researcher(task="Find Paris weather.")']) is None  # (no code block)


@pytest.mark.parametrize(("ext", "fmt", "run"), READINGS)
def test_a_managed_agent_called_twice_reads_in_the_order_the_calls_ran(ext: str, fmt: str, run: str) -> None:
    """`researcher` for Paris alone, then `get_time` beside `researcher` for Tokyo: each managed run's tools come right
    after the call that ran it, then the manager's next calls. MLflow records no model request, so its manager's calls
    were one step with both managed runs after it: `get_time` read before the Paris run's `get_weather`, which ran first.
    Calls of no request that ran side by side (`tool-two-managed`) stay one step, as the calls of one reply."""
    want = truth("tool-managed-twice", run)
    case = read("tool-managed-twice", ext, fmt)
    plain = iter(want["tools"])  # (the plain tools' calls, in the order the application ran them)
    made = [c for step in want["steps"][:-1] for c in step["calls"]]
    expected_order = []
    for c in made:
        if c["name"] in MANAGED:
            expected_order.append((c["name"], c["arguments"]))
            expected_order.append(("get_weather", next(plain)["arguments"]))  # (the run's one tool call)
        else:
            expected_order.append((c["name"], next(plain)["arguments"]))
    got = [(c.name, c.arguments) for c in case.trace.tool_calls()]
    if run == "mlflow":  # (MLflow names a `@tool` function's call after its class)
        expected_order = [(n if n in MANAGED else "SimpleTool", a) for n, a in expected_order]
    assert got == expected_order
    steps = [[c.name for c in s.tool_calls] for s in case.trace.steps if s.tool_calls]
    assert steps[0] == ["researcher"] and (steps[2][-1] == "researcher" and len(steps[2]) == 2)
    two = read("tool-two-managed", ext, fmt).trace.steps
    assert [c.name for c in two[0].tool_calls] == ["researcher", "writer"]
