"""Every format keeps every user turn, in order, each placed before the step that answered it (`Trace.user_messages`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import live_agents
import pytest
from conftest import extract_lines
from helpers import DATA
from live_support import TESTS, live_config, read_jsonl, run_live
from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record

TAU = DATA / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"
TAU2 = sorted((DATA / "tau2_bench").glob("**/*_1trials.json"))


class _Dataset:
    def __init__(self, path: Path, limit: int | None = None) -> None:
        self.path, self.tasks, self.limit, self.options = path, None, limit, {}


def _cases(fmt_name: str, path: Path, limit: int | None = None) -> list[Case]:
    fmt = format_for(fmt_name)
    out = []
    for raw in fmt.read(_Dataset(path, limit)):
        case = extract_record(raw, fmt, fmt.prepare(_Dataset(path)) if fmt_name == "tau-bench" else None)
        assert isinstance(case, Case), case
        out.append(case)
    return out


def _said(case: Case) -> list[tuple[int, Any]]:
    assert case.trace is not None
    return [(m.step, m.content) for m in case.trace.user_messages]


def _tau_expected(traj: list[dict[str, Any]]) -> list[tuple[int, Any]]:
    # τ-bench: every assistant message is one step, so a user message precedes step (assistant messages before it).
    out, steps = [], 0
    for msg in traj:
        if msg["role"] == "user":
            out.append((steps, msg["content"]))
        elif msg["role"] == "assistant":
            steps += 1
    return out


@pytest.fixture(scope="module")
def tau_runs() -> list[dict[str, Any]]:
    if not TAU.exists():
        pytest.fail(f"the shared trace data is missing: expected {TAU}")
    return json.loads(TAU.read_text())


def test_tau_bench_keeps_every_user_message_in_order_and_placed(tau_runs):
    cases = _cases("tau-bench", TAU)
    assert len(cases) == len(tau_runs) == 200
    total = 0
    for run, case in zip(tau_runs, cases, strict=True):
        users = [m for m in run["traj"] if m["role"] == "user"]
        assert len(case.trace.user_messages) == len(users)  # every user message, the closing ###STOP### one included
        assert _said(case) == _tau_expected(run["traj"])  # texts as recorded, in order, each before the step that answered it
        assert case.input == users[0]["content"]  # the first request stays the case's input
        total += len(users)
    assert total > 2 * len(cases)  # the demo's conversations are multi-turn: far more than the first request each
    # 147 conversations end with the simulated user's ###STOP###, a reply no step answered: it sits after the last step.
    ended = [c for c in cases if "###STOP###" in str(c.trace.user_messages[-1].content) and c.trace.user_messages[-1].step == len(c.trace.steps)]
    assert len(ended) == 147


@pytest.mark.skipif(not TAU2, reason="the tau2-bench developer files are not beside the repository")
def test_tau2_bench_keeps_every_user_turn_and_user_tool_calls_stay_steps():
    for path in TAU2:
        sims = json.loads(path.read_text())["simulations"]
        cases = _cases("tau2-bench", path)
        for sim, case in zip(sims, cases, strict=True):
            expected, steps = [], 0
            for msg in sim["messages"]:
                if msg["role"] == "user" and msg.get("content"):
                    expected.append((steps, msg["content"]))
                if msg["role"] == "assistant" or (msg["role"] == "user" and msg.get("tool_calls")):
                    steps += 1
            assert _said(case) == expected, (path.name, case.id)
            assert len(case.trace.steps) == steps
            if expected:
                assert case.input == expected[0][1]


def test_openai_messages_on_the_tau_bench_conversations(tmp_path, tau_runs):
    runs = tau_runs[:40]
    got = extract_lines(tmp_path, "openai-messages", [{"id": f"r{i}", "messages": r["traj"]} for i, r in enumerate(runs)])
    for run, case in zip(runs, got, strict=True):
        assert isinstance(case, Case), case
        assert _said(case) == _tau_expected(run["traj"])


def _anthropic(traj: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A τ-bench conversation in Anthropic's shape: tool results travel in user messages of `tool_result` blocks."""
    out: list[dict[str, Any]] = []
    for msg in traj[1:]:
        if msg["role"] == "user":
            out.append({"role": "user", "content": msg["content"]})
        elif msg["role"] == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": msg["content"]}] if msg.get("content") else []
            blocks += [{"type": "tool_use", "id": tc["id"], "name": tc["function"]["name"], "input": json.loads(tc["function"]["arguments"])}
                       for tc in msg.get("tool_calls") or []]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": msg["tool_call_id"], "content": msg["content"]}]})
    return out


def test_anthropic_messages_tool_results_alone_are_not_user_turns(tmp_path, tau_runs):
    runs = tau_runs[:40]
    records = [{"id": f"r{i}", "system": r["traj"][0]["content"], "messages": _anthropic(r["traj"])} for i, r in enumerate(runs)]
    got = extract_lines(tmp_path, "anthropic-messages", records)
    for run, case in zip(runs, got, strict=True):
        assert isinstance(case, Case), case
        assert _said(case) == _tau_expected(run["traj"])  # the many tool_result messages added no turn
    mixed = [{"role": "user", "content": "find my booking"},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "find", "input": {}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "none"}, {"type": "text", "text": "try ABC123"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "Found ABC123."}]},
             {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "http://127.0.0.1/x.png"}}]}]
    (case,) = extract_lines(tmp_path, "anthropic-messages", [{"id": "m", "messages": mixed}])
    assert _said(case) == [(0, "find my booking"), (1, "try ABC123"), (2, [{"type": "image", "source": {"type": "url", "url": "http://127.0.0.1/x.png"}}])]


def test_openai_responses_items_and_content_parts(tmp_path):
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "weather in Paris?"}]},
             {"type": "reasoning", "summary": [{"type": "summary_text", "text": "need the tool"}]},
             {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city": "Paris"}'},
             {"type": "function_call_output", "call_id": "c1", "output": "21C"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "21C in Paris."}]},
             {"type": "message", "role": "user", "content": "and in Rome?"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I cannot tell."}]}]
    (case,) = extract_lines(tmp_path, "openai-messages", [{"id": "r", "items": items}])
    assert [len(s.tool_calls) for s in case.trace.steps] == [1, 0, 0]
    assert _said(case) == [(0, "weather in Paris?"), (2, "and in Rome?")]


def test_native_and_multivon_carry_user_messages_or_leave_them_empty(tmp_path):
    steps = [{"output": "Which date?"}, {"output": "Booked for May 20."}]
    said = [{"step": 0, "content": "Book a flight"}, {"step": 1, "content": "May 20"}, {"step": 2, "content": "thanks"}]
    native = [{"id": "a", "input": "Book a flight", "trace": {"steps": steps, "user_messages": said}},
              {"id": "b", "input": "Book a flight", "trace": {"steps": steps}},
              {"id": "c", "input": "x", "trace": {"steps": steps, "user_messages": [{"step": 0, "content": "x"}, {"step": 3, "content": "y"}]}}]
    a, b, c = extract_lines(tmp_path, "native", native)
    assert _said(a) == [(0, "Book a flight"), (1, "May 20"), (2, "thanks")]
    assert b.trace.user_messages == [] and b.input == "Book a flight"  # the judge then uses `input` alone
    cid, err = c  # an invalid record: (id, error) naming the field and the misplaced message
    assert (cid, err.kind, err.line, err.field) == ("c", "invalid_input", 3, "trace") and "user_messages[1].step is 3" in err.message
    multivon = [{"input": "Book a flight", "agent_trace": steps, "user_messages": said}, {"input": "Book a flight", "agent_trace": steps}]
    m1, m2 = extract_lines(tmp_path, "multivon", multivon)
    assert _said(m1) == _said(a) and m2.trace.user_messages == []


def _py_target() -> dict[str, Any]:
    return {"kind": "python", "callable": "live_agents:agent", "pythonpath": str(TESTS), "retries": 0, "backoff_s": 0}


def test_live_conversation_turns_become_user_messages(tmp_path):
    live_agents.CALLS.clear()
    cases = [{"id": "m", "input": "My name is Ada.", "turns": ["What is my name?", "Spell it."]},
             {"id": "bad", "input": "My name is Ada.", "turns": ["What is my name?", "Spell it."], "metadata": {"mode": "fail_turn", "turn": 1}},
             {"id": "one", "input": "hi"}]
    run_live(live_config(tmp_path, cases, _py_target()))
    recs = {r["case_id"]: r["case"]["trace"] for r in read_jsonl(tmp_path / "run" / "traces.jsonl")}
    # The agent makes one step per turn: each turn the target was given sits before that turn's step.
    assert recs["m"]["user_messages"] == [{"step": 0, "content": "My name is Ada."}, {"step": 1, "content": "What is my name?"},
                                          {"step": 2, "content": "Spell it."}]
    # The failed turn was given too: it sits after the partial trace's last step.
    assert recs["bad"]["user_messages"] == [{"step": 0, "content": "My name is Ada."}, {"step": 1, "content": "What is my name?"}]
    assert len(recs["bad"]["steps"]) == 1
    assert recs["one"].get("user_messages", []) == []  # a single-turn case: its input is the request, as before
