"""pydantic-ai runs paused by a tool that raised `ApprovalRequired` / `CallDeferred`, or by an external tool, and resumed.

Recorded by the real pydantic-ai (2.62) against the project's scripted loopback server, by its own instrumentation
(`Agent.instrument_all`, data-format version 5) and with OpenInference's pydantic-ai span processor on top
(`tests/frameworks/record_pydantic_ai_raised_deferrals.py` says what each scenario runs). They read as the
`requires_approval` runs of `tests/test_pydantic_ai_deferred.py` do: a paused run has no answer and its `run_error` says it
paused, naming the held calls, which stay in `metadata.otel.deferred` (they did not run); the run that resumed it goes on
with the same turn; once resumed, a call approved is the tool's run, a denied one fails as not run with the denial as its
result, a deferred or external one has the result the application sent back.

Before: a denied `ApprovalRequired` call's error said it was a `requires_approval` call of which no tool span ran (it was
neither: the tool raised, in a span of its own). Now its error says the tool raised `ApprovalRequired`.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.conventions.pydantic_ai_deferred import DENIED

DATA = Path(__file__).parent / "data" / "pydantic-ai-raised-deferrals"
SCENARIOS = ("approval_raised_paused", "approval_raised_yes", "approval_raised_denied", "deferred_paused", "deferred_result",
             "external_paused", "external_result", "approval_denied_custom", "mixed_paused", "mixed")
NAMES = [f"{s}-{i}" for s in SCENARIOS for i in ("v5", "oi")]
PAUSED = [n for n in NAMES if "_paused-" in n]
DENIAL = "Refunds over 100 EUR need a manager; not refunded."
KINDS = {"refund": "ApprovalRequired", "lookup_ticket": "CallDeferred", "send_email": "external", "cancel_order_ok": "requires_approval"}


@cache
def reading(name: str) -> Case:
    return only_case(DATA / f"{name}.jsonl", "otel")


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def held(name: str) -> list[dict[str, Any]]:
    """The calls the paused run's `DeferredToolRequests` held, approvals first."""
    [first] = truth(name)["held"]
    return [*first["approvals"], *first["calls"]]


@pytest.mark.parametrize("name", NAMES)
def test_calls_are_what_pydantic_ai_ran_or_sent_the_model(name: str) -> None:
    want = truth(name)
    case = reading(name)
    assert case.trace is not None
    expected = []
    for r in want["responses"]:
        for c in r["calls"]:
            returned = c["returned"]
            if returned is None:  # held, never answered: not a call (`metadata.otel.deferred`)
                continue
            ran = {"name": c["name"], "arguments": c["arguments"], "result": returned["content"]} in want["tools_ran"]
            assert ran == (KINDS.get(c["name"]) in (None, "ApprovalRequired", "requires_approval") and returned["outcome"] != "denied")
            error = None
            if returned["outcome"] == "denied":
                assert returned["content"] == DENIAL
                error = DENIED if KINDS[c["name"]] == "requires_approval" else "raised"
            expected.append((c["id"], c["name"], c["arguments"], returned["content"], error))
    got = [(c.id, c.name, c.arguments, c.result, "raised" if c.error and "raised `ApprovalRequired`" in c.error else c.error)
           for c in case.trace.tool_calls()]
    assert got == expected


@pytest.mark.parametrize("name", NAMES)
def test_one_turn_the_resumed_run_going_on_with_it(name: str) -> None:
    want = truth(name)
    case = reading(name)
    assert case.trace is not None
    assert case.input == want["input"] and case.turns == [] and [m.content for m in case.trace.user_messages] == want["user_turns"]
    [turn] = case.metadata["otel"]["turns"]
    assert turn["user_text"] == want["input"] and turn["final_text"] == want["output"] == case.trace.output
    assert len(case.trace.steps) == len(want["responses"]) == case.trace.usage.requests
    for step, r in zip(case.trace.steps, want["responses"], strict=True):
        assert step.thought == (r["text"] if r["calls"] else None)
        assert step.output == (None if r["calls"] else r["text"]) and step.error is None


@pytest.mark.parametrize("name", PAUSED)
def test_a_paused_run_has_no_answer_and_says_what_it_waits_for(name: str) -> None:
    want = truth(name)
    case = reading(name)
    assert case.trace is not None and case.trace.output is None and want["outputs"][0]["deferred"]
    calls = held(name)
    assert [(d["id"], d["name"], d["arguments"], d["deferral"], d["step"]) for d in case.metadata["otel"]["deferred"]] == [
        (c["id"], c["name"], c["arguments"], KINDS[c["name"]], 0) for c in calls]
    first = want["held"][0]
    what = " and ".join(w for w, k in (("approval", "approvals"), ("external execution", "calls")) if first[k])
    names = ", ".join(c["name"] for c in calls)
    assert case.metadata["run_error"].startswith(f"Run paused for {what} of the tool calls of its last model request ({names})")
    assert case.metadata["otel"]["turns"][0]["error"] == case.metadata["run_error"]
    assert [c.name for c in case.trace.tool_calls()] == [r["name"] for r in want["tools_ran"]]  # (the mixed reply's get_weather ran)


@pytest.mark.parametrize("name", PAUSED)
def test_a_held_call_keeps_the_metadata_its_tool_raised_with(name: str) -> None:
    """`ApprovalRequired(metadata=…)` / `CallDeferred(metadata=…)`: what the paused run's `DeferredToolRequests.metadata`
    held for the call is its entry's `metadata` (pydantic-ai's `pydantic_ai.tool.deferral.metadata`, decoded); a call
    with none (the external `send_email`) has no such key."""
    want = {c["id"]: c["metadata"] for c in held(name)}
    got = {d["id"]: d.get("metadata", "(absent)") for d in reading(name).metadata["otel"]["deferred"]}
    assert got == {i: "(absent)" if m is None else m for i, m in want.items()}
    assert any(m is not None for m in want.values()) == ("external" not in name)


@pytest.mark.parametrize("name", [n for n in NAMES if n not in PAUSED])
def test_a_resumed_run_has_no_run_error_and_nothing_left_deferred(name: str) -> None:
    case = reading(name)
    assert "run_error" not in case.metadata and case.metadata["otel"]["deferred"] == []


@pytest.mark.parametrize("inst", ("v5", "oi"))
def test_a_denied_approval_required_call_says_the_tool_raised_it(inst: str) -> None:
    for name in (f"approval_raised_denied-{inst}", f"mixed-{inst}"):
        [refund] = [c for c in reading(name).trace.tool_calls() if c.name == "refund"]  # type: ignore[union-attr]
        assert refund.result == DENIAL and refund.error is not None and refund.error.startswith("not run: the application denied its approval")
        assert "raised `ApprovalRequired`" in refund.error and "`requires_approval` call" not in refund.error
    [cancel] = reading(f"approval_denied_custom-{inst}").trace.tool_calls()  # type: ignore[union-attr]
    assert (cancel.name, cancel.result, cancel.error) == ("cancel_order_ok", DENIAL, DENIED)


@pytest.mark.parametrize("inst", ("v5", "oi"))
def test_results_the_application_sent_back_are_the_calls_results(inst: str) -> None:
    want = truth(f"mixed-{inst}")
    [sent] = want["resumed_with"]
    got = {c.id: c.result for c in reading(f"mixed-{inst}").trace.tool_calls()}  # type: ignore[union-attr]
    assert {k: got[k] for k in sent["calls"]} == sent["calls"] == {"call_t1": "ticket T-9: open, assigned to Ana",
                                                                   "call_e1": {"status": "sent", "message_id": "m-42"}}
    assert got["call_r1"] == sent["approvals"]["call_r1"] == DENIAL
