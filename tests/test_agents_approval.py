"""OpenAI Agents SDK runs paused for a human's approval (`needs_approval=True`), read as what they were.

Recorded by the real SDK (0.24.0, chat-completions model) with OpenInference's `OpenAIAgentsInstrumentor` (2.6.0,
`<s>.oi.jsonl`, format `otel`) and the SDK's own export (`<s>.export.jsonl`, format `openai-agents`) at once, against
the project's loopback fake server (`tests/frameworks/record_agents_approval.py`, which says what each scenario did;
`<s>.truth.json` is what the application saw). The model said "Let me issue that refund." and called `refund`, a tool
that needs approval: `Runner.run` returned with the call in `result.interruptions` and `final_output` None.

Before: the paused run's final output was that preamble, and the held call an ordinary call with a null result (the SDK
writes its span with no output and no error). Now the call is failed as awaiting approval and not run, and the run has
no final output, `metadata.run_error` saying it paused. `approved` / `rejected` resumed the run in a second trace of the
same `group_id`: the conversation reads as one case whose answer is the resumed run's. The approved call is one call,
the held one, with the result of the `function` span the resumed run opened with (before: that span was a second call,
and the held call kept its awaiting-approval error); the rejected call keeps that error (it never ran) and, as its
result, the SDK's "Tool execution was not approved." that the model was sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "agents-approval"
FILES = [("oi", "otel"), ("export", "openai-agents")]


def truth(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.truth.json").read_text())


def only_case(scenario: str, kind: str, fmt: str) -> Case:
    (case,) = extract_path(DATA / f"{scenario}.{kind}.jsonl", fmt)
    assert isinstance(case, Case), case
    return case


def held_step(case: Case, want: dict[str, Any]) -> Any:
    """The step of the request whose reply asked for the held call (the preamble is its thought)."""
    (step,) = [s for s in case.trace.steps if s.thought == want["preamble"]]
    return step


@pytest.mark.parametrize("kind, fmt", FILES)
def test_a_paused_run_has_no_output_and_its_held_call_did_not_run(kind: str, fmt: str) -> None:
    want = truth("paused")
    case = only_case("paused", kind, fmt)
    (run,) = want["runs"]
    assert case.input == want["input"]
    assert len(case.trace.steps) == want["model_requests"]
    step = held_step(case, want)
    assert step.output is None  # the preamble stays the step's text, never the answer
    assert case.trace.output is None and run["final_output"] is None
    assert [(c.name, c.arguments) for c in step.tool_calls] == [(i["name"], i["arguments"]) for i in run["interruptions"]]
    assert want["returned"] == {}  # the tool never ran
    for c in step.tool_calls:
        assert c.result is None and c.error is not None and "awaiting approval" in c.error and "not run" in c.error
    assert "paused for approval" in case.metadata["run_error"]
    (turn,) = case.metadata["otel"]["turns"]
    assert turn["final_text"] is None and turn["intermediate_texts"] == [want["preamble"]]
    if fmt == "openai-agents":
        assert case.metadata["openai_agents"]["paused_for_approval"] == [{"agent": "Support", "tools": ["refund"]}]


@pytest.mark.parametrize("kind, fmt", FILES)
@pytest.mark.parametrize("scenario", ["approved", "rejected"])
def test_a_resumed_run_reads_as_one_conversation_with_the_resumed_answer(scenario: str, kind: str, fmt: str) -> None:
    want = truth(scenario)
    case = only_case(scenario, kind, fmt)
    first, resumed = want["runs"]
    assert first["final_output"] is None and resumed["interruptions"] == 0
    assert case.input == want["input"]
    assert case.trace.output == resumed["final_output"]
    assert "run_error" not in case.metadata  # the conversation ended with the resumed run's answer
    assert [t["final_text"] for t in case.metadata["otel"]["turns"]][-1] == resumed["final_output"]
    step = held_step(case, want)
    (held,) = [c for c in step.tool_calls if c.name == first["interruptions"][0]["name"]]
    assert held.arguments == first["interruptions"][0]["arguments"]
    assert all(c.name != "refund" or c is held for s in case.trace.steps for c in s.tool_calls)  # one call of it in all
    if scenario == "rejected":
        (told,) = want["tool_messages"]
        assert "awaiting approval" in (held.error or "")  # it never ran: the run paused, and the resumed run did not run it
        assert held.result == told["content"]  # what the SDK sent the model for the rejected call


@pytest.mark.parametrize("kind, fmt", FILES)
def test_an_approved_call_is_one_call_with_its_result(kind: str, fmt: str) -> None:
    """The resumed run's `function` span (first in its run, no request before it) is the held call's execution."""
    want = truth("approved")
    case = only_case("approved", kind, fmt)
    calls = [c for s in case.trace.steps for c in s.tool_calls]
    assert [(c.name, c.result, c.error) for c in calls] == [("refund", want["returned"]["refund"], None)]
    (held,) = held_step(case, want).tool_calls  # in the request that asked for it, with the id the model gave it
    (told,) = want["tool_messages"]
    assert held.id == told["tool_call_id"] and held.arguments == want["runs"][0]["interruptions"][0]["arguments"]
    assert len(case.trace.steps) == want["model_requests"]  # no step of its own for the resumed span


def test_a_resume_runs_the_last_pause_and_an_earlier_unanswered_one_stays_held(tmp_path: Path) -> None:
    # The export's paused and approved runs share a group_id: one case with two pauses of the same call. The approved
    # run's span took the earliest held call (which was never answered), and the approved one kept its held error.
    path = tmp_path / "both.export.jsonl"
    path.write_bytes((DATA / "paused.export.jsonl").read_bytes() + (DATA / "approved.export.jsonl").read_bytes())
    (case,) = extract_path(path, "openai-agents")
    assert isinstance(case, Case), case
    calls = [c for s in case.trace.steps for c in s.tool_calls]
    assert [c.name for c in calls] == ["refund", "refund"]
    first, second = calls
    assert first.result is None and first.error is not None and first.error.startswith("not run: awaiting approval")
    assert (second.result, second.error) == (truth("approved")["returned"]["refund"], None)
