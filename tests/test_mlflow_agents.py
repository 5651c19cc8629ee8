"""Agent frameworks traced by MLflow's own autologging, read by formats `mlflow` and `otel`.

The recordings (`tests/data/mlflow-agents`, made by `tests/frameworks/record_mlflow_agents.py` with the real MLflow 3.17.2
against a loopback server) hold an OpenAI Agents SDK run under `mlflow.openai.autolog()` (two calls, a failing tool, a
handoff), a smolagents `ToolCallingAgent` under `mlflow.smolagents.autolog()`, a pydantic-ai agent under
`mlflow.pydantic_ai.autolog()` (also one delegating to another agent from a tool) and an Anthropic loop under `mlflow.anthropic.autolog()`; each reading is checked against
what the application itself ran and got (`<scenario>.truth.json`), in the trace as `Trace.to_json()` wrote it and in the
same spans over OTLP.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _mlflow_smolagents import managed_task
from helpers import extract_path
from tracejudge.core.records import Case
from tracejudge.stages.judge.trace_text import nested_steps, render_steps

DATA = Path(__file__).parent / "data" / "mlflow-agents"
FORMATS = [("mlflow", "mlflow"), ("otel", "otlp")]


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def read(name: str, fmt: str, ext: str) -> Case:
    (case,) = extract_path(DATA / f"{name}.{ext}.jsonl", fmt)
    assert isinstance(case, Case), case
    return case


def calls(case: Case) -> list[dict[str, Any]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result, "error": c.error} for c in case.trace.tool_calls()]


def usage(case: Case) -> dict[str, Any]:
    u = case.trace.usage
    return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "requests": u.requests}


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
@pytest.mark.parametrize("name", ["pydantic-tools", "pydantic-retry"])
def test_pydantic_ai_requests_read_from_its_own_messages(name: str, fmt: str, ext: str) -> None:
    """MLflow records a pydantic-ai model request as pydantic-ai's own messages (`part_kind` parts): the calls keep the
    model's ids (they had none, the requests no reply), the last step says the answer, a retried call is failed with
    the retry message the model was sent as its result."""
    want, case = truth(name), read(name, fmt, ext)
    assert case.input == want["input"] and case.trace.output == want["output"]
    assert usage(case) == want["usage"]
    got = calls(case)
    assert [(c["id"], c["name"], c["arguments"]) for c in got] == [(c["id"], c["name"], c["arguments"]) for c in want["calls"]]
    for g, w in zip(got, want["calls"]):
        if "error" in w:
            assert g["error"] and g["error"].endswith(w["error"]) and g["result"] == w["error"]
        else:
            assert g["result"] == w["result"] and g["error"] is None
    steps = case.trace.steps
    assert len(steps) == want["usage"]["requests"] and steps[-1].output == want["output"]
    assert [[c.id for c in s.tool_calls] for s in steps[:-1]] == [[c["id"]] for c in want["calls"]] if name == "pydantic-retry" else \
        [[c["id"] for c in want["calls"]]]


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
def test_pydantic_ai_delegation_names_the_agent_each_nested_request_ran_in(fmt: str, ext: str) -> None:
    """A tool that runs another agent (`researcher.run(..., usage=ctx.usage)`): its requests are steps inside the call
    that ran them, labelled with the agent's name as MLflow recorded it (the `name` attribute of the AGENT span, which is
    named after the method: `Agent.run`; they read `[sub-agent Agent.run, …]` before)."""
    want, case = truth("pydantic-delegate"), read("pydantic-delegate", fmt, ext)
    assert case.input == want["input"] and case.trace.output == want["output"] and usage(case) == want["usage"]
    got = {c["id"]: c for c in calls(case)}
    assert [c.id for c in case.trace.tool_calls()] == ["call_d1", "call_d2", "call_w_Paris", "call_w_Tokyo"]
    for w in want["calls"]:
        assert (got[w["id"]]["name"], got[w["id"]]["arguments"], got[w["id"]]["result"], got[w["id"]]["error"]) == (
            w["name"], w["arguments"], w["result"], None)
    researched = [{"step": 1, "call": 0}, {"step": 2, "call": 0}, {"step": 3, "call": 1}, {"step": 4, "call": 1}]
    assert case.metadata["nested_steps"] == [{**n, "agent": "researcher"} for n in researched]
    assert case.metadata["otel"]["turns"][0]["agents"] == ["researcher", "router"]
    text = render_steps(case.trace.steps, nested=nested_steps(case))
    assert text.count("[sub-agent researcher, inside call 1: ask_researcher]") == 2 and "Agent.run" not in text


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
@pytest.mark.parametrize("name", ["smolagents-tools", "smolagents-fail"])
def test_smolagents_tool_calls_and_answer(name: str, fmt: str, ext: str) -> None:
    """MLflow records smolagents' `Tool.__call__` with its bound arguments (`{"sanitize_inputs_outputs", "kwargs"}`) and
    an `AgentText` result (`{"_value"}`), the answer likewise: read as the arguments, results and answer they were;
    `final_answer` (`FinalAnswerTool.__call__`) is the answer, not a call. MLflow records no tool name for a `@tool`
    function (the span is `SimpleTool.__call__`) and, with smolagents 1.x, no model request: neither can be read."""
    want, case = truth(name), read(name, fmt, ext)
    assert case.input == want["input"] and case.trace.output == want["output"]
    got = calls(case)
    assert [c["name"] for c in got] == ["SimpleTool"] * len(want["calls"])
    assert [c["arguments"] for c in got] == [c["arguments"] for c in want["calls"]]
    for g, w in zip(got, want["calls"]):
        if "error" in w:
            assert g["error"] == f"ValueError: {w['error']}" and g["result"] is None
        else:
            assert g["result"] == w["result"] and g["error"] is None


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
@pytest.mark.parametrize("name", ["smolagents-managed", "smolagents-managed-code"])
def test_smolagents_managed_agents_are_calls_of_their_manager(name: str, fmt: str, ext: str) -> None:
    """MLflow records no TOOL span for a manager's call of a managed agent, only the managed agent's `<Agent>.run` span
    under the manager's. Before, the calls were nowhere and the managed agents' tools read as the manager's own; now each
    run is the call that ran it (the agent's name, the task its manager's model gave it, its answer) and its tools are calls
    inside it, labelled with the agent (`nested_steps`). Under a `CodeAgent` manager each managed run is a trace of its
    own (the code's worker thread): it was a case of its own, its task read as a user's question; now one case."""
    want, case = truth(name), read(name, fmt, ext)
    assert want["traces"] == (4 if name.endswith("-code") else 1)  # (the code's `final_answer` too is a trace of its own)
    assert case.input == want["input"] and case.trace.output == want["output"]
    got = calls(case)
    # the result is what the call returned to the manager: smolagents' report around the answer (its template, recorded
    # on the run's span, filled in as smolagents fills it)
    # and its argument the task the manager's model passed, which smolagents framed in its template for the run
    asked = {"researcher": "Weather in Paris?", "clock": "Time in Tokyo?"}
    assert [managed_task(m["name"], asked[m["name"]]) for m in want["managed"]] == [m["task"] for m in want["managed"]]
    assert [(c["name"], c["arguments"], c["result"], c["error"]) for c in got[:2]] == [
        (m["name"], {"task": asked[m["name"]]}, f"Here is the final answer from your managed agent '{m['name']}':\n{m['answer']}", None)
        for m in want["managed"]]
    assert [(c["arguments"], c["result"], c["error"]) for c in got[2:]] == [(c["arguments"], c["result"], None) for c in want["calls"]]
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 0, "agent": "researcher"}, {"step": 2, "call": 1, "agent": "clock"}]
    text = render_steps(case.trace.steps, nested=nested_steps(case))
    assert "[sub-agent researcher, inside call 1: researcher]\n call 3: SimpleTool({city:Paris})" in text
    assert usage(case) == {"input_tokens": None, "output_tokens": None, "requests": None}  # (MLflow kept no model request)


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
@pytest.mark.parametrize("name", ["agents-tools", "agents-fail", "agents-handoff", "agents-wrapped", "anthropic-tools"])
def test_agents_sdk_and_anthropic_read_as_the_run(name: str, fmt: str, ext: str) -> None:
    """The Agents SDK under MLflow's own tracing processor (its `Response` spans holding the `AsyncResponses` request the
    OpenAI autolog records: one request each) and an Anthropic loop read as the run: calls by the model's ids, a failed
    tool with the error the SDK recorded (it redacts the exception's own) and the text the model got, a handoff as its
    `transfer_to_<agent>` call answered by the SDK's reply."""
    want, case = truth(name), read(name, fmt, ext)
    assert case.input == want["input"] and case.trace.output == want["output"]
    assert usage(case) == want["usage"]
    got = calls(case)
    if name == "agents-handoff":
        handoff, got = got[0], got[1:]
        assert handoff["name"] == "transfer_to_weather_agent" and handoff["error"] is None
        reply = json.loads(handoff["result"]) if isinstance(handoff["result"], str) else handoff["result"]
        assert reply == {"assistant": want["last_agent"]}
    assert [(c["id"], c["name"], c["arguments"], c["result"]) for c in got] == [(c["id"], c["name"], c["arguments"], c["result"]) for c in want["calls"]]
    assert [c["error"] for c in got] == [c.get("recorded_error") for c in want["calls"]]


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
@pytest.mark.parametrize(("name", "agents"), [("agents-wrapped", ["weather_agent"]), ("anthropic-tools", [])])
def test_the_applications_own_agent_span_names_no_agent(name: str, agents: list[str], fmt: str, ext: str) -> None:
    """The application's own AGENT span (`mlflow.start_span("chat_app", span_type=AGENT)`, `@mlflow.trace(name="agent",
    span_type=AGENT)`) is its entry point, whose name is its function's or the one it gave the span: it was listed among
    the turn's agents (`["chat_app", "weather_agent"]`), and an Anthropic loop it wraps, no agent at all, as one named
    `agent`. Its input and output are still the case's; the agents are those an autolog recorded."""
    want, case = truth(name), read(name, fmt, ext)
    assert case.input == want["input"] and case.trace.output == want["output"]
    assert case.metadata["otel"]["turns"][0]["agents"] == agents
    assert {p.agent for p in case.trace.system_prompts} <= {*agents, None}
