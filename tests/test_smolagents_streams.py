"""smolagents runs iterated as streams (`agent.run(task, stream=True)`): their answer, and the error a failed one raised.

Recorded by the real smolagents (1.26) against a scripted loopback server that streams, by openinference-instrumentation-
smolagents 0.1.43 (format `otel`) and as the run's memory (format `smolagents`) at once
(`tests/frameworks/record_smolagents_streams.py` says what each scenario runs). Each `<scenario>.truth.json` holds what the
application got: the events it iterated, the last one's output (`returned`), what it raised, what each tool returned.

The instrumentation wraps the run's generator: the agent span's `output.value` is the `str()` of every event joined (tool
calls, tool outputs, the model's deltas, whole action steps with their memory), ending in `FinalAnswerStep(output=…)`; and
when the generator raised, it sets the span's status OK over the ERROR it had set (the `exception` event stays). Before,
that joined text (tens of kilobytes) was the run's answer and the turn's final text, and a run that raised had no run
error. Now the answer is the `FinalAnswerStep`'s output (a value that is not text as JSON, as a run not streamed reads),
as the run's memory reads it; a run that raised has none, and the `exception` event is its error.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "smolagents-streams"
ANSWERED = ("tool", "code-deltas", "code-dict", "max-steps")
FORMATS = {"oi": "otel", "memory": "smolagents"}


@cache
def reading(name: str, kind: str = "oi") -> Case:
    return only_case(DATA / f"{name}.{kind}.jsonl", FORMATS[kind])


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def answer(value: Any) -> str:
    """An answer as a case holds it: text as it is, another value as JSON (`smolagents_steps.answers`)."""
    return value if isinstance(value, str) else json.dumps(value)


@pytest.mark.parametrize("name", ANSWERED)
def test_a_streamed_run_answers_with_its_final_answer_step(name: str) -> None:
    want = truth(name)
    assert want["raised"] is None and want["events"][-1] == "FinalAnswerStep"
    case = reading(name)
    assert case.trace is not None
    assert case.input == want["task"]
    assert case.trace.output == answer(want["returned"])  # not the events' reprs joined
    [turn] = case.metadata["otel"]["turns"]
    assert turn["final_text"] == case.trace.output and "error" not in turn
    assert "run_error" not in case.metadata
    assert [(c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == [
        (r["name"], r["arguments"], r["result"], None) for r in want["tool_runs"]]
    assert case.trace.usage.requests == want["requests"]


@pytest.mark.parametrize("name", ANSWERED)
def test_otel_and_memory_read_a_streamed_run_alike(name: str) -> None:
    oi, memory = reading(name), reading(name, "memory")
    assert oi.trace is not None and memory.trace is not None
    assert (oi.input, oi.trace.output, oi.metadata.get("run_error")) == (memory.input, memory.trace.output, memory.metadata.get("run_error"))
    assert [s.error for s in oi.trace.steps] == [s.error for s in memory.trace.steps]


def test_a_streamed_run_that_raised_has_no_answer_and_its_exception_is_the_runs_error() -> None:
    want = truth("fails")
    assert want["returned"] is None and want["raised"].startswith("AgentGenerationError: Error while generating output:")
    case = reading("fails")
    assert case.trace is not None
    assert case.trace.output is None
    assert case.metadata["run_error"] == f"smolagents.utils.{want['raised']}"
    [turn] = case.metadata["otel"]["turns"]
    assert turn["final_text"] is None and turn["error"] == case.metadata["run_error"]
    # the request that failed keeps its own exception; the tool that ran before it, its result
    assert case.trace.steps[-1].error == "openai.InternalServerError: Error code: 500 - The server had an error while processing your request."
    assert [(c.name, c.result) for c in case.trace.tool_calls()] == [(r["name"], r["result"]) for r in want["tool_runs"]]
