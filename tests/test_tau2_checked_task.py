"""τ²-bench results whose simulations name the wrong task: the benchmark's own action checks say which task ran."""

from __future__ import annotations

import json
from pathlib import Path

from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
from tracejudge.stages.score import ToolCalls
import _forkserver


class _Dataset:
    def __init__(self, path: Path) -> None:
        self.path, self.tasks, self.limit, self.options = path, None, None, {}


def _action(tid: str, n: int, name: str, **arguments) -> dict:
    return {"action_id": f"{tid}_{n}", "requestor": "assistant", "name": name, "arguments": arguments, "info": None, "compare_args": None}


def _sim(task_id: str, checked: list[dict], calls: list[tuple[str, dict]]) -> dict:
    messages = [{"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None, "turn_idx": 0},
                {"role": "user", "content": "Help me.", "tool_calls": None, "turn_idx": 1}]
    for k, (name, args) in enumerate(calls):
        messages.append({"role": "assistant", "content": None, "turn_idx": 2 + 2 * k,
                         "tool_calls": [{"id": f"c{k}", "name": name, "arguments": args, "requestor": "assistant"}]})
        messages.append({"role": "tool", "id": f"c{k}", "content": "ok", "requestor": "assistant", "error": False, "turn_idx": 3 + 2 * k})
    return {"id": f"sim-{task_id}", "task_id": task_id, "trial": 0, "termination_reason": "user_stop", "messages": messages,
            "reward_info": {"reward": 1.0, "action_checks": [{"action": a, "action_match": True, "action_reward": 1.0} for a in checked]}}


def _renumbered(tmp_path: Path) -> Path:
    cancel = [_action("7", 0, "cancel_reservation", reservation_id="ABC")]
    tasks = [{"id": "3", "evaluation_criteria": {"actions": [_action("3", 0, "get_user_details", user_id="u1")]}},
             {"id": "7", "evaluation_criteria": {"actions": cancel}}]
    sims = [_sim("3", cancel, [("cancel_reservation", {"reservation_id": "ABC"})]), _sim("7", cancel, [("cancel_reservation", {"reservation_id": "ABC"})])]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {"environment_info": {"domain_name": "airline"}}, "tasks": tasks, "simulations": sims}, indent=2))
    return path


def test_the_renumbering_warning_is_said_once_a_run_with_a_progress_bar_too(tmp_path: Path):
    # The progress bar counts the simulations by reading the file: its read said the warning a second time.
    import subprocess
    import sys

    import yaml

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(_renumbered(tmp_path)), "format": "tau2-bench"},
                                   "metrics": [{"type": "ToolCalls"}], "run": {"dir": str(tmp_path / "run")}}))
    done = _forkserver.run([str(Path(sys.executable).with_name("tracejudge")), "run", str(cfg)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.count("scored against the task their own action checks name") == 1, done.stderr


def test_a_simulation_is_scored_against_the_task_its_action_checks_name(tmp_path: Path):
    # the shape of a leaderboard submission whose simulations were renumbered 0, 1, … after the run
    cancel = [_action("7", 0, "cancel_reservation", reservation_id="ABC")]
    lookup = [_action("3", 0, "get_user_details", user_id="u1")]
    tasks = [{"id": "3", "evaluation_criteria": {"actions": lookup}}, {"id": "7", "evaluation_criteria": {"actions": cancel}}]
    sims = [_sim("3", cancel, [("cancel_reservation", {"reservation_id": "ABC"})]),  # ran task 7, labelled 3
            _sim("7", cancel, [("cancel_reservation", {"reservation_id": "ABC"})])]  # labelled right
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"info": {"environment_info": {"domain_name": "airline"}}, "tasks": tasks, "simulations": sims}, indent=2))
    fmt = format_for("tau2-bench")
    cases = [extract_record(raw, fmt, None) for raw in fmt.read(_Dataset(path))]
    assert all(isinstance(c, Case) for c in cases), cases
    relabelled, right = cases
    assert relabelled.id == "3-0" and relabelled.metadata["checked_task_id"] == "7"
    assert [(e.name, e.arguments) for e in relabelled.expected_tool_calls] == [("cancel_reservation", {"reservation_id": "ABC"})]
    assert "checked_task_id" not in right.metadata
    metric = ToolCalls(arguments="shallow", pairing="reuse", score="recall")
    assert [metric.evaluate(c).value for c in cases] == [1.0, 1.0], "as the upstream checks say"


def test_the_users_own_tool_calls_are_told_apart_for_a_judge_and_in_the_viewer():
    # τ²-bench's telecom domain: the user calls tools on their own device. A judge prompt and the viewer showed those
    # calls as the agent's (`assistant · step 5` for the user's `check_status_bar`), so judges blamed the agent for them.
    from tracejudge.stages.judge.trace_text import render_steps, user_calls
    from tracejudge.viewer.transcript import transcript_html

    case = Case.model_validate({"id": "t", "metadata": {"user_call_indices": [1]}, "trace": {"steps": [
        {"tool_calls": [{"name": "get_customer", "arguments": {}, "result": "ok"}]},
        {"tool_calls": [{"name": "check_status_bar", "arguments": {}, "result": "no signal"}]},
        {"output": "Please toggle airplane mode."}]}})
    text = render_steps(case.trace.steps, by_user=user_calls(case))
    assert [line for line in text.splitlines() if line.startswith("Step")] == [
        "Step 1:", "Step 2 (the user's own tool calls, not the agent's):", "Step 3:"]
    page = transcript_html(case, "")
    assert "user (own tool calls) · step 1" in page and "assistant · step 0" in page and "assistant · step 2" in page
    assert user_calls(Case.model_validate({"id": "u", "metadata": {"user_call_indices": "1"}})) == frozenset()


def test_per_call_and_per_step_judge_questions_leave_the_users_own_calls_out():
    # The user's own calls were headed as theirs, but ToolCallNecessity and ToolArgumentAccuracy still asked about each
    # as "a call the agent made", StepFaithfulness about the user's steps, and TrajectoryEfficiency counted them.
    from tracejudge.core.registry import build_metric

    case = Case.model_validate({"id": "t", "metadata": {"user_call_indices": [1, 2]}, "trace": {"steps": [
        {"tool_calls": [{"name": "get_customer", "arguments": {}, "result": "ok"}]},
        {"tool_calls": [{"name": "check_status_bar", "arguments": {}, "result": "no signal"},
                        {"name": "toggle_airplane_mode", "arguments": {}, "result": "off"}]},
        {"tool_calls": [{"name": "refuel_data", "arguments": {"gb": 2}, "result": "done"}]},
        {"output": "Fixed."}]}})
    for kind in ("ToolCallNecessity", "ToolArgumentAccuracy"):
        plan = build_metric({"type": kind}).plan(case)
        assert [q.text for q in plan.questions] == ["call 1", "call 4"], kind
    plan = build_metric({"type": "StepFaithfulness"}).plan(case)
    assert [q.text for q in plan.questions] == ["step 1", "step 3", "step 4"]
    plan = build_metric({"type": "TrajectoryEfficiency"}).plan(case)
    assert "(3 steps, 2 tool calls; the user's own 2 calls besides)" in plan.questions[1].text
    only_user = case.model_copy(update={"metadata": {"user_call_indices": [0, 1, 2, 3]}})
    assert build_metric({"type": "ToolCallNecessity"}).plan(only_user).value == 1.0
