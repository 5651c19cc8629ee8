"""The named parts a LangGraph supervisor's tools run, read alike under the four LangChain instrumentations.

Recorded by the real libraries against the project's fake server (`tests/frameworks/record_named_agents.py`; the
folder's README says what each scenario is; `<s>.outcome.json` is what the application saw). What was wrong before:

- A plain LangChain runnable a tool runs, named by the application (`.with_config(run_name="summarizer")`), left the
  steps it made unnamed (`[sub-agent, inside call 1: summarise]`) where a named graph's read `[sub-agent researcher, …]`:
  every instrumentation records it as a chain span named `summarizer` right under the tool's, as it records a graph.
- The named supervisor and the agents its tools ran were missing from `metadata.otel.turns[].agents` under
  OpenInference, MLflow and Langfuse, which record them only as chain spans; OpenLLMetry listed them.
- A failed step's error named the same exception `langchain_openai.chat_models.base.OpenAIAPIError: …` under
  OpenInference, `OpenAIAPIError: …` under OpenLLMetry and MLflow: it is `OpenAIAPIError: …` under all three now, the
  class name all three record (Langfuse records the message alone, and reads as it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from helpers import calls
from tracejudge.core.records import Case
from tracejudge.stages.judge.trace_text import nested_steps, render_steps

DATA = Path(__file__).parent / "data" / "named-agents"
READINGS = [("{}-oi.jsonl", "otel"), ("{}-tl.jsonl", "otel"), ("{}-mlflow.mlflow.jsonl", "mlflow"), ("{}-mlflow.otlp.jsonl", "otel"),
            ("{}-langfuse.otlp.jsonl", "otel"), ("{}-langfuse.json", "langfuse"), ("{}-langfuse.v2.json", "langfuse")]


def readings(scenario: str) -> list[Any]:
    return [pytest.param(scenario, name.format(scenario), fmt, id=f"{name.format(scenario)}:{fmt}") for name, fmt in READINGS]


def outcome(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.outcome.json").read_text())


def check_run(case: Case, ran: dict[str, Any]) -> None:
    """The output and the tokens the run's requests spent, as the application and the server saw them."""
    assert case.trace is not None and case.trace.output == ran["final_output"]
    usage = case.trace.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (ran["input_tokens"], ran["output_tokens"])


@pytest.mark.parametrize(("scenario", "name", "fmt"), readings("chain"))
def test_a_named_runnable_a_tool_ran_labels_its_step(scenario: str, name: str, fmt: str) -> None:
    ran = outcome(name.split(".")[0])  # (the run this file recorded)
    case = only_case(DATA / name, fmt)
    check_run(case, ran)
    (seen,) = ran["calls"]
    assert calls(case) == [("call_s1", "summarise", seen["arguments"], seen["result"], None)]
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 0, "agent": "summarizer"}]
    text = render_steps(case.trace.steps, nested=nested_steps(case))  # type: ignore[union-attr]
    assert "Step 2:\n [sub-agent summarizer, inside call 1: summarise]\n output: " + seen["result"] in text
    assert case.metadata["otel"]["turns"][0]["agents"] == ["summarizer", "supervisor"]


@pytest.mark.parametrize(("scenario", "name", "fmt"), readings("chain"))
def test_a_runnable_left_unnamed_names_no_agent(scenario: str, name: str, fmt: str, tmp_path: Path) -> None:
    # LangChain calls a sequence nobody named `RunnableSequence` (as every `call_model` node's own sequence is called)
    unnamed = tmp_path / name
    unnamed.write_text((DATA / name).read_text().replace("summarizer", "RunnableSequence"))
    case = only_case(unnamed, fmt)
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 0}]
    assert "[sub-agent, inside call 1: summarise]" in render_steps(case.trace.steps, nested=nested_steps(case))  # type: ignore[union-attr]
    assert case.metadata["otel"]["turns"][0]["agents"] == ["supervisor"]


@pytest.mark.parametrize(("scenario", "name", "fmt"), readings("team"))
def test_two_named_agents_in_one_reply_and_one_of_them_again_each_label_their_own_steps(scenario: str, name: str, fmt: str) -> None:
    ran = outcome(name.split(".")[0])  # (the run this file recorded)
    case = only_case(DATA / name, fmt)
    check_run(case, ran)
    seen = {(c["name"], json.dumps(c["arguments"])): c["result"] for c in ran["calls"]}
    assert [(c[1], c[2], c[3], c[4]) for c in calls(case)] == [
        (n, a, seen[(n, json.dumps(a))], None) for n, a in (
            ("ask_researcher", {"question": "Weather in Paris?"}), ("ask_writer", {"topic": "a greeting"}), ("get_weather", {"city": "Paris"}),
            ("ask_researcher", {"question": "Weather in Tokyo?"}), ("get_weather", {"city": "Tokyo"}))]
    assert case.metadata["nested_steps"] == [{"step": s, "call": c, "agent": a} for s, c, a in (
        (1, 0, "researcher"), (2, 0, "researcher"), (3, 1, "writer"), (5, 3, "researcher"), (6, 3, "researcher"))]
    text = render_steps(case.trace.steps, nested=nested_steps(case))  # type: ignore[union-attr]
    assert text.count("[sub-agent researcher, inside call 1: ask_researcher]") == text.count("[sub-agent researcher, inside call 4: ask_researcher]") == 2
    assert text.count("[sub-agent writer, inside call 2: ask_writer]") == 1
    assert case.metadata["otel"]["turns"][0]["agents"] == ["researcher", "supervisor", "writer"]


def raised_as_recorded(name: str, raised: str) -> str:
    """The error `raised` (`"<class name>: <message>"`, what the application got) as the recording `name` holds it.

    OpenInference, OpenLLMetry and MLflow record the type (the first two by its qualified name, the third by its class
    name): it reads by its class name under all three. Langfuse records the message alone, and no type is made up for it.
    """
    return raised.split(": ", 1)[1] if "langfuse" in name else raised


@pytest.mark.parametrize("name", ["fails-oi.jsonl", "fails-tl.jsonl"])
def test_a_failed_steps_error_reads_alike_without_the_instrumentation_scope(name: str, tmp_path: Path) -> None:
    # (a store that keeps no scope, Phoenix's: the spans' own keys tell the LangChain instrumentation)
    ran = outcome(name.split(".")[0])
    scopeless = tmp_path / name
    scopeless.write_text(re.sub(r'"scope": \{"name": "[^"]*"', '"scope": {"name": ""', (DATA / name).read_text()))
    case = only_case(scopeless, "otel")
    assert case.trace is not None and [c.error for c in case.trace.tool_calls()] == [ran["calls"][0]["error"]]
    assert case.trace.steps[1].error == ran["calls"][0]["error"]


@pytest.mark.parametrize(("scenario", "name", "fmt"), readings("fails"))
def test_a_named_agent_that_failed_fails_its_call_and_labels_its_failed_step(scenario: str, name: str, fmt: str) -> None:
    ran = outcome(name.split(".")[0])  # (the run this file recorded)
    assert ran["failed_requests"] == 1 and ran["requests"] == 2  # the researcher's one request failed; the supervisor's two did not
    case = only_case(DATA / name, fmt)
    check_run(case, ran)
    ((cid, tool, arguments, result, error),) = calls(case)
    assert (cid, tool, arguments, result) == ("call_s1", "ask_researcher", {"question": "Weather in Atlantis?"}, ran["tool_messages"][0])
    assert error == raised_as_recorded(name, ran["calls"][0]["error"])
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 0, "agent": "researcher"}]
    assert case.trace is not None and case.trace.steps[1].error == error  # the researcher's failed request
    assert "run_error" not in case.metadata  # the supervisor got past it
    assert case.metadata["otel"]["turns"][0]["agents"] == ["researcher", "supervisor"]
