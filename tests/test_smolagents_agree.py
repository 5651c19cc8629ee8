"""smolagents runs read alike from OpenInference's spans (format `otel`) and from the agent's memory (format `smolagents`).

Recorded by the real smolagents (1.26) against the project's scripted loopback server, by openinference-instrumentation-
smolagents 0.1.43 and as the agent's memory at once (`tests/frameworks/record_smolagents_agree.py` says what each scenario
runs). Each `<scenario>.truth.json` holds what `agent.run` returned (the value as JSON) or raised.

Before: `final_answer(True)` read `true` as the step's output and `True` as the run's under `otel`, `True` in the memory;
a `ToolCallingAgent`'s own `final_answer` call read as the value's Python `str()` under `otel` (`True`, `{'city': …}`,
`None` for no answer) and `""` as no output, where the memory read JSON, no answer and `""`; and a run whose model request
failed (smolagents re-raises it out of `run`, recording no error) had no error in its memory's reading. Now both formats
read what the run returned, any value that is no text as JSON, `""` as `""`, `None` as no output; and the memory's step
that smolagents left unanswered when the run raised is that step's error and the run's.

An answer a final-answer check refused (`final_answer_checks`: smolagents records the failure on the memory step and the run
goes on) read under `otel` as a step that answered with no error (the instrumentation records the check's failure on no
span), and a `CodeAgent`'s such step had no output in its memory. Now both read the refused answer as the step's output,
the check's failure as its error, and the run's output the answer it returned.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "smolagents-agree"
FORMATS = {"oi": "otel", "memory": "smolagents"}
ANSWERED = ("code-true", "tool-true", "tool-empty", "tool-dict", "tool-none")
RAISED = ("tool-raised", "code-raised")


@cache
def reading(name: str, kind: str) -> Case:
    return only_case(DATA / f"{name}.{kind}.jsonl", FORMATS[kind])


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def answer_text(value: Any) -> str | None:
    """What the run answered, as text: a string as it is, `None` no answer, any other value as JSON."""
    return value if value is None or isinstance(value, str) else json.dumps(value)


@pytest.mark.parametrize("kind", FORMATS)
@pytest.mark.parametrize("name", ANSWERED)
def test_the_answer_reads_as_the_run_returned_it(name: str, kind: str) -> None:
    want = truth(name)
    assert want["raised"] is None
    case = reading(name, kind)
    assert case.trace is not None
    *_, last = case.trace.steps
    assert last.output == answer_text(want["returned"]) == case.trace.output
    assert case.input == want["task"] and "run_error" not in case.metadata


@pytest.mark.parametrize("name", ANSWERED)
def test_both_formats_read_the_same_answer(name: str) -> None:
    oi, memory = reading(name, "oi"), reading(name, "memory")
    assert oi.trace is not None and memory.trace is not None
    assert [(s.thought, s.output) for s in oi.trace.steps] == [(s.thought, s.output) for s in memory.trace.steps]
    assert oi.trace.output == memory.trace.output == answer_text(truth(name)["returned"])


@pytest.mark.parametrize("name", RAISED)
def test_the_memory_of_a_run_whose_request_failed_says_the_run_raised(name: str) -> None:
    want = truth(name)
    assert want["returned"] is None and want["raised"].startswith("AgentGenerationError: ")
    assert want["step_errors"] == []  # (smolagents records no error in its memory)
    memory, oi = reading(name, "memory"), reading(name, "oi")
    assert memory.trace is not None and oi.trace is not None
    assert memory.trace.output is None is oi.trace.output
    assert memory.metadata["run_error"].startswith("AgentGenerationError: ")
    assert oi.metadata["run_error"].split(":")[0].rsplit(".", 1)[-1] == "AgentGenerationError"
    *done, failed = memory.trace.steps
    assert failed.error == memory.metadata["run_error"] and not failed.tool_calls and failed.output is None
    assert [s.error for s in done] == [None] * len(done)
    assert len(memory.trace.steps) == len(oi.trace.steps) and memory.trace.usage.requests == want["requests"]
    assert [(c.name, c.result) for c in oi.trace.tool_calls()] == [(r["name"], r["result"]) for r in want["tool_runs"]]


def test_a_managed_agents_call_reads_alike() -> None:
    want = truth("managed")
    memory, oi = reading("managed", "memory"), reading("managed", "oi")
    assert memory.trace is not None and oi.trace is not None
    [managed] = want["managed_returned"]
    for case in (memory, oi):
        [call] = [c for c in case.trace.tool_calls() if c.name == "researcher"]
        assert call.arguments == {"task": "Find the weather in Paris."} and call.result == managed and call.error is None
        assert case.trace.output == want["returned"] == case.trace.steps[-1].output
    # (the spans also hold the managed agent's own steps, `metadata.nested_steps`; the manager's memory does not)
    nested = {n["step"] for n in oi.metadata["nested_steps"]}
    assert [s.output for i, s in enumerate(oi.trace.steps) if i not in nested] == [s.output for s in memory.trace.steps]


@pytest.mark.parametrize("kind", FORMATS)
@pytest.mark.parametrize("name", ("tool-check", "code-check"))
def test_an_answer_a_check_refused_is_a_failed_step_not_the_runs_answer(name: str, kind: str) -> None:
    want = truth(name)
    [refused] = want["step_errors"]
    assert refused["type"] == "AgentError" and want["returned"] == "Paris is sunny."
    case = reading(name, kind)
    assert case.trace is not None
    first, second = case.trace.steps
    assert (first.output, first.error) == ("I do not know.", f"{refused['type']}: {refused['message']}")
    assert (second.output, second.error) == (want["returned"], None)
    assert case.trace.output == want["returned"] and "run_error" not in case.metadata
