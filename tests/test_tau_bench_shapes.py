"""τ-bench runs and tasks holding a message or an action upstream never writes: each is its record's `invalid_input`
naming the field, file and line; the other records read as before. The runs are real (the GPT-4o airline trajectories),
damaged as a hand edit or another writer damages them."""

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


@pytest.fixture(scope="module")
def runs(tau_paths) -> list[dict]:
    return json.loads(tau_paths[0].read_text())[:5]


def test_a_message_with_a_bad_role_or_content_is_invalid_input_in_a_real_process(tmp_path, runs):
    # Upstream's roles are system, user, assistant and tool; a user's content is text. Such a message was passed over
    # without a word: the first user turn was lost and the second taken for the case's input.
    damaged = [edited(runs[0], ("traj", 1, "role"), None), edited(runs[1], ("traj", 1, "role"), GONE),
               edited(runs[2], ("traj", 1, "role"), "bot"), edited(runs[3], ("traj", 1, "content"), {"x": 1}), runs[4]]
    data = tmp_path / "runs.json"
    data.write_text(json.dumps(damaged, indent=2))
    lines = data.read_text().splitlines()
    starts = [i + 1 for i, line in enumerate(lines) if line == "  {"]  # (each run's `{`, as `indent=2` writes it)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {data}, format: tau-bench}}\nmetrics: [{{type: TrajectoryMatch}}]\n"
                   f"run: {{dir: {tmp_path / 'run'}, executor: inprocess}}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True,
                           timeout=300)
    assert done.returncode == 1, done.stderr  # the gate: invalid records
    results = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    roles = "expected 'system', 'user', 'assistant' or 'tool'"
    want = {"0-0": ("traj[1].role", f"traj[1].role: {roles}; got null"),
            "1-0": ("traj[1].role", f"traj[1].role: {roles}; the field is missing"),
            "2-0": ("traj[1].role", f"traj[1].role: {roles}; got a string 'bot'"),
            "3-0": ("traj[1].content", "traj[1].content: expected the user message's text; got an object")}
    for k, (case_id, (field, message)) in enumerate(want.items()):
        error = results[case_id]["error"]
        assert results[case_id]["status"] == "invalid_input"
        assert (error["field"], error["message"], error["file"], error["line"]) == (field, message, str(data), starts[k])
    assert results["4-0"]["status"] == "ok"


_TOOL = ("traj", 6, "tool_calls", 0)  # the first call of run 0 (get_user_details), answered by traj[7]


@pytest.mark.parametrize(("path", "value", "field", "why"), [
    ((*_TOOL, "function", "arguments"), "nope", "traj[6].tool_calls[0].function.arguments", "which is not JSON"),
    ((*_TOOL, "function", "arguments"), '["mia_li_3668"]', "traj[6].tool_calls[0].function.arguments", "the text holds an array"),
    ((*_TOOL, "function", "arguments"), {"user_id": "mia_li_3668"}, "traj[6].tool_calls[0].function.arguments", "got an object"),
    ((*_TOOL, "function", "arguments"), GONE, "traj[6].tool_calls[0].function.arguments", "the field is missing"),
    ((*_TOOL, "function", "name"), 5, "traj[6].tool_calls[0].function.name", "got a number"),
    ((*_TOOL, "function"), "get_user_details", "traj[6].tool_calls[0].function", "got a string"),
    ((*_TOOL, "id"), 5, "traj[6].tool_calls[0].id", "got a number"),
    (_TOOL, "call", "traj[6].tool_calls[0]", "got a string"),
    (("traj", 6, "tool_calls"), {}, "traj[6].tool_calls", "got an object"),
    (("traj", 6, "content"), {"a": 1}, "traj[6].content", "expected text or null"),
    (("traj", 7, "content"), {"a": 1}, "traj[7].content", "expected the tool message's text; got an object"),
    (("traj", 7, "tool_call_id"), 5, "traj[7].tool_call_id", "got a number"),
    (("traj", 1, "content"), None, "traj[1].content", "expected the user message's text; got null"),
    (("traj", 1, "tool_calls"), [], "traj[1].tool_calls", "only an assistant message calls tools"),
    (("traj", 1), "hello", "traj[1]", "expected a message object, got a string"),
    (("info",), "x", "info", "expected an object, got a string"),
    (("info", "task", "actions", 0, "kwargs"), [], "info.task.actions[0].kwargs", "got an array"),
    (("info", "task", "actions", 0, "kwargs"), None, "info.task.actions[0].kwargs", "got null"),
    (("info", "task", "actions", 0, "name"), GONE, "info.task.actions[0].name", "the field is missing"),
    (("info", "task", "outputs"), "23553", "info.task.outputs", "got a string"),
])
def test_each_damage_of_a_run_names_its_field(runs, path, value, field, why):
    # Before: arguments kept flagged (upstream's agent stops on them), `kwargs: []` read as no arguments, `outputs: "23553"`
    # as five required outputs, a content object as the input, and other damage a Python error naming no field.
    with pytest.raises(AdapterError) as err:
        adapt(edited(runs[0], path, value), None)
    assert err.value.field == field and str(err.value).startswith(f"{field}: ") and why in str(err.value)
    assert err.value.case_id == "0-0"


def test_a_task_of_the_tasks_file_is_named_by_its_index(runs, tau_paths):
    tasks = {t["task_index"]: t for t in json.loads(tau_paths[1].read_text())}
    tasks[0] = edited(tasks[0], ("actions", 0, "kwargs"), "{}")
    with pytest.raises(AdapterError) as err:
        adapt(runs[0], tasks)
    assert err.value.field == "tasks[task_index=0].actions[0].kwargs"


def test_the_shapes_upstream_writes_all_read(runs):
    # Null content beside a call, text beside a call, and an empty reply: what litellm's dump of the model's message holds.
    run = edited(runs[0], ("traj", 6, "content"), "Let me look.")
    assert adapt(run, None).trace.steps[2].thought == "Let me look."
    assert adapt(edited(runs[0], ("traj", 2, "content"), None), None).id == "0-0"


def test_a_damaged_task_of_a_tasks_file_is_invalid_input_naming_field_and_line(tmp_path, tau_paths):
    tasks = json.loads(tau_paths[1].read_text())[:4]
    tasks[1] = edited(tasks[1], ("actions", 0, "kwargs"), [])
    tasks[2] = edited(tasks[2], ("outputs",), "abc")
    tasks[3] = edited(tasks[3], ("actions", 0), "book_reservation")
    path = tmp_path / "tasks.json"
    path.write_text("[\n" + ",\n".join(json.dumps(t) for t in tasks) + "\n]\n")
    fmt = registry.format_for("tau-bench-tasks")
    got = [extract_record(raw, fmt, None) for raw in fmt.read(DatasetConfig(path=path, format="tau-bench-tasks"))]
    assert got[0].id == "0"
    errors = [(cid, err.field, err.line) for cid, err in got[1:]]
    assert errors == [("1", "actions[0].kwargs", 3), ("2", "outputs", 4), ("3", "actions[0]", 5)]
    assert "got an array" in got[1][1].message and "expected an action object {name, kwargs}, got a string" in got[3][1].message


@pytest.mark.parametrize(("value", "field", "said"), [
    (float("nan"), "user_id", "holds NaN"),
    ([{"flight_number": "HAT136", "date": float("inf")}], "flights[0].date", "holds Infinity"),
    ({"amount": float("-inf")}, "total_baggages.amount", "holds -Infinity"),
])
def test_a_non_finite_number_in_a_tasks_kwargs_is_invalid_input_naming_its_place(runs, tau_paths, value, field, said):
    # Python's json reads NaN and Infinity in a tasks file; kept, an expected argument no call can ever match
    # (`expected NaN, got "mia_li_3668"` in a ToolCalls reason).
    tasks = {t["task_index"]: t for t in json.loads(tau_paths[1].read_text())}
    key = field.split(".")[0].split("[")[0]
    tasks[0] = edited(tasks[0], ("actions", 0, "kwargs", key), value)
    with pytest.raises(AdapterError) as err:
        adapt(runs[0], tasks)
    assert err.value.field == f"tasks[task_index=0].actions[0].kwargs.{field}"
    assert said in str(err.value) and "no JSON number" in str(err.value)
    # ... and in the run's own task (`info.task`), when no tasks file is given
    with pytest.raises(AdapterError) as err:
        adapt(edited(runs[0], ("info", "task", "actions", 0, "kwargs", key), value), None)
    assert err.value.field == f"info.task.actions[0].kwargs.{field}"
