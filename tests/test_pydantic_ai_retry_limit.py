"""pydantic-ai tool calls sent back to try again until the tool's `retries` ran out: each attempt, and the run's end, as the
application saw them.

Recorded by the real pydantic-ai (2.62) against the project's scripted loopback server, by its own instrumentation
(`Instrumentation` capability, data-format version 5) and with OpenInference's pydantic-ai span processor on top
(`tests/frameworks/record_pydantic_ai_retry_limit.py` says what each scenario runs). Each `<recording>.truth.json` is what
the run's messages said (every call and what pydantic-ai sent back for it), every time the tool really ran, the text of
every tool message the model was sent (`sent`, from the requests the server got) and what the run raised.

A tool raising `ModelRetry` past its `retries` (`three_attempts`, `no_retries`, `parallel`) read right already: each attempt
sent back is a call failed with the `ModelRetry` message the model was sent, the last one failed with the run's
`UnexpectedModelBehavior`, which is `metadata.run_error` (kept as a regression test). A call whose ARGUMENTS failed validation
(`bad_args`) did not: pydantic-ai's span records the validation error as the call's exception and the error details it sends
back as the call's result; the run raised later, and the next request showed the model those details, which do not say the
exception's message, so the call was taken for an attempt whose answering run had lost its span (as a LangGraph node re-run):
it read as a call that did not fail, its failure moved to `metadata.otel.retried` as an earlier attempt. And the last such
call, over the limit (the run ended: nothing was sent back), read with the details it would have sent as its result. Now the
first call fails with the validation error and the details as its result, the last one fails with no result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "pydantic-ai-retry-limit"
SCENARIOS = ("three_attempts", "no_retries", "parallel", "bad_args")
NAMES = [f"{s}-{i}" for s in SCENARIOS for i in ("v5", "oi")]
RETRY = "pydantic_ai.exceptions.ToolRetryError: "
INVALID = "pydantic_core._pydantic_core.ValidationError: "
CANCELLED = "asyncio.exceptions.CancelledError"  # (a call running beside the one that ended the run, stopped by it)


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def expected_calls(want: dict[str, Any], run_error: str) -> list[tuple[Any, ...]]:
    """(id, arguments, result, error or how it starts) of every call the model made, from what the application saw."""
    ran = [(r["arguments"], r.get("raised")) for r in want["tools_ran"]]
    out = []
    for response in want["responses"]:
        for c in response["calls"]:
            back, raised = c["returned"], next((r for a, r in ran if a == c["arguments"]), None)
            if back is None and raised:  # the run ended on this call: nothing was sent back
                out.append((c["id"], c["arguments"], None, run_error))
            elif back is None:  # it never ran: its arguments failed validation, or the run ended while it waited to
                out.append((c["id"], c["arguments"], None, CANCELLED if "city" in c["arguments"] else INVALID))
            elif back["outcome"] == "success":
                out.append((c["id"], c["arguments"], back["content"], None))
            elif raised:  # the tool raised `ModelRetry`: its message went back to the model
                assert raised == f"ModelRetry: {back['content']}" and json.loads(want["sent"][c["id"]]) == {"error": back["content"]}
                out.append((c["id"], c["arguments"], back["content"], RETRY + back["content"]))
            else:  # the tool never ran: its arguments failed validation, the error details went back
                assert json.loads(want["sent"][c["id"]]) == {"error": back["content"]}
                out.append((c["id"], c["arguments"], back["content"], INVALID))
    return out


def read(case: Case) -> list[tuple[Any, ...]]:
    assert case.trace is not None
    return [(c.id, c.arguments, c.result, INVALID if c.error and c.error.startswith(INVALID) else c.error) for c in case.trace.tool_calls()]


@pytest.mark.parametrize("name", NAMES)
def test_every_attempt_and_the_runs_end_read_as_the_application_saw_them(name: str) -> None:
    want = truth(name)
    assert want["raised"].startswith(f"UnexpectedModelBehavior: Tool 'get_weather' exceeded max retries count of {want['retries']}.")
    case = only_case(DATA / f"{name}.jsonl", "otel")
    assert case.trace is not None
    run_error = case.metadata.get("run_error")
    assert run_error == f"pydantic_ai.exceptions.{want['raised']}"  # what the application got
    assert read(case) == expected_calls(want, run_error)
    assert len(case.trace.steps) == len(want["responses"]) == want["requests"] == case.trace.usage.requests
    assert (case.input, case.trace.output) == (want["input"], None)
    assert "retried" not in case.metadata["otel"]  # (each call the model asked for is one call: no attempts of another)


@pytest.mark.parametrize("inst", ["v5", "oi"])
def test_a_call_whose_arguments_failed_validation_failed(inst: str) -> None:
    want = truth(f"bad_args-{inst}")
    assert want["tools_ran"] == [] and want["responses"][0]["calls"][0]["returned"]["outcome"] == "retried"
    case = only_case(DATA / f"bad_args-{inst}.jsonl", "otel")
    assert case.trace is not None
    first, last = case.trace.tool_calls()
    # the model was sent the error details, and tried again: the first call failed, the details its result
    assert first.error is not None and first.error.startswith(INVALID + "2 validation errors for get_weather")
    assert first.result == want["responses"][0]["calls"][0]["returned"]["content"]
    # the second was over `retries=1`: the run ended there, nothing was sent back
    assert last.error is not None and last.error.startswith(INVALID) and last.result is None
    assert case.metadata["run_error"].startswith("pydantic_ai.exceptions.UnexpectedModelBehavior: Tool 'get_weather' exceeded max retries count of 1")
