"""A sub-agent run inside a function tool, as OpenLLMetry's openai-agents instrumentation records it.

The recordings in `tests/data/agents-openllmetry-nested/` were made by the real libraries, openai-agents 0.24.0
under OpenLLMetry's `opentelemetry-instrumentation-openai-agents` 0.62.4 (not a test requirement: install it to
re-record), against the project's loopback fake server, with `tests/frameworks/record_agents_openllmetry.py`
(`python tests/frameworks/record_agents_openllmetry.py tests/data/agents-openllmetry-nested`); each
`<name>.truth.json` is what the application itself got (its run's items, final output, the tokens the server
reported). The run: a Planner asks in one reply for `research` (whose body runs `Runner.run(Researcher, ...)`;
the Researcher calls `search` and answers "The Louvre opens at 9:00."), `lookup` and `broken` (raises), then
answers a `Plan`. Recorded on the Responses API (`run`, `stream`) and on Chat Completions; plus `handoff`, a
Triage → Billing handoff and a second `Runner.run` of the conversation.

The instrumentation parents every agent span on the trace's `Agent Workflow` span: the Researcher's agent span is
a sibling of the Planner's, though it started and ended while the `research.tool` span ran. Read by parent ids,
the Researcher was a second user turn: its prompt a user message, its answer the case's output, its steps laid out
after the Planner's final answer. Now its steps are inside the `research` call (`metadata.nested_steps`), as
tracejudge reads OpenInference's and the SDK export's agents run as tools, and the Planner's answer is the output.
Also: the failed call's error was the SDK's error object as Python text; and on Chat Completions the
instrumentation records no output or usage of any request, which a warning now says: the calls (with their ids) are
read off the next request's replay of them, the final answer stays unknown.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from helpers import calls, layout
from tracejudge.core.records import Case
from tracejudge.stages.judge.trace_text import nested_steps, render_steps

DATA = Path(__file__).parent / "data" / "agents-openllmetry-nested"
BROKEN = "Error running tool (non-fatal): Tool execution failed. Error details are redacted."  # the SDK redacts the raised text
SCOPE = "opentelemetry.instrumentation.openai_agents"


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def expected_calls(t: dict[str, Any], ids: bool = True) -> list[tuple[Any, ...]]:
    """The truth's calls as `calls` reads them: the Planner's in the model's order, then the ones its sub-agent made."""
    out = []
    for c in [*t["calls"], *t["sub_agent"]["calls"]]:
        out.append((c["id"] if ids else None, c["name"], c["arguments"], c["result"], BROKEN if c["name"] in t["failed"] else None))
    return out


@pytest.mark.parametrize("name", ["agents-tl-responses-run", "agents-tl-responses-stream"])
def test_the_sub_agents_steps_are_inside_the_call_that_ran_it_and_the_planners_answer_is_the_output(name: str) -> None:
    t = truth(name)
    case = only_case(DATA / f"{name}.jsonl", "otel")
    assert case.trace is not None
    assert case.input == t["input"]
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, t["input"])]  # the sub-agent's prompt is no user turn
    assert case.turns == []
    assert calls(case) == expected_calls(t)
    sub = t["sub_agent"]
    assert layout(case) == [(["research", "lookup", "broken"], None), (["search"], None), ([], sub["output"]), ([], t["output_text"])]
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 0, "agent": sub["agent"]}, {"step": 2, "call": 0, "agent": sub["agent"]}]
    assert case.trace.output == t["output_text"] and json.loads(case.trace.output) == t["output"]
    (turn,) = case.metadata["otel"]["turns"]
    assert (turn["user_text"], turn["final_text"], turn["intermediate_texts"]) == (t["input"], t["output_text"], [])  # its answer is the call's
    assert (turn["steps"], turn["calls"]) == ([0, 4], [0, 4])
    assert turn["agents"] == ["Planner", "Researcher"]
    usage = case.trace.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.requests) == tuple(t["tokens"].values())
    assert "run_error" not in case.metadata and "requests_without_usage" not in case.metadata


@pytest.mark.parametrize("name", ["agents-tl-responses-run", "agents-tl-responses-stream", "agents-tl-chat_completions-run"])
def test_group_by_run_keeps_the_sub_agent_in_the_call_that_ran_it(name: str) -> None:
    # Both agent spans sit under the workflow span and overlap in time: `group_by: run` read them as two runs side by
    # side, the Researcher's a case of its own.
    whole = only_case(DATA / f"{name}.jsonl", "otel")
    by_run = only_case(DATA / f"{name}.jsonl", "otel", group_by="run")
    assert by_run.trace is not None and whole.trace is not None
    assert calls(by_run) == calls(whole) and layout(by_run) == layout(whole) and by_run.trace.output == whole.trace.output
    assert by_run.metadata["nested_steps"] == whole.metadata["nested_steps"]


def test_a_judge_reads_which_steps_ran_inside_the_research_call() -> None:
    case = only_case(DATA / "agents-tl-responses-run.jsonl", "otel")
    assert case.trace is not None
    text = render_steps(case.trace.steps, nested=nested_steps(case))
    assert " call 1: research({topic:Louvre opening hours})\n  ran steps 2–3 before returning\n  result: The Louvre opens at 9:00." in text
    assert "Step 2:\n [sub-agent Researcher, inside call 1: research]\n call 4: search({q:Louvre hours})" in text
    assert "Step 3:\n [sub-agent Researcher, inside call 1: research]\n output: The Louvre opens at 9:00.\nStep 4:\n output: {" in text


def test_on_chat_completions_the_nesting_holds_and_a_warning_says_what_the_instrumentation_did_not_record(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    t = truth("agents-tl-chat_completions-run")
    path = tmp_path / "chat.jsonl"  # (a file of its own: the warning is said once per file in a process)
    path.write_bytes((DATA / "agents-tl-chat_completions-run.jsonl").read_bytes())
    with caplog.at_level(logging.WARNING):
        case = only_case(path, "otel")
    assert case.trace is not None
    # the requests hold no output: their calls' ids from the next request's replay of them, no final output; the tool
    # spans give the rest
    assert calls(case) == expected_calls(t)
    assert layout(case) == [(["research", "lookup", "broken"], None), (["search"], None), ([], None), ([], None)]
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 0, "agent": "Researcher"}, {"step": 2, "call": 0, "agent": "Researcher"}]
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, t["input"])]
    assert case.trace.output is None
    usage = case.trace.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.requests) == (None, None, t["tokens"]["requests"])
    assert case.metadata["requests_without_usage"] == 4
    said = [r.getMessage() for r in caplog.records if "openai-agents instrumentation" in r.getMessage()]
    assert len(said) == 1, said
    assert f"{path}:1: conversation {case.id}: 4 of its 4 model requests" in said[0]
    assert "no output and no token usage" in said[0] and "Chat Completions" in said[0] and "no final output" in said[0]
    with caplog.at_level(logging.WARNING):
        only_case(path, "otel")
    assert len([r for r in caplog.records if "openai-agents instrumentation" in r.getMessage()]) == 1  # once per file


def test_a_responses_run_records_its_outputs_so_no_such_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        only_case(DATA / "agents-tl-responses-stream.jsonl", "otel")
    assert not [r for r in caplog.records if "openai-agents instrumentation" in r.getMessage()]


def test_the_handoff_conversation_still_reads_as_its_two_turns() -> None:
    t = truth("agents-tl-handoff")
    case = only_case(DATA / "agents-tl-handoff.jsonl", "otel")
    assert case.trace is not None
    assert (case.input, case.turns) == (t["user_turns"][0], t["user_turns"][1:])
    assert [m.content for m in case.trace.user_messages] == t["user_turns"]
    got = [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]
    assert got == [(c["id"], c["name"], c["arguments"], json.loads(c["result"]) if c["name"].startswith("transfer_to_") else c["result"], None)
                   for c in t["calls"]]
    assert [turn["final_text"] for turn in case.metadata["otel"]["turns"]] == t["answers"]
    assert case.trace.output == t["output"] and "nested_steps" not in case.metadata
    usage = case.trace.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.requests) == tuple(t["tokens"].values())


# --- hand-edited variants (one fact changed each, said here): the nesting needs the recording's evidence ------------

def _edited(tmp_path: Path, edit: Any) -> Path:
    """`agents-tl-responses-run.jsonl` with `edit(scope, span)` applied to every span (a hand-edited copy)."""
    docs = [json.loads(line) for line in (DATA / "agents-tl-responses-run.jsonl").read_text().splitlines()]
    for doc in docs:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    edit(ss["scope"], span)
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def test_an_agent_span_that_outlasted_the_tool_span_is_not_put_inside_it(tmp_path: Path) -> None:
    # hand edit: the Researcher's agent span ends 1 ms after `research.tool` ended (no longer inside its window)
    tool_end = next(int(s["endTimeUnixNano"]) for line in (DATA / "agents-tl-responses-run.jsonl").read_text().splitlines()
                    for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"] if s["name"] == "research.tool")

    def edit(scope: dict[str, Any], span: dict[str, Any]) -> None:
        if span["name"] == "Researcher.agent":
            span["endTimeUnixNano"] = str(tool_end + 1_000_000)

    case = only_case(_edited(tmp_path, edit), "otel")
    assert case.trace is not None and "nested_steps" not in case.metadata
    assert [m.content for m in case.trace.user_messages] == ["Plan my Louvre visit.", "Research: Louvre opening hours"]  # read by parent ids


def test_the_rule_is_this_instrumentations_only(tmp_path: Path) -> None:
    # hand edit: the spans' instrumentation scope renamed; a span of another scope that only looks the same is not its
    def edit(scope: dict[str, Any], span: dict[str, Any]) -> None:
        if scope.get("name") == SCOPE:
            scope["name"] = "some.other.instrumentation"

    case = only_case(_edited(tmp_path, edit), "otel")
    assert case.trace is not None and "nested_steps" not in case.metadata
    assert len(case.trace.user_messages) == 2
