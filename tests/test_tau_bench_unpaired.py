"""τ-bench runs and tasks whose damage was read without a word: a tool result answering no call, a call with no id, a
task_index given twice, a task with no actions, a run's own task left unchecked beside a tasks file, a user id that is
no text, NaN in arguments, a tool name of whitespace. Each is its record's `invalid_input` naming the field; the runs
are real (the GPT-4o airline trajectories), damaged as a hand edit damages them."""

from __future__ import annotations

import json
import sys

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.errors import AdapterError
from tracejudge.stages.extract.tau_bench import adapt
import _forkserver
from helpers import GONE, edited

_CALL = ("traj", 6, "tool_calls", 0)  # run 0's first call (get_user_details), answered by traj[7]
_ARGS = (*_CALL, "function", "arguments")


@pytest.fixture(scope="module")
def runs(tau_paths) -> list[dict]:
    return json.loads(tau_paths[0].read_text())[:5]


@pytest.fixture(scope="module")
def tasks(tau_paths) -> dict[int, dict]:
    return {t["task_index"]: t for t in json.loads(tau_paths[1].read_text())}


@pytest.mark.parametrize(("path", "value", "field", "why"), [
    (("traj", 7, "tool_call_id"), None, "traj[7].tool_call_id", "got null, and no earlier call without an id is waiting"),
    (("traj", 7, "tool_call_id"), GONE, "traj[7].tool_call_id", "the field is missing"),
    (("traj", 7, "tool_call_id"), "call_x", "traj[7].tool_call_id", "no earlier tool call with id 'call_x' is waiting"),
    ((*_CALL, "id"), None, "traj[7].tool_call_id", "calls waiting for a result: null"),
    ((*_CALL, "id"), GONE, "traj[7].tool_call_id", "no earlier tool call with id 'call_oIHazX6yQrB8hUwl4cRilFKj'"),
    (_ARGS, '{"user_id": NaN}', _ARGS, "the text holds NaN, which is no JSON number"),
    (_ARGS, '{"user_id": [-Infinity]}', _ARGS, "the text holds -Infinity"),
    (_ARGS, '{"user_id": "\\ud800"}', _ARGS, "`user_id` holds a lone surrogate escape"),
    ((*_CALL, "function", "name"), "  ", (*_CALL, "function", "name"), "got only whitespace"),
    ((*_CALL, "function", "name"), "get\x00user", (*_CALL, "function", "name"), "it holds a NUL character"),
    (("info", "task", "actions"), GONE, "info.task.actions", "required list of actions is missing"),
    (("info", "task", "user_id"), None, "info.task.user_id", "expected the id of the task's user (text), got null"),
    (("reward",), float("nan"), "reward", "expected a finite number, got nan"),  # (not the metadata advice to write it as text)
])
def test_what_was_lost_without_a_word_names_its_field(runs, path, value, field, why):
    # Before: the result was dropped (the call kept `result: null`), NaN written as null, a whitespace name or a surrogate
    # named as `trace.steps[…]` or in Python's words, and a task without actions read as one expecting no calls.
    if isinstance(field, tuple):
        field = "traj[6].tool_calls[0].function." + field[-1]
    with pytest.raises(AdapterError) as err:
        adapt(edited(runs[0], path, value), None)
    assert err.value.field == field and str(err.value).startswith(f"{field}: ") and why in str(err.value), str(err.value)
    assert err.value.case_id == "0-0"


def test_a_call_and_its_result_both_without_an_id_pair_by_order(runs):
    # Upstream writes the tool message's `tool_call_id` from the call's own id: a provider that gives none makes both null.
    run = edited(edited(runs[0], (*_CALL, "id"), None), ("traj", 7, "tool_call_id"), None)
    call = adapt(run, None).trace.steps[2].tool_calls[0]
    assert call.id is None and call.result == adapt(runs[0], None).trace.steps[2].tool_calls[0].result is not None


@pytest.mark.parametrize(("path", "value", "field"), [
    (("info", "task", "actions", 0, "kwargs"), [], "info.task.actions[0].kwargs"),
    (("info", "task", "outputs"), "abc", "info.task.outputs"),
    (("info", "task", "actions"), {}, "info.task.actions"),
    (("info", "task", "user_id"), 5, "info.task.user_id"),
])
def test_the_runs_own_task_is_checked_beside_a_tasks_file(runs, tasks, path, value, field):
    with pytest.raises(AdapterError) as err:
        adapt(edited(runs[0], path, value), tasks)
    assert err.value.field == field


@pytest.mark.parametrize(("path", "value", "field"), [
    (("user_id",), None, "tasks[task_index=0].user_id"),
    (("user_id",), ["mia_li_3668"], "tasks[task_index=0].user_id"),
    (("actions",), GONE, "tasks[task_index=0].actions"),
])
def test_a_task_of_the_tasks_file_that_upstream_refuses_names_its_field(runs, tasks, path, value, field):
    # A user id that is no text skipped the comparison with the run's user; no actions read as no expected calls.
    with pytest.raises(AdapterError) as err:
        adapt(runs[0], {**tasks, 0: edited(tasks[0], path, value)})
    assert err.value.field == field


def test_a_task_index_given_twice_is_said_in_a_real_process(tmp_path, runs, tau_paths):
    task_list = json.loads(tau_paths[1].read_text())[:5]
    task_list[1] = edited(task_list[1], ("task_index",), 0)
    tasks_path = tmp_path / "tasks.json"
    tasks_path.write_text("[\n" + ",\n".join(json.dumps(t) for t in task_list) + "\n]\n")
    data = tmp_path / "runs.json"
    data.write_text(json.dumps([edited(runs[2], ("traj", 7, "tool_call_id"), None), *runs[:2], *runs[3:]], indent=2))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {data}, format: tau-bench, tasks: {tasks_path}}}\nmetrics: [{{type: TrajectoryMatch}}]\n"
                   f"run: {{dir: {tmp_path / 'run'}, executor: inprocess}}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True,
                           timeout=300)
    assert done.returncode == 1, done.stderr
    results = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    dup = f"duplicate task_index 0 at {tasks_path}:3 (first at {tasks_path}:2)"
    assert results["0-0"]["error"]["message"] == f"task_id: task 0 cannot be told in the tasks file: {dup}"
    assert results["1-0"]["error"]["message"] == f"task_id: task 1 is not in the tasks file; it gives a task_index twice: {dup}"
    assert (results["2-0"]["error"]["field"], results["2-0"]["error"]["line"]) == ("traj[7].tool_call_id", 2)
    assert results["3-0"]["status"] == results["4-0"]["status"] == "ok"


def test_the_tasks_format_refuses_a_task_without_actions_or_with_a_user_id_that_is_no_text(tmp_path, tau_paths):
    task_list = json.loads(tau_paths[1].read_text())[:3]
    task_list[1] = edited(task_list[1], ("actions",), GONE)
    task_list[2] = edited(task_list[2], ("user_id",), None)
    path = tmp_path / "tasks.json"
    path.write_text("[\n" + ",\n".join(json.dumps(t) for t in task_list) + "\n]\n")
    fmt = registry.format_for("tau-bench-tasks")
    got = [extract_record(raw, fmt, None) for raw in fmt.read(DatasetConfig(path=path, format="tau-bench-tasks"))]
    assert got[0].id == "0"
    assert [(cid, err.field, err.line) for cid, err in got[1:]] == [("1", "actions", 3), ("2", "user_id", 4)]


@pytest.mark.parametrize("index", ["1", True, 1.0])
def test_a_task_index_that_is_no_integer_is_not_taken_for_one(runs, tau_paths, tmp_path, index):
    from tracejudge.stages.extract.tau_bench import load_tasks

    task_list = json.loads(tau_paths[1].read_text())[:3]
    task_list[1] = edited(task_list[1], ("task_index",), index)
    path = tmp_path / "tasks.json"
    path.write_text("[\n" + ",\n".join(json.dumps(t) for t in task_list) + "\n]\n")
    with pytest.raises(AdapterError) as err:
        adapt(runs[1], load_tasks(path))
    assert str(err.value) == (f"task_id: task 1 could not be read from the tasks file ({path}:3: task_index is not an integer, "
                              f"got {'a string' if index == '1' else 'a boolean' if index is True else 'a number'} {index!r})")


def test_a_call_whose_result_message_is_lost_is_named_not_answered_by_a_later_call_of_its_id(runs):
    # Upstream reuses call ids: run 0's first call's id comes back at traj[16]. With its result (traj[7]) lost, that
    # later result was taken for the first call (get_user_details got calculate's 255.0) and calculate got none.
    run = json.loads(json.dumps(runs[0]))
    first_id = run["traj"][6]["tool_calls"][0]["id"]
    assert any(tc.get("id") == first_id for m in run["traj"][8:] for tc in m.get("tool_calls") or [])
    del run["traj"][7]
    with pytest.raises(AdapterError) as err:
        adapt(run, None)
    assert err.value.field == "traj[6].tool_calls[0]" and err.value.case_id == "0-0"
    assert "the call's result is missing (no tool message answers it before traj[7]" in str(err.value)
