"""smolagents runs that reached `max_steps` and whose own final-answer request then failed: no answer, and the run's error.

Recorded by the real smolagents (1.26) against a scripted loopback server, by openinference-instrumentation-smolagents (format
`otel`) and as the run's memory (format `smolagents`) at once (`tests/frameworks/record_smolagents_final_request.py` says what
each scenario runs). smolagents catches that request's failure and `agent.run` returns its stand-in message's content,
`[{"type": "text", "text": "Error in generating final LLM output: …"}]`, raising nothing.

Before: under OpenInference that stand-in (as Python text) was the run's output and the turn's final text, and no run error
was set; a run called with `return_full_result=True` had the `str()` of its `RunResult` (its whole memory) as its output,
answered or not; format `smolagents` had no output but no run error either. Now both formats read no output and
`metadata.run_error` `AgentMaxStepsError: Reached max steps.` followed by smolagents' text; a `RunResult`'s output is the
`output` it holds; a run whose final-answer request was answered still has that answer and no run error.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "smolagents-final-request"
FAILED = ("tool-500", "tool-malformed", "code-500", "tool-500-full")
ANSWERED = ("tool-ok", "tool-ok-full")
FORMATS = {"oi": "otel", "memory": "smolagents"}
MAX = "AgentMaxStepsError: Reached max steps."


@cache
def reading(name: str, kind: str) -> Case:
    return only_case(DATA / f"{name}.{kind}.jsonl", FORMATS[kind])


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def stand_in(name: str) -> str:
    """The text of what `agent.run` returned in place of an answer (the content of smolagents' stand-in message)."""
    [part] = truth(name)["returned"]
    assert part["type"] == "text" and part["text"].startswith("Error in generating final LLM output:")
    return part["text"]


@pytest.mark.parametrize("kind", FORMATS)
@pytest.mark.parametrize("name", FAILED)
def test_a_failed_final_request_leaves_no_answer_and_is_the_runs_error(name: str, kind: str) -> None:
    want = truth(name)
    assert want["state"] == "max_steps_error" and want["step_errors"] == [{"step": 3, "type": "AgentMaxStepsError", "message": "Reached max steps."}]
    case = reading(name, kind)
    assert case.trace is not None
    assert case.trace.output is None  # not smolagents' stand-in, not the RunResult around it
    assert case.metadata["run_error"] == f"{MAX}\n{stand_in(name)}"
    *work, last = case.trace.steps
    assert len(case.trace.steps) == want["requests"] == case.trace.usage.requests
    assert last.output is None and last.tool_calls == [] and last.error is not None and last.error.startswith(MAX + "\n")
    assert all(s.output is None and s.error is None for s in work)
    if kind == "oi":
        [turn] = case.metadata["otel"]["turns"]
        assert turn["final_text"] is None and turn["error"] == case.metadata["run_error"]


@pytest.mark.parametrize("kind", FORMATS)
@pytest.mark.parametrize("name", ANSWERED)
def test_an_answered_final_request_is_the_answer_and_no_run_error(name: str, kind: str) -> None:
    want = truth(name)
    case = reading(name, kind)
    assert case.trace is not None
    assert case.trace.output == want["returned"] == "Paris is sunny and Tokyo is rainy."
    assert "run_error" not in case.metadata
    assert case.trace.steps[-1].output == want["returned"] and case.trace.steps[-1].error == MAX


@pytest.mark.parametrize("name", FAILED + ANSWERED)
def test_otel_and_memory_read_the_same_run_alike(name: str) -> None:
    oi, memory = reading(name, "oi"), reading(name, "memory")
    assert oi.trace is not None and memory.trace is not None
    assert (oi.input, oi.trace.output, oi.metadata.get("run_error")) == (memory.input, memory.trace.output, memory.metadata.get("run_error"))
    assert [s.output for s in oi.trace.steps] == [s.output for s in memory.trace.steps]
    # the last step's first line agrees; below it OpenInference has the request's own exception, the memory smolagents' text
    assert [(s.error or "").split("\n")[0] for s in oi.trace.steps] == [(s.error or "").split("\n")[0] for s in memory.trace.steps]
    if not name.startswith("code"):  # (a CodeAgent's memory has its code as the call; OpenInference the tools the code ran)
        runs = [(r["name"], r["arguments"], r["result"]) for r in truth(name)["tool_runs"]]
        for case in (oi, memory):
            assert [(c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == [(*r, None) for r in runs]


@pytest.mark.parametrize("name", ("tool-500", "tool-ok"))
def test_return_full_result_reads_as_the_plain_run(name: str) -> None:
    plain, full = reading(name, "oi"), reading(f"{name}-full", "oi")
    assert plain.trace is not None and full.trace is not None
    assert full.trace.output == plain.trace.output and full.metadata.get("run_error") == plain.metadata.get("run_error")
    assert [t["final_text"] for t in full.metadata["otel"]["turns"]] == [t["final_text"] for t in plain.metadata["otel"]["turns"]]


def test_the_failed_request_keeps_its_own_exception_under_opentelemetry() -> None:
    case = reading("tool-500", "oi")
    assert case.trace is not None
    assert case.trace.steps[-1].error == f"{MAX}\nopenai.InternalServerError: Error code: 500 - The server had an error while processing your request."
