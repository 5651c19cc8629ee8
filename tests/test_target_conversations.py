"""Multi-turn cases, failing turns, timeouts, retries: one failing case never stops the run."""

from __future__ import annotations

import time

import live_agents
import pytest
from live_support import TESTS, by_key, live_config, read_jsonl, run_live


def py_target(name: str = "agent", **extra):
    return {"kind": "python", "callable": f"live_agents:{name}", "pythonpath": str(TESTS), "retries": 0, "backoff_s": 0, **extra}


def conv_case(cid: str, **meta) -> dict:
    return {
        "id": cid,
        "input": "My name is Ada.",
        "turns": ["What is my name?", "Spell it."],
        "expected_tool_calls": [{"name": "echo", "arguments": {"turn": t, "text": x}} for t, x in enumerate(["My name is Ada.", "What is my name?", "Spell it."])],
        "metadata": meta,
    }


def test_history_is_passed_and_turns_are_kept(tmp_path):
    live_agents.CALLS.clear()
    run_live(live_config(tmp_path, [conv_case("m")], py_target()))
    calls = sorted(live_agents.CALLS, key=lambda c: c["turn"])
    assert [c["turn"] for c in calls] == [0, 1, 2]
    assert [c["input"] for c in calls] == ["My name is Ada.", "What is my name?", "Spell it."]
    assert calls[0]["history"] == []
    assert calls[2]["history"] == [
        {"input": "My name is Ada.", "output": "turn 0: My name is Ada. (after 0)"},
        {"input": "What is my name?", "output": "turn 1: What is my name? (after 1)"},
    ]
    assert len({c["conversation_id"] for c in calls}) == 1  # one conversation for the case

    (result,) = read_jsonl(tmp_path / "run" / "results.jsonl")
    assert result["status"] == "ok"
    assert result["scores"]["ToolCalls"]["value"] == 1.0  # tool calls of every turn count
    turns = result["metadata"]["turns"]
    assert [t["input"] for t in turns] == ["My name is Ada.", "What is my name?", "Spell it."]
    assert turns[2]["output"] == "turn 2: Spell it. (after 2)"
    assert turns[1]["tool_calls"] == [{"name": "echo", "arguments": {"turn": 1, "text": "What is my name?"}, "result": "ok"}]
    (rec,) = read_jsonl(tmp_path / "run" / "traces.jsonl")
    trace = rec["case"]["trace"]
    assert trace["output"] == "turn 2: Spell it. (after 2)"  # the last answer
    assert len(trace["steps"]) == 3
    usage = trace["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["requests"]) == (30, 15, 3)  # summed over turns


def test_a_failing_turn_ends_the_case_with_the_turns_so_far(tmp_path):
    live_agents.CALLS.clear()
    cases = [conv_case("bad", mode="fail_turn", turn=1), conv_case("good")]
    outcome = run_live(live_config(tmp_path, cases, py_target()))
    assert outcome.summary["status"] == {"ok": 1, "target_error": 1}
    results = by_key(read_jsonl(tmp_path / "run" / "results.jsonl"))
    bad = results[("bad", 0)]
    assert bad["status"] == "target_error" and bad["scores"] == {}
    trace_text = bad["error"].pop("details")["traceback"]  # the agent's own traceback
    assert "live_agents.py" in trace_text and trace_text.rstrip().endswith("ValueError: cannot handle 'What is my name?'")
    assert bad["error"] == {"kind": "target_error", "message": "turn 1 of 3: ValueError: cannot handle 'What is my name?'", "file": None, "line": None, "field": "turns[0]"}
    turns = bad["metadata"]["turns"]
    assert len(turns) == 2  # turn 2 never started
    assert turns[0]["output"] == "turn 0: My name is Ada. (after 0)" and "error" not in turns[0]
    assert turns[1] == {"input": "What is my name?", "output": None, "tool_calls": [], "error": "ValueError: cannot handle 'What is my name?'"}
    assert sorted(c["turn"] for c in live_agents.CALLS if c["case_id"] == "bad") == [0, 1]
    assert results[("good", 0)]["status"] == "ok"
    rec = {t["case_id"]: t for t in read_jsonl(tmp_path / "run" / "traces.jsonl")}["bad"]
    assert rec["status"] == "target_error" and len(rec["case"]["trace"]["steps"]) == 1  # the partial trace is kept


@pytest.mark.parametrize("fn", ["agent", "sync_agent"])
def test_a_hanging_target_times_out_and_the_run_goes_on(tmp_path, fn):
    cases = [{"id": "hang", "input": "?", "metadata": {"mode": "hang"}}, {"id": "ok", "input": "hi", "expected_tool_calls": [{"name": "echo"}]}]
    t0 = time.perf_counter()
    outcome = run_live(live_config(tmp_path, cases, py_target(fn, timeout_s=0.3, concurrency=2)))
    assert time.perf_counter() - t0 < 2.5  # neither the 60 s nor the 3 s hang was waited for
    assert outcome.summary["status"] == {"ok": 1, "target_error": 1}
    results = by_key(read_jsonl(tmp_path / "run" / "results.jsonl"))
    assert results[("hang", 0)]["error"]["message"] == "timed out after 0.3s"
    assert results[("ok", 0)]["scores"]["ToolCalls"]["value"] == 1.0


def test_timeout_mid_conversation_keeps_turns_so_far(tmp_path):
    hang = {"id": "h", "input": "x", "turns": ["y", "z"], "metadata": {"mode": "hang", "turn": 1}}
    run_live(live_config(tmp_path, [hang], py_target(timeout_s=0.3)))
    (result,) = read_jsonl(tmp_path / "run" / "results.jsonl")
    assert result["status"] == "target_error"
    assert result["error"]["message"] == "turn 1 of 3: timed out after 0.3s"
    assert result["metadata"]["turns"] == [
        {"input": "x", "output": "turn 0: x (after 0)", "tool_calls": [{"name": "echo", "arguments": {"turn": 0, "text": "x"}, "result": "ok"}]},
        {"input": "y", "output": None, "tool_calls": [], "error": "timed out after 0.3s"},
    ]


def test_transient_errors_are_retried_with_a_fresh_conversation(tmp_path):
    live_agents.CALLS.clear()
    cases = [
        {"id": "flaky2", "input": "a", "turns": ["b"], "expected_tool_calls": [{"name": "echo"}, {"name": "echo"}], "metadata": {"mode": "flaky", "failures": 2}},
        {"id": "flaky9", "input": "a", "metadata": {"mode": "flaky", "failures": 9}},
        {"id": "crash", "input": "a", "metadata": {"mode": "crash"}},
    ]
    outcome = run_live(live_config(tmp_path, cases, py_target(retries=2)))
    assert outcome.summary["status"] == {"ok": 1, "target_error": 2}
    results = by_key(read_jsonl(tmp_path / "run" / "results.jsonl"))
    assert results[("flaky2", 0)]["status"] == "ok" and results[("flaky2", 0)]["scores"]["ToolCalls"]["value"] == 1.0
    flaky2 = [c for c in live_agents.CALLS if c["case_id"] == "flaky2"]
    assert [c["turn"] for c in flaky2] == [0, 0, 0, 1]  # two failed attempts, then the whole conversation
    assert len({c["conversation_id"] for c in flaky2}) == 3  # each attempt is a fresh conversation
    assert results[("flaky9", 0)]["error"]["message"] == "agent busy, try again (gave up after 3 attempts)"
    assert len([c for c in live_agents.CALLS if c["case_id"] == "flaky9"]) == 3  # 1 + retries
    assert results[("crash", 0)]["error"]["message"] == "RuntimeError: agent crashed"
    assert len([c for c in live_agents.CALLS if c["case_id"] == "crash"]) == 1  # not transient: no retry
    attempts = {t["case_id"]: t["attempts"] for t in read_jsonl(tmp_path / "run" / "traces.jsonl")}
    assert attempts == {"flaky2": 3, "flaky9": 3, "crash": 1}
