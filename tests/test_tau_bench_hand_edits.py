"""A τ-bench trajectory file edited by hand: each damaged run costs itself, none is made up, none is lost.

Every file here is real runs (the GPT-4o airline trajectories) written as `json.dumps` writes them, on one line or
with an indent, then damaged as a hand edit damages it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hand_edits import filed
import _forkserver

CUT = "the file ends here, before the array's ']': the file ends early (it looks truncated), and records after the cut are not in it"
REST = "; the rest of the file is not read"
BRACKET = "; a bracket is missing, or one too many, in or near this record, so where it ends cannot be told" + REST


@pytest.fixture(scope="module")
def runs(tau_paths) -> list[dict]:
    return json.loads(tau_paths[0].read_text())[:4]


def _layout(runs: list[dict], indent: int | None, edit=lambda i, text: text) -> tuple[str, list[int]]:
    """The runs as one array, run `i` written `edit(i, its text)`, and the offset each run starts at."""
    text, starts = "[", []
    for i, run in enumerate(runs):
        starts.append(len(text))
        text += edit(i, json.dumps(run, indent=indent)) + (", " if i < len(runs) - 1 else "")
    return text + "]", starts


def _doubled_comma(text: str) -> str:
    at = text.index('"trial"')
    return text[:at] + ", " + text[at:]


def _results(path: Path, text: str) -> list[tuple[str, str | None]]:
    return filed(path, "tau-bench", text)


def _column(text: str, at: int) -> int:
    return at - text.rfind("\n", 0, at)


def test_each_broken_run_of_a_one_line_file_is_a_result_of_its_own(tmp_path, runs):
    # On one line, the three broken runs were all `file:1`: the run kept the first and dropped the other two.
    import anyio
    from tracejudge.core.config import validate_config
    from tracejudge.engine.runner import run

    text, starts = _layout(runs, None, lambda i, run: _doubled_comma(run) if i else run)  # `, , "trial"` in runs 1 to 3
    path = tmp_path / "runs.json"
    path.write_text(text)
    config = validate_config({"dataset": {"path": str(path), "format": "tau-bench"}, "metrics": [{"type": "TrajectoryMatch"}],
                              "run": {"dir": str(tmp_path / "run"), "executor": "inprocess"}})
    anyio.run(run, config)
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    got = [(r["case_id"].replace(str(path), "F"), r["status"], (r.get("error") or {}).get("message")) for r in results]
    errors = [text.index('"trial"', s) for s in starts[1:]]  # where each one's doubled comma breaks it
    assert got == [("0-0", "ok", None)] + [
        (f"F:1:{s + 1}", "invalid_input", f"invalid JSON: Expecting property name enclosed in double quotes at line 1 column {e - 1}")
        for s, e in zip(starts[1:], errors)]
    # With a run a line, each broken one keeps its `file:line`, as before.
    text, starts = _layout(runs, 2, lambda i, run: _doubled_comma(run) if i else run)
    assert [cid for cid, _ in _results(path, text)] == ["0-0"] + [f"F:{text.count(chr(10), 0, s) + 1}" for s in starts[1:]]


def test_a_run_missing_its_closing_brace_stops_the_read_with_one_error(tmp_path, runs):
    # The scan ran to the array's `]`: the runs after it were swallowed, and an extra "unexpected end of file" made up.
    for indent in (None, 2):
        text, starts = _layout(runs, indent)
        brace = text.rindex("}", 0, starts[2])
        text = text[:brace] + text[brace + 1 :]
        line = text.count("\n", 0, starts[2] - 1) + 1
        where = f"line {line} column {_column(text, starts[2] - 1)}"
        cid = f"F:1:{starts[1] + 1}" if indent is None else f"F:{text.count(chr(10), 0, starts[1]) + 1}"
        assert _results(tmp_path / "runs.json", text) == [
            ("0-0", None), (cid, f"invalid JSON: Expecting property name enclosed in double quotes at {where}{BRACKET}")]


def test_a_run_that_lost_its_opening_brace_is_one_error_and_the_runs_after_it_are_read(tmp_path, runs):
    # Its first key read as a record, "expected a run object, got a string", and the read stopped at the `:` after it.
    for indent in (None, 2):
        text, starts = _layout(runs, indent)
        text = text[: starts[1]] + text[starts[1] + 1 :]
        key = text.index('"task_id"', starts[1])
        line = text.count("\n", 0, key) + 1
        cid = f"F:1:{key + 1}" if indent is None else f"F:{line}"
        why = (f"invalid JSON: a key (\"task_id\":) where a record starts, at line {line} column {_column(text, key)}: the record's "
               "opening '{' is missing, or a '}' too many ended the record before it early")
        assert _results(tmp_path / "runs.json", text) == [("0-0", None), (cid, why), ("2-0", None), ("3-0", None)]


def test_a_quote_added_before_a_runs_brace_stops_the_read_with_one_error(tmp_path, runs):
    # `"{"task_id": …` read `"{"` as a run ("expected a run object, got a string"), then stopped at the `t` after it.
    text, starts = _layout(runs, None)
    text = text[: starts[2]] + '"' + text[starts[2] :]
    why = (f"invalid JSON: a string where a record starts, followed by 't' at line 1 column {starts[2] + 4}; a quote is missing in "
           f"or near this record, so where it ends cannot be told{REST}")
    assert _results(tmp_path / "runs.json", text) == [("0-0", None), ("1-0", None), (f"F:1:{starts[2] + 1}", why)]


def test_a_comma_before_the_first_run_is_a_warning_not_a_record(tmp_path, runs, caplog):
    for indent in (None, 2):
        text, _ = _layout(runs, indent)
        caplog.clear()
        assert _results(tmp_path / "runs.json", "[," + text[1:]) == [("0-0", None), ("1-0", None), ("2-0", None), ("3-0", None)]
        assert [(r.tracejudge_event, r.tracejudge["line"]) for r in caplog.records] == [
            ("JSON array: a comma with no record before it; passed over", 1)]


def test_a_file_without_its_closing_bracket_says_once_that_it_ends_early(tmp_path, runs):
    # "unexpected end of file inside the top-level array", under `file:1` (a broken run's id on one line) and never
    # saying the file looked cut.
    for indent in (None, 2):
        text, _ = _layout(runs, indent)
        text = text[:-1]
        cid = f"F:1:{len(text) + 1}" if indent is None else f"F:{text.count(chr(10)) + 1}"
        assert _results(tmp_path / "runs.json", text) == [("0-0", None), ("1-0", None), ("2-0", None), ("3-0", None), (cid, CUT)]


def test_a_file_cut_right_after_a_runs_comma_says_it_ends_early(tmp_path, runs):
    # "unexpected end of file after ','", unlike every other cut.
    for indent in (None, 2):
        text, starts = _layout(runs, indent)
        text = text[: starts[2]].rstrip()
        cid = f"F:1:{len(text) + 1}" if indent is None else f"F:{text.count(chr(10)) + 1}"
        assert _results(tmp_path / "runs.json", text) == [("0-0", None), ("1-0", None), (cid, CUT)]


def test_what_follows_the_closing_bracket_is_an_error_not_dropped(tmp_path, runs):
    # A second array appended (two files joined), or a stray word: read as if the file ended at the first `]`.
    one, _ = _layout(runs[:2], 2)
    two, _ = _layout(runs[2:], 2)
    text = one + "\n" + two + "\n"
    assert _results(tmp_path / "runs.json", text) == [
        ("0-0", None), ("1-0", None), (f"F:{one.count(chr(10)) + 2}", f"the file goes on after the array's closing ']': found '['{REST}")]
    one, _ = _layout(runs[:2], None)
    assert _results(tmp_path / "runs.json", one + " x") == [
        ("0-0", None), ("1-0", None), (f"F:1:{len(one) + 2}", f"the file goes on after the array's closing ']': found 'x'{REST}")]


def test_the_commas_warnings_are_said_once_by_a_run(tmp_path, tau_paths, runs):
    # The progress bar's count and the check that the runs are of the tasks' domain read the file too, and each said
    # every warning again: three times each.
    import subprocess
    import sys

    parts = [json.dumps(run, indent=2) for run in runs]
    text = "[,\n" + parts[0] + ",\n" + parts[1] + "\n" + parts[2] + ",,\n" + parts[3] + ",\n]\n"
    path = tmp_path / "runs.json"
    path.write_text(text)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {path}, format: tau-bench, tasks: {tau_paths[1]}}}\nmetrics: [{{type: TrajectoryMatch}}]\n"
                   "run: {dir: run, executor: inprocess}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    said = [json.loads(line) for line in done.stderr.splitlines() if '"JSON array: ' in line]
    lines = [text.count("\n", 0, text.index(s)) + 1 for s in (parts[2], "},,", "},\n]")]
    assert [(s["event"], s["line"]) for s in said] == [
        ("JSON array: a comma with no record before it; passed over", 1),
        ("JSON array: a comma is missing between two records; read as if it were there", lines[0]),
        ("JSON array: a comma with no record after it; passed over", lines[1]),
        ("JSON array: a comma with no record after it; passed over", lines[2])]


def test_runs_that_name_no_case_on_one_line_are_each_a_result_of_their_own(tmp_path, runs, tau_paths):
    # Read whole but refused by the adapter (no `task_id`, null), they were filed under `file:1` too, and lost but one.
    nameless = [{k: v for k, v in run.items() if k != "task_id"} for run in runs[:2]]
    text, starts = _layout(nameless + [None, runs[3]], None)
    assert _results(tmp_path / "runs.json", text) == [
        ("F:1", "task_id: required integer is missing or mistyped"),
        (f"F:1:{starts[1] + 1}", "task_id: required integer is missing or mistyped"),
        (f"F:1:{starts[2] + 1}", "expected a run object, got null"),
        ("3-0", None)]
    # The tasks of a tasks file read as cases (`tau-bench-tasks`) alike.
    tasks = json.loads(tau_paths[1].read_text())[:3]
    text = json.dumps([{k: v for k, v in tasks[0].items() if k != "task_index"}, 7, tasks[2]])
    assert filed(tmp_path / "tasks.json", "tau-bench-tasks", text) == [
        ("F:1", "task_index: required integer is missing or mistyped"), (f"F:1:{text.index(', 7, ') + 3}", "expected a task object, got a number"),
        ("2", None)]


@pytest.mark.parametrize("executor", ["inprocess", "processes"])
def test_a_run_pasted_twice_on_one_line_is_a_duplicate_not_scored_twice(tmp_path, runs, tau_paths, executor):
    # Ids are placed by line, so in a one-line file the copy's place was its first's: both were scored as the case.
    import subprocess
    import sys

    text, _ = _layout([runs[0], runs[1], runs[0], runs[0]], None)
    path = tmp_path / "runs.json"
    path.write_text(text)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {path}, format: tau-bench, tasks: {tau_paths[1]}}}\nmetrics: [{{type: TrajectoryMatch}}]\n"
                   f"run: {{dir: run, executor: {executor}}}\n")
    for _ in range(2):  # and the resume finds them all written
        done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 1 and "verdict: FAIL" in done.stdout, done.stderr  # (invalid input fails the gate)
        lines = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
        first = f"{runs[0]['task_id']}-{runs[0]['trial']}"
        assert [(r["case_id"], r["status"]) for r in lines] == [
            (first, "ok"), (f"{runs[1]['task_id']}-{runs[1]['trial']}", "ok"),
            (f"{first}@{path}:1#3", "invalid_input"), (f"{first}@{path}:1#4", "invalid_input")]
        assert lines[2]["error"]["message"] == f"duplicate case id '{first}': first at {path}:1, again at {path}:1 (record 3 of that line)"
