"""pydantic-ai runs that ended before the tool calls of their last model request ran: those calls read as not run.

Recorded by the real pydantic-ai (2.62) against the project's scripted loopback server, by its own instrumentation (data-format
version 5) and with OpenInference's pydantic-ai span processor on top (`tests/frameworks/record_pydantic_ai_unrun.py` says what
each scenario runs). Each `<recording>.truth.json` is what the run's messages said: every response with its calls and each
call's return (none for a call that did not run), the tools that really ran, and what the run raised.

pydantic-ai checks `UsageLimits(tool_calls_limit=…)` before it runs a reply's calls and raises `UsageLimitExceeded`; an
application iterating `agent.iter()` may leave before the calls of a reply run. Either way no tool span records those calls
and no request follows. Before, they read as calls that ran and returned nothing (no result, no error), and the stopped
`iter()` run as a run that ended well with no answer. Now each is failed as not run, naming the run's error when it has one,
and the stopped run's error says it ended before its calls ran. A run whose calls all ran before the limit stopped its next
request (`request_limit`) reads as before. An `iter()` run the application left once its calls ran, before the request that
would send their results (`iter_after_tools`), or an `agent.run_stream_events()` run it left at its first tool result
(`events_stopped`), read as a run that answered with the words beside its calls; now it answers nothing, its calls ran, and
its error says it ended after them. `run_stream_events()` iterated to its end (`events`) reads as the run it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.conventions.pydantic_ai_deferred import STOPPED, STOPPED_AFTER, unrun

DATA = Path(__file__).parent / "data" / "pydantic-ai-unrun"
SCENARIOS = ("tool_limit", "iter_stopped", "request_limit", "iter_after_tools", "events_stopped")
NAMES = [f"{s}-{i}" for s in SCENARIOS for i in ("v5", "oi")]


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def reading(name: str) -> Case:
    return only_case(DATA / f"{name}.jsonl", "otel")


def qualified(raised: str) -> str:
    """What the application caught (`"<type>: <message>"`), as the agent span records it: the exception's qualified type."""
    return "pydantic_ai.exceptions." + raised


@pytest.mark.parametrize("name", NAMES)
def test_every_call_the_model_made_reads_as_it_ran_or_as_not_run(name: str) -> None:
    want = truth(name)
    case = reading(name)
    assert case.trace is not None
    run_error = case.metadata.get("run_error")
    expected = []
    ran = [(r["name"], r["arguments"]) for r in want["tools_ran"]]
    for response in want["responses"]:
        for c in response["calls"]:
            if c["returned"] is None and (c["name"], c["arguments"]) in ran:  # it ran; no request sent its return
                result = want["tools_ran"][ran.index((c["name"], c["arguments"]))]["result"]
                expected.append((c["id"], c["name"], c["arguments"], result, None))
            elif c["returned"] is not None:  # it ran: what the tool returned, no error
                assert {"name": c["name"], "arguments": c["arguments"], "result": c["returned"]["content"]} in want["tools_ran"]
                expected.append((c["id"], c["name"], c["arguments"], c["returned"]["content"], None))
            else:  # the run ended before it ran
                expected.append((c["id"], c["name"], c["arguments"], None, unrun(qualified(want["raised"]) if want["raised"] else None)))
    assert [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == expected
    assert len(case.trace.steps) == len(want["responses"]) == want["requests"] == case.trace.usage.requests
    assert case.input == want["input"] and case.trace.output is None
    if want["raised"] is not None:
        assert run_error == qualified(want["raised"])
    [turn] = case.metadata["otel"]["turns"]
    assert turn["final_text"] is None and turn["error"] == run_error


@pytest.mark.parametrize("inst", ["v5", "oi"])
def test_a_tool_calls_limit_fails_the_calls_it_stopped(inst: str) -> None:
    want = truth(f"tool_limit-{inst}")
    assert want["raised"].startswith("UsageLimitExceeded: The next tool call(s) would exceed the tool_calls_limit of 2")
    case = reading(f"tool_limit-{inst}")
    assert case.trace is not None
    *_, last = case.trace.steps
    assert [(c.name, c.arguments["city"], c.error is not None) for c in last.tool_calls] == [("get_weather", "Tokyo", True), ("get_weather", "Oslo", True)]
    assert all(c.error.startswith("not run: the run failed before this call ran (pydantic_ai.exceptions.UsageLimitExceeded: ")  # type: ignore[union-attr]
               for c in last.tool_calls)


@pytest.mark.parametrize("inst", ["v5", "oi"])
def test_a_run_the_application_stopped_says_so(inst: str) -> None:
    want = truth(f"iter_stopped-{inst}")
    assert want["raised"] is None and want["tools_ran"] == [] and want["output"] is None
    case = reading(f"iter_stopped-{inst}")
    assert case.trace is not None
    [call] = case.trace.tool_calls()
    assert (call.name, call.result, call.error) == ("get_weather", None, unrun(None))
    assert case.metadata["run_error"] == STOPPED.format(names="get_weather")
    [turn] = case.metadata["otel"]["turns"]
    assert turn["intermediate_texts"] == [want["responses"][0]["text"]]  # its words announced the call; no answer


@pytest.mark.parametrize("inst", ["v5", "oi"])
def test_calls_that_ran_before_a_request_limit_are_no_unrun_calls(inst: str) -> None:
    case = reading(f"request_limit-{inst}")
    assert case.trace is not None
    assert all(c.error is None and c.result is not None for c in case.trace.tool_calls())
    assert case.metadata["run_error"].startswith("pydantic_ai.exceptions.UsageLimitExceeded: The next request would exceed")


@pytest.mark.parametrize("name", [f"{s}-{i}" for s in ("iter_after_tools", "events_stopped") for i in ("v5", "oi")])
def test_a_run_the_application_stopped_after_its_calls_ran_says_so(name: str) -> None:
    want = truth(name)
    assert want["raised"] is None and want["output"] is None and want["requests"] == 1
    [ran] = want["tools_ran"]
    case = reading(name)
    assert case.trace is not None and case.trace.output is None  # (not the words beside the call)
    [call] = case.trace.tool_calls()
    assert (call.name, call.arguments, call.result, call.error) == (ran["name"], ran["arguments"], ran["result"], None)
    assert case.metadata["run_error"] == STOPPED_AFTER.format(names="get_weather")
    [turn] = case.metadata["otel"]["turns"]
    assert turn["final_text"] is None and turn["intermediate_texts"] == [want["responses"][0]["text"]]


@pytest.mark.parametrize("inst", ["v5", "oi"])
def test_a_run_streamed_as_events_to_its_end_reads_as_it_ran(inst: str) -> None:
    want = truth(f"events-{inst}")
    assert want["raised"] is None and want["output"] == "Paris is sunny, 21 C."
    case = reading(f"events-{inst}")
    assert case.trace is not None
    assert (case.input, case.trace.output, case.metadata.get("run_error")) == (want["input"], want["output"], None)
    assert [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == [
        (c["id"], c["name"], c["arguments"], c["returned"]["content"], None) for r in want["responses"] for c in r["calls"]]
    assert len(case.trace.steps) == want["requests"] == case.trace.usage.requests
    [turn] = case.metadata["otel"]["turns"]
    assert turn["intermediate_texts"] == [want["responses"][0]["text"]]
