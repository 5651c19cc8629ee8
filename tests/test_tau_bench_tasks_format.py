"""Format `tau-bench-tasks`: τ-bench task definitions as cases for a live target."""

from __future__ import annotations

import json

from live_support import DATA, TESTS, read_jsonl, run_live
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig, validate_config
from tracejudge.stages.extract import extract_record


def test_real_airline_tasks_become_cases():
    fmt = registry.format_for("tau-bench-tasks")
    dataset = DatasetConfig(path=DATA / "tau_bench" / "tasks" / "tasks_airline_test.json", format="tau-bench-tasks")
    cases = [extract_record(raw, fmt, None) for raw in fmt.read(dataset)]
    assert len(cases) == 50
    assert sum(len(c.expected_tool_calls) for c in cases) == 158  # the data README's count of expected actions
    assert sum(1 for c in cases if c.expected_tool_calls == []) == 7
    first = cases[0]
    assert first.id == "0" and first.input.startswith("Your user id is mia_li_3668.")
    assert first.metadata == {"task_id": 0, "user_id": "mia_li_3668", "annotator": "0", "outputs": []}
    assert first.expected_tool_calls[0].name == "book_reservation"
    assert first.expected_tool_calls[0].arguments["flights"][0] == {"flight_number": "HAT136", "date": "2024-05-20"}
    assert first.trace is None


def test_a_broken_task_is_invalid_input_naming_field_and_line(tmp_path):
    tasks = [
        {"task_index": 0, "user_id": "u", "instruction": "hi", "actions": []},
        {"task_index": 1, "user_id": "u", "actions": []},
        {"task_index": 2, "user_id": "u", "instruction": "x", "actions": [{"kwargs": {}}]},
    ]
    path = tmp_path / "tasks.json"
    path.write_text("[\n" + ",\n".join(json.dumps(t) for t in tasks) + "\n]\n")
    target = {"kind": "python", "callable": "live_agents:sync_agent", "pythonpath": str(TESTS), "retries": 0}
    config = validate_config({"dataset": {"path": str(path), "format": "tau-bench-tasks"}, "metrics": [{"type": "ToolCalls"}],
                              "target": target, "run": {"dir": str(tmp_path / "run")}})
    run_live(config)
    results = {r["case_id"]: r for r in read_jsonl(tmp_path / "run" / "results.jsonl")}
    assert results["1"]["status"] == "invalid_input"
    assert (results["1"]["error"]["field"], results["1"]["error"]["line"]) == ("instruction", 3)
    assert (results["2"]["error"]["field"], results["2"]["error"]["line"]) == ("actions[0].name", 4)
    assert results["0"]["status"] == "ok"  # the good task ran through the target
