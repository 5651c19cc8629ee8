"""pydantic-ai runs paused for approval and resumed, and calls it did not execute, read as the agent ran them.

Recorded by the real pydantic-ai (2.62) against the project's scripted loopback server, by its own instrumentation (data-format
version 5, the default) and with OpenInference's pydantic-ai span processor on top (`tests/frameworks/record_pydantic_ai_deferred.py`
says what each scenario runs). Each `<recording>.truth.json` is what the agent's `result.all_messages()` said after the last run:
the user prompts, every response with its calls and what pydantic-ai recorded as each call's return and outcome, each run's
output, and the tools that really ran.

Before: a run resumed with `deferred_tool_results` (no prompt) read as a second user turn repeating the first prompt; the paused
run's answer was pydantic-ai's `DeferredToolRequests` dump; a denied call was only in `metadata.otel.deferred`, with the words
beside it as the step's output and the denial sent to the model nowhere; a call `end_strategy="early"` skipped read as a call
with no result and no error; a structured answer given beside calls was the step's thought. Now: one turn per prompt, the
resumed run going on with the paused one; a paused run has no answer and its `run_error` says it paused; an approved call has
its result, a denied one fails as not run with the denial as its result, a skipped one fails as not run naming pydantic-ai's
note; the structured answer is the output of the step that gave it, beside calls or not.

Before: a run resumed with a prompt too left the paused run's turn with the pause as its error, though the call ran. Now: a
paused run that a later run resumed has no error (still no answer); only a run never resumed says it paused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.conventions.pydantic_ai_deferred import DENIED, skipped

DATA = Path(__file__).parent / "data" / "pydantic-ai-deferred"
SCENARIOS = ("output_with_call", "output_with_call_early", "output_after_tool", "approve_yes", "approve_no", "approve_paused",
             "approve_mixed_multiturn", "resume_with_prompt")
NAMES = [f"{s}-{i}" for s in SCENARIOS for i in ("v5", "oi")]
OUTPUT_TOOL = "final_result"


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def expected_call(c: dict[str, Any], ran: list[dict[str, Any]]) -> tuple[Any, ...]:
    """(id, name, arguments, result, error) a truth call reads as: what it returned, failed when pydantic-ai did not run it."""
    returned = c["returned"]
    if returned is None:  # held back, never answered: not a call (`metadata.otel.deferred`)
        return ()
    did_run = {"name": c["name"], "arguments": c["arguments"], "result": returned["content"]} in ran
    if returned["outcome"] == "denied":
        error = DENIED
    elif returned["content"].startswith("Tool not executed"):
        error = skipped(returned["content"])
    else:
        assert did_run, c
        error = None
    assert did_run == (error is None)
    return c["id"], c["name"], c["arguments"], returned["content"], error


@pytest.mark.parametrize("name", NAMES)
def test_calls_results_and_errors_are_what_pydantic_ai_did(name: str) -> None:
    want = truth(name)
    case = only_case(DATA / f"{name}.jsonl", "otel")
    assert case.trace is not None
    expected = [e for r in want["responses"] for c in r["calls"] if c["name"] != OUTPUT_TOOL and (e := expected_call(c, want["tools_ran"]))]
    got = [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]
    assert got == expected


@pytest.mark.parametrize("name", NAMES)
def test_one_turn_per_prompt_and_the_resumed_run_goes_on_with_it(name: str) -> None:
    want = truth(name)
    case = only_case(DATA / f"{name}.jsonl", "otel")
    assert case.trace is not None
    assert case.input == want["input"]
    assert [m.content for m in case.trace.user_messages] == want["user_turns"]
    assert case.turns == want["user_turns"][1:]
    turns = case.metadata["otel"]["turns"]
    assert [t["user_text"] for t in turns] == want["user_turns"]
    # the turns' final texts: each prompt's last run's output (a paused run's `DeferredToolRequests` is none)
    joined = len(want["outputs"]) > len(want["user_turns"])  # (the recordings' resumes sent no prompt, or each did)
    finals, run = [], 0
    for _ in want["user_turns"]:
        while joined and run + 1 < len(want["outputs"]) and isinstance(want["outputs"][run], dict):
            run += 1  # paused, then resumed with no prompt: the same turn
        finals.append(want["outputs"][run] if isinstance(want["outputs"][run], str) else None)
        run += 1
    assert [t["final_text"] for t in turns] == finals
    assert case.trace.output == want["output"]


@pytest.mark.parametrize("name", NAMES)
def test_steps_say_what_each_response_said_and_answered(name: str) -> None:
    want = truth(name)
    case = only_case(DATA / f"{name}.jsonl", "otel")
    assert case.trace is not None
    steps = case.trace.steps
    assert len(steps) == len(want["responses"]) == case.trace.usage.requests
    for step, r in zip(steps, want["responses"], strict=True):
        calls = [c for c in r["calls"] if c["name"] != OUTPUT_TOOL]
        answered = any(c["name"] == OUTPUT_TOOL for c in r["calls"])
        assert [c.id for c in step.tool_calls] == [c["id"] for c in calls if c["returned"] is not None]
        # a structured answer is the output of the step that gave it, beside calls or not; words beside calls are thought
        assert step.output == (want["outputs"][-1] if answered else None if r["calls"] else r["text"])
        assert step.thought == (r["text"] if r["calls"] else None)
        assert step.error is None


@pytest.mark.parametrize("inst", ("v5", "oi"))
def test_a_paused_run_has_no_answer_and_says_it_paused(inst: str) -> None:
    want = truth(f"approve_paused-{inst}")
    case = only_case(DATA / f"approve_paused-{inst}.jsonl", "otel")
    assert case.trace is not None and case.trace.output is None
    assert case.trace.tool_calls() == []  # the held call did not run: kept apart, not counted
    [held] = want["outputs"][0]["deferred"]["approvals"]
    assert [(d["id"], d["name"], d["deferral"], d["arguments"]) for d in case.metadata["otel"]["deferred"]] == [
        (held, "cancel_order_ok", "requires_approval", {"order_id": "#W7"})]
    error = case.metadata["run_error"]
    assert error.startswith("Run paused for approval of the tool calls of its last model request (cancel_order_ok)")
    assert case.metadata["otel"]["turns"][0]["error"] == error and case.metadata["otel"]["turns"][0]["final_text"] is None
    assert case.trace.steps[0].thought == "I will cancel it." and case.trace.steps[0].output is None


@pytest.mark.parametrize("name", [n for n in NAMES if not n.startswith("approve_paused")])
def test_a_resumed_or_finished_run_has_no_run_error_and_nothing_left_deferred(name: str) -> None:
    case = only_case(DATA / f"{name}.jsonl", "otel")
    assert "run_error" not in case.metadata
    assert case.metadata["otel"]["deferred"] == []
    assert all("error" not in t for t in case.metadata["otel"]["turns"])


def test_a_resumed_run_given_a_prompt_is_a_turn_of_its_own(tmp_path: Path) -> None:
    """`agent.run("…", deferred_tool_results=…)`: the prompt the resumed run sent beside the tool returns is the user speaking."""
    text = (DATA / "approve_no-v5.jsonl").read_text()
    denial = json.dumps({"type": "tool_call_response", "id": "call_a1", "name": "cancel_order_ok", "result": "The tool call was denied."},
                        separators=(",", ":"))
    assert json.dumps(denial)[1:-1] in text
    prompt = json.dumps({"type": "text", "content": "Never mind."}, separators=(",", ":"))
    path = tmp_path / "approve_no-prompted.jsonl"
    path.write_text(text.replace(json.dumps(denial)[1:-1], json.dumps(denial + "," + prompt)[1:-1]))
    case: Case = only_case(path, "otel")
    assert case.trace is not None
    assert [m.content for m in case.trace.user_messages] == ["Cancel #W7.", "Never mind."]
    assert [t["user_text"] for t in case.metadata["otel"]["turns"]] == ["Cancel #W7.", "Never mind."]
    # the paused run's turn: no answer, but no pause error (the next run resumed it); the denied call keeps its result and error
    assert case.metadata["otel"]["turns"][0]["final_text"] is None
    assert all("error" not in t for t in case.metadata["otel"]["turns"]) and "run_error" not in case.metadata
    [call] = case.trace.tool_calls()
    assert (call.result, call.error) == ("The tool call was denied.", DENIED)


@pytest.mark.parametrize("inst", ("v5", "oi"))
def test_a_run_resumed_with_a_prompt_leaves_the_paused_turn_without_a_pause_error(inst: str) -> None:
    """`agent.run("Also, be quick.", message_history=…, deferred_tool_results=…)`, recorded: the paused run's turn was resumed
    (its held call ran in the next run), so it did not end paused; it still returned no answer, its words stay intermediate."""
    want = truth(f"resume_with_prompt-{inst}")
    case = only_case(DATA / f"resume_with_prompt-{inst}.jsonl", "otel")
    assert case.trace is not None
    [call] = case.trace.tool_calls()
    assert (call.name, call.result, call.error) == ("cancel_order_ok", "cancelled #W7", None)
    assert want["tools_ran"] == [{"name": "cancel_order_ok", "arguments": {"order_id": "#W7"}, "result": "cancelled #W7"}]
    assert "run_error" not in case.metadata and case.metadata["otel"]["deferred"] == []
    turns = case.metadata["otel"]["turns"]
    assert [(t["user_text"], t["final_text"], t["intermediate_texts"], t.get("error")) for t in turns] == [
        ("Cancel #W7.", None, ["I will cancel it."], None), ("Also, be quick.", "Done, #W7 cancelled.", [], None)]
    assert case.trace.output == want["output"] == "Done, #W7 cancelled."
