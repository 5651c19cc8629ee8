"""The τ-bench adapter on the real 200 GPT-4o airline runs, and the write-call sanity check."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from tracejudge.core.config import validate_config
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.tau_bench import adapt, load_tasks
from tracejudge.stages.load import read_json_array
from tracejudge.stages.score import ToolCalls
import _forkserver

READ_ONLY = ["get_*", "search_*", "list_*", "calculate", "think", "transfer_*"]


@pytest.fixture(scope="module")
def cases(tau_paths) -> list[Case]:
    path, tasks_path = tau_paths
    tasks = load_tasks(tasks_path)
    return [adapt(rec.payload, tasks) for rec in read_json_array(path)]


@pytest.fixture(scope="module")
def raw_runs(tau_paths) -> list[dict]:
    return json.loads(tau_paths[0].read_text())


def test_every_run_becomes_a_case(cases, raw_runs):
    assert len(cases) == 200
    assert len({c.id for c in cases}) == 200
    assert Counter(c.metadata["reward"] for c in cases) == {1.0: 84, 0.0: 116}
    assert sum(len(c.trace.tool_calls()) for c in cases) == 1164


def test_arguments_decoded_results_paired_and_failures_flagged(cases, raw_runs):
    first = cases[0]
    assert first.id == "0-0" and first.metadata == {"task_id": 0, "trial": 0, "reward": 0.0, "source": "user"}
    assert first.input == "Hi! I'm looking to book a flight from New York to Seattle on May 20th."
    calls = first.trace.tool_calls()
    assert calls[0].name == "get_user_details" and calls[0].arguments == {"user_id": "mia_li_3668"}
    assert calls[0].id == "call_oIHazX6yQrB8hUwl4cRilFKj"
    assert calls[0].result["name"] == {"first_name": "Mia", "last_name": "Li"}  # JSON text result decoded
    assert calls[1].arguments == {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}
    failed = [c for c in calls if c.failed]
    assert failed and failed[0].name == "book_reservation"
    assert failed[0].error.startswith("Error: payment amount does not add up")

    # Pairing is by tool_call_id, oldest unanswered call first: upstream reuses ids
    # within a conversation, so each call's result is the next tool message with its id.
    for case, run in zip(cases, raw_runs):
        answers: dict[str, list[str]] = {}
        for m in run["traj"]:
            if m["role"] == "tool":
                answers.setdefault(m["tool_call_id"], []).append(m["content"])
        for call in case.trace.tool_calls():
            queue = answers.get(call.id) or []
            raw = queue.pop(0) if queue else None
            if raw is None:
                assert call.result is None
            else:
                try:
                    decoded = json.loads(raw) if raw[:1] in "[{" else raw
                except ValueError:
                    decoded = raw
                assert call.result == decoded


def test_expected_calls_come_from_the_tasks_file(cases, tau_paths):
    tasks = json.loads(tau_paths[1].read_text())
    for case in cases:
        actions = tasks[case.metadata["task_id"]]["actions"]
        assert [(e.name, e.arguments) for e in case.expected_tool_calls] == [(a["name"], a["kwargs"]) for a in actions]
    assert sum(1 for c in cases if c.expected_tool_calls == []) == 7 * 4


def test_runs_that_hit_the_step_limit_keep_reward_zero(cases):
    stopped = {c.id for c in cases if c.metadata.get("step_limit")}
    assert stopped == {"33-0", "2-1", "9-2", "9-3", "46-3"}
    assert all(c.metadata["reward"] == 0.0 for c in cases if c.id in stopped)


def test_unknown_task_is_invalid_input_naming_the_field(tau_paths):
    from tracejudge.core import registry

    fmt = registry.format_for("tau-bench")
    rec = next(read_json_array(tau_paths[0]))
    rec.payload = {**rec.payload, "task_id": 999}
    cid, err = extract_record(rec, fmt, load_tasks(tau_paths[1]))
    assert cid == "999-0" and err.field == "task_id" and err.line == 2 and "not in the tasks file" in err.message


def test_write_calls_exact_agree_with_upstream_reward(cases):
    """τ-bench's reward checks the final database, which the write calls determine."""
    metric = ToolCalls(arguments="exact", exclude_tools=READ_ONLY, include_failed=False)
    table = Counter((metric.evaluate(c).value == 1.0, c.metadata["reward"] == 1.0) for c in cases)
    agreement = (table[(True, True)] + table[(False, False)]) / len(cases)
    # The 5 disagreements: 2-1 and 46-3 made every write right but hit the step limit
    # (reward 0 without a DB check); 44-1 and 44-3 expect no write but must also say "4"
    # (an output check); 5-1 sent extra keys inside `flights`, which the tool ignores.
    assert table == {(False, False): 112, (True, True): 83, (True, False): 4, (False, True): 1}
    assert agreement >= 0.90


def test_demo_config_runs_the_three_metrics(tau_paths, tmp_path):
    import anyio
    from tracejudge.engine.runner import run

    config = validate_config(
        {
            "dataset": {"path": str(tau_paths[0]), "format": "tau-bench", "tasks": str(tau_paths[1])},
            "metrics": [
                {"type": "ToolCalls", "name": "writes_exact", "arguments": "exact", "exclude_tools": READ_ONLY, "include_failed": False},
                {"type": "TrajectoryMatch", "order": "in_order"},
                {"type": "ToolCorrectness", "allow_extra": True},
            ],
            "run": {"dir": str(tmp_path / "run")},
        }
    )
    outcome = anyio.run(run, config)
    s = outcome.summary
    assert s["results"] == 200 and s["status"] == {"ok": 200}
    assert s["metrics"]["writes_exact"]["passed"] == 87
    assert s["metrics"]["writes_exact"]["scored"] == 200


@pytest.mark.parametrize(("patch", "field"), [({"trial": True}, "trial"), ({"trial": -1}, "trial"), ({"reward": True}, "reward"),
                                              ({"reward": "1"}, "reward")])
def test_a_bool_or_negative_trial_or_a_non_number_reward_is_refused_naming_the_field(patch, field):
    # `"trial": true` made case `7-True`, -1 case `7--1`; `"reward": true` became a `True` group in breakdowns.
    from tracejudge.stages.extract.errors import AdapterError

    raw = {"task_id": 7, "trial": 0, "reward": 1.0, "traj": [{"role": "assistant", "content": "done"}], **patch}
    with pytest.raises(AdapterError) as err:
        adapt(raw, None)
    assert err.value.field == field and field in str(err.value)


def test_a_typo_of_a_tool_calls_name_names_the_typo():
    from tracejudge.stages.extract.errors import AdapterError

    call = {"id": "c1", "function": {"nam": "book", "arguments": "{}"}}
    raw = {"task_id": 7, "trial": 0, "traj": [{"role": "assistant", "content": None, "tool_calls": [call]}]}
    with pytest.raises(AdapterError) as err:
        adapt(raw, None)
    assert err.value.field == "traj[0].tool_calls[0].function.nam" and "did you mean name" in str(err.value)


def _run_cli(tmp_path, dataset: str) -> tuple[int, str]:
    import subprocess
    import sys

    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {dataset}\nmetrics: [{{type: TrajectoryMatch}}]\nrun: {{dir: run, executor: inprocess}}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stderr


def test_tasks_of_another_domain_are_one_config_error(tmp_path, tau_paths):
    # The retail tasks with the airline runs: every task_id exists, so every run was scored against a stranger's task.
    retail = tau_paths[1].with_name("tasks_retail_test.json")
    code, err = _run_cli(tmp_path, f"{{path: {tau_paths[0]}, format: tau-bench, tasks: {retail}}}")
    assert code == 2
    assert f"dataset.tasks: {retail}: not the tasks of these runs" in err
    assert "info.task.user_id 'mia_li_3668', task 0 of the tasks file: user_id 'yusuf_rossi_9620'" in err
    assert not (tmp_path / "run").exists()


def test_a_tools_file_given_as_tasks_is_refused_naming_the_field(tmp_path, tau_paths):
    tools = tau_paths[1].parent.parent / "tools" / "tools_airline.json"
    code, err = _run_cli(tmp_path, f"{{path: {tau_paths[0]}, format: tau-bench, tasks: {tools}}}")
    assert code == 2
    assert f"dataset.tasks: {tools}:2: actions: a τ-bench task needs an `actions` list, this element has keys type, function" in err
    assert not (tmp_path / "run").exists()


def test_a_run_made_for_another_user_than_its_task_is_invalid_input(tmp_path, tau_paths, raw_runs):
    runs = [json.loads(json.dumps(r)) for r in raw_runs[:4]]
    runs[2]["info"]["task"]["user_id"] = "someone_else_1"
    data = tmp_path / "runs.json"
    data.write_text(json.dumps(runs, indent=1))
    code, _ = _run_cli(tmp_path, f"{{path: {data}, format: tau-bench, tasks: {tau_paths[1]}}}")
    assert code == 1  # the gate: one invalid_input
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    bad = [r for r in results if r["status"] == "invalid_input"]
    assert [r["status"] for r in results].count("ok") == 3 and len(bad) == 1
    assert bad[0]["case_id"] == f"{runs[2]['task_id']}-{runs[2]['trial']}" and bad[0]["error"]["field"] == "info.task.user_id"
    assert "made for user 'someone_else_1'" in bad[0]["error"]["message"]


def test_a_run_that_is_null_is_named_in_json_s_words(tmp_path):
    # "expected a run object, got NoneType": the file says null.
    from pathlib import Path as _P

    from tracejudge.core.registry import format_for as _fmt
    from tracejudge.stages.extract import extract_record as _extract

    p = _P(tmp_path) / "runs.json"
    p.write_text("[null, [1]]")

    class _Ds:
        path, tasks, limit, options = p, None, None, {}

    got = [_extract(raw, _fmt("tau-bench"), None) for raw in _fmt("tau-bench").read(_Ds())]
    assert [err.message for _, err in got] == ["expected a run object, got null", "expected a run object, got an array"]


@pytest.mark.parametrize("nulled", [0, 2])
def test_a_task_whose_actions_are_null_fails_its_runs_first_task_or_not(tmp_path, tau_paths, raw_runs, nulled):
    # The first task was taken for another file's element (a config error, then "no format knows these records");
    # it is a task with a wrong field, whose runs say so, as a later one's do.
    tasks = json.loads(tau_paths[1].read_text())
    tasks[nulled]["actions"] = None
    tasks_path = tmp_path / "tasks.json"
    tasks_path.write_text(json.dumps(tasks, indent=1))
    data = tmp_path / "runs.json"
    data.write_text(json.dumps(raw_runs[:4], indent=1))
    code, err = _run_cli(tmp_path, f"{{path: {data}, format: tau-bench, tasks: {tasks_path}}}")
    assert code == 1 and "config error" not in err and "no format" not in err, err  # the gate: one invalid_input
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in results] == ["invalid_input" if r["case_id"] == f"{nulled}-0" else "ok" for r in results]
    (bad,) = [r["error"] for r in results if r["status"] == "invalid_input"]
    assert bad["field"] == f"tasks[task_index={nulled}].actions" and bad["message"].endswith("expected a list of actions, got null")
    starts = [n for n, line in enumerate(data.read_text().splitlines(), 1) if line == " {"]  # (each run's first line)
    assert bad["file"] == str(data) and bad["line"] == starts[nulled]


def test_a_lone_surrogate_in_a_user_message_is_read_as_ufffd_by_run_and_extract_alike(tmp_path, tau_paths, raw_runs):
    # `run` scored the case while `extract` refused it under `input`: both read the text as U+FFFD, and say so once.
    import sys

    text = json.dumps(raw_runs[:3], indent=1)
    first = json.dumps(raw_runs[0]["traj"][1]["content"])
    data = tmp_path / "runs.json"
    data.write_text(text.replace(first, first[:11] + "\\ud800" + first[11:], 1))
    code, err = _run_cli(tmp_path, f"{{path: {data}, format: tau-bench, tasks: {tau_paths[1]}}}")
    warning = "tau-bench: run 0-0: traj[1].content holds a lone surrogate"
    assert code == 0 and err.count(warning) == 1 and "read as U+FFFD" in err, err
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in results] == ["ok"] * 3
    out = tmp_path / "cases.jsonl"
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "extract", str(tmp_path / "c.yaml"), "-o", str(out)],
                           capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr.count(warning) == 1, done.stderr
    cases = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [c["id"] for c in cases] == [f"{r['task_id']}-{r['trial']}" for r in raw_runs[:3]]
    assert cases[0]["input"] == raw_runs[0]["traj"][1]["content"][:10] + "\ufffd" + raw_runs[0]["traj"][1]["content"][10:]
    assert cases[0]["trace"]["user_messages"][0]["content"] == cases[0]["input"]


def test_a_first_task_whose_actions_are_null_leaves_the_format_recognised(tmp_path, tau_paths, raw_runs):
    # Under another format the runs were said to be of no format ("no format knows these records"): tau-bench's
    # trial read refused the tasks file whole.
    tasks = json.loads(tau_paths[1].read_text())
    tasks[0]["actions"] = None
    (tmp_path / "tasks.json").write_text(json.dumps(tasks))
    data = tmp_path / "runs.json"
    data.write_text(json.dumps(raw_runs[:4], indent=1))
    code, err = _run_cli(tmp_path, f"{{path: {data}, format: native, tasks: {tmp_path / 'tasks.json'}}}")
    assert code == 2 and "they read as format 'tau-bench'" in err and "no format knows" not in err, err
