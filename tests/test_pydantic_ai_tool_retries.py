"""pydantic-ai tool calls sent back to the model to try again: each reads as the call it was, with what the model was told.

Recorded by the real pydantic-ai (2.62) against the project's scripted loopback server, by its own instrumentation (data-format
version 5) and with OpenInference's pydantic-ai span processor on top (`tests/frameworks/record_pydantic_ai_tool_retries.py`
says what each scenario runs). Each `<recording>.truth.json` is what the run's messages said: every response with its calls
and what pydantic-ai sent back for each (`outcome` `retried`: sent back to try again), every time a tool really ran, the
output and what the run raised.

pydantic-ai writes a tool response part's content as `result` (the GenAI convention's key is `response`). Before, it was
not read: a call no tool span answered (a tool the model made up, or one a `prepare` left out of the request) read as a
call that ran and returned nothing, and in a run that later failed (`max_retries`) the first call's `ModelRetry` was taken
for an attempt whose answering run had lost its span: the call lost its result and its error. Now the first call keeps both,
and a call of a tool the request did not offer is failed as not run, its result pydantic-ai's "Unknown tool name" prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.conventions.pydantic_ai_deferred import UNKNOWN

DATA = Path(__file__).parent / "data" / "pydantic-ai-tool-retries"
NAMES = [f"{s}-{i}" for s in ("max_retries", "unknown_tool", "prepared_out") for i in ("v5", "oi")]


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def reading(name: str) -> Case:
    return only_case(DATA / f"{name}.jsonl", "otel")


def expected_calls(want: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(id, name, arguments, result, how it failed) of every call the model made, from what the application's messages say."""
    ran = [(r["name"], r["arguments"]) for r in want["tools_ran"]]
    out = []
    for response in want["responses"]:
        for c in response["calls"]:
            back = c["returned"]
            if back is None:  # the run raised on this call: no answer was sent
                out.append((c["id"], c["name"], c["arguments"], None, "raised"))
            elif back["outcome"] == "success":
                out.append((c["id"], c["name"], c["arguments"], back["content"], None))
            elif (c["name"], c["arguments"]) in ran:  # the tool ran and raised `ModelRetry`: sent back to try again
                out.append((c["id"], c["name"], c["arguments"], back["content"], "retried"))
            else:  # no tool of that name ran: pydantic-ai's own retry prompt
                out.append((c["id"], c["name"], c["arguments"], back["content"], "unknown"))
    return out


def how(error: str | None) -> str | None:
    if error is None:
        return None
    if error == UNKNOWN:
        return "unknown"
    if error.startswith("pydantic_ai.exceptions.ToolRetryError: "):
        return "retried"
    return "raised" if error.startswith("pydantic_ai.exceptions.UnexpectedModelBehavior: ") else error


@pytest.mark.parametrize("name", NAMES)
def test_every_call_reads_with_what_the_model_was_told(name: str) -> None:
    want = truth(name)
    case = reading(name)
    assert case.trace is not None
    assert [(c.id, c.name, c.arguments, c.result, how(c.error)) for c in case.trace.tool_calls()] == expected_calls(want)
    assert len(case.trace.steps) == len(want["responses"]) == want["requests"] == case.trace.usage.requests
    assert (case.input, case.trace.output) == (want["input"], want["output"])
    assert case.metadata.get("run_error") == (f"pydantic_ai.exceptions.{want['raised']}" if want["raised"] else None)
    assert "retried" not in case.metadata["otel"]  # (two calls the model asked for in two replies: no attempts of one call)


@pytest.mark.parametrize("inst", ["v5", "oi"])
def test_a_tools_model_retry_keeps_its_message_when_the_run_later_fails(inst: str) -> None:
    want = truth(f"max_retries-{inst}")
    assert want["raised"].startswith("UnexpectedModelBehavior: Tool 'get_weather' exceeded max retries count of 1")
    case = reading(f"max_retries-{inst}")
    assert case.trace is not None
    first, last = case.trace.tool_calls()
    assert (first.result, first.error) == ("unknown city Atlantis", "pydantic_ai.exceptions.ToolRetryError: unknown city Atlantis")
    assert last.result is None and last.error == case.metadata["run_error"]


@pytest.mark.parametrize("name", [f"{s}-{i}" for s in ("unknown_tool", "prepared_out") for i in ("v5", "oi")])
def test_a_call_of_a_tool_the_request_did_not_offer_did_not_run(name: str) -> None:
    want = truth(name)
    assert all(r["name"] != want["responses"][0]["calls"][0]["name"] for r in want["tools_ran"])  # (it never ran)
    case = reading(name)
    assert case.trace is not None
    first = case.trace.steps[0].tool_calls[0]
    assert first.error == UNKNOWN
    assert first.result == f"Unknown tool name: {first.name!r}. Available tools: 'get_weather'"
    assert case.metadata.get("run_error") is None  # (the run went on: the model was asked again)
