"""smolagents runs that raised (`agent.run(task)`): the user's task, no answer, and the exception as the run's error.

Recorded by the real smolagents (1.26) against a scripted loopback server whose reply may be an HTTP 500, by
openinference-instrumentation-smolagents 0.1.43 (format `otel`) and as the agent's memory (format `smolagents`) at once
(`tests/frameworks/record_smolagents_raised.py` says what each scenario runs). Each `<scenario>.truth.json` holds each run's
task and what it returned or raised.

The instrumentation records the exception on a run's agent span and re-raises without ending the span: a run that raised
has no agent span in the export, and its steps hang from a lost parent. Before, such a run's user text was smolagents'
framing of the task ("New task:\\n…", or a planning request's whole prompt), it had no run error, and a second run on the
same memory that raised had the first run's `final_answer` as its answer (the answer tool's text, in both formats). Now the
task is the run's user text, the failed step's exception (a failed planning request's, which smolagents lets through as it
is) is `metadata.run_error`, and a run that raised answers nothing. The memory records no error for such a run (smolagents
re-raises before setting one) and its last run has no answer either; but the step whose model request failed is kept as
it was begun (no message, output, calls or usage), and format `smolagents` reads that step, last in its run, as the run
raising there (`AgentGenerationError`, its message unknown to the memory). A failed planning request leaves no step at all
(`planning`, `planning-first`): the memory cannot tell that run from one stopped, and has no run error.

A run that raised in its first step (`first-step`) leaves that one step under its lost agent span: no stand-in is made, the
step is the trace's root, and its user text was smolagents' `New task:` framing; it now reads as the other runs that raised.
A planning run whose first plan's request failed (`planning-first`) leaves only that request: it read as a lone request,
its user text the whole planning prompt and no run error; it now reads as the other runs that raised too.

The trace's warning about its lost span blamed a dropped batch; it now says the run raised and the instrumentation never
ended its agent span. A run whose agent span was really lost (its steps all ended well) keeps the dropped-batch warning.
"""

from __future__ import annotations

import json
import logging
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "smolagents-raised"
SCENARIOS = ("tool", "code", "planning", "second-run", "first-step", "planning-first")
LOST_ROOT = ("tool", "code", "planning", "second-run")  # (in `first-step` one span names the lost agent span: no stand-in)
FORMATS = {"oi": "otel", "memory": "smolagents"}
# the module the exceptions the runs raised are defined in, as the spans' `exception.type` names them
MODULES = {"AgentGenerationError": "smolagents.utils", "InternalServerError": "openai"}


@cache
def reading(name: str, kind: str = "oi") -> Case:
    return only_case(DATA / f"{name}.{kind}.jsonl", FORMATS[kind])


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def qualified(raised: str) -> str:
    kind = raised.split(":", 1)[0]
    return f"{MODULES[kind]}.{raised}"


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_run_that_raised_asked_its_task_and_failed_with_its_exception(name: str) -> None:
    want = truth(name)
    *_, last = want["runs"]
    assert last["returned"] is None and last["raised"] is not None
    case = reading(name)
    assert case.trace is not None
    assert [case.input, *case.turns] == [r["task"] for r in want["runs"]]
    assert [m.content for m in case.trace.user_messages] == [r["task"] for r in want["runs"]]
    assert case.trace.output is None
    assert case.metadata["run_error"] == qualified(last["raised"])
    turns = case.metadata["otel"]["turns"]
    assert [t["user_text"] for t in turns] == [r["task"] for r in want["runs"]]
    assert [t["final_text"] for t in turns] == [r["returned"] for r in want["runs"]]
    assert turns[-1]["error"] == case.metadata["run_error"]
    assert case.trace.usage.requests == want["requests"]
    assert [(c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == [
        (r["name"], r["arguments"], r["result"], None) for r in want["tool_runs"]]


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_memory_of_a_run_that_raised_has_no_answer(name: str) -> None:
    want = truth(name)
    memory, oi = reading(name, "memory"), reading(name)
    assert memory.trace is not None and oi.trace is not None
    assert [memory.input, *memory.turns] == [r["task"] for r in want["runs"]] == [oi.input, *oi.turns]
    assert memory.trace.output is None  # (not the first run's answer, for `second-run`)
    if name in UNANSWERED_STEP:  # the step smolagents began and never got a reply for: the run raised there
        assert memory.metadata["run_error"].startswith("AgentGenerationError: ")
        assert memory.trace.steps[-1].error == memory.metadata["run_error"]
        assert oi.metadata["run_error"].startswith("smolagents.utils.AgentGenerationError: ")
    else:  # a failed planning request leaves no step: the memory cannot tell a run that raised from one stopped
        assert "run_error" not in memory.metadata


UNANSWERED_STEP = ("tool", "code", "second-run", "first-step")


def test_an_earlier_runs_answer_stays_that_runs() -> None:
    case = reading("second-run")
    assert case.trace is not None
    first, _ = truth("second-run")["runs"]
    assert case.trace.steps[0].output == first["returned"]
    assert case.metadata["otel"]["turns"][0]["final_text"] == first["returned"] and "error" not in case.metadata["otel"]["turns"][0]


LOST = "lost a span several of their spans hang from (not exported: a dropped batch"
RAISED = "hold a smolagents run that raised, whose agent span was never exported"


def warnings_reading(path: Path, caplog: pytest.LogCaptureFixture) -> tuple[Case, list[str]]:
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        case = only_case(path, "otel")
    return case, [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("name", LOST_ROOT)
def test_the_warning_says_the_run_raised_not_that_a_batch_was_dropped(name: str, caplog: pytest.LogCaptureFixture) -> None:
    case, said = warnings_reading(DATA / f"{name}.oi.jsonl", caplog)
    [lost] = [m for m in said if "agent span" in m or "lost a span" in m]
    assert RAISED in lost and "no batch was dropped" in lost and LOST not in lost
    assert case.metadata["otel"]["traces"][-1] in lost  # (the trace of the run that raised)


def test_a_run_whose_agent_span_was_dropped_keeps_the_dropped_batch_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A run that ended well (its step 2's code failed, the run went on and answered), its `CodeAgent.run` span left out of
    # the export as a dropped batch would: its steps hang from a lost parent, none after the last one failed.
    recorded = Path(__file__).parent / "data" / "framework-outputs" / "oi-smol-code-fail.jsonl"
    docs = [json.loads(line) for line in recorded.read_text().splitlines()]
    for doc in docs:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                ss["spans"] = [sp for sp in ss["spans"] if sp["name"] != "CodeAgent.run"]
    damaged = tmp_path / "noroot.jsonl"
    damaged.write_text("".join(json.dumps(d) + "\n" for d in docs))
    case, said = warnings_reading(damaged, caplog)
    assert [m for m in said if LOST in m] and not [m for m in said if RAISED in m]
    assert "run_error" not in case.metadata
