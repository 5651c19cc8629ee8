"""The viewer's `view.idx` (filters, sort, pages, growth, rebuild) and where the case page reads traces from."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _runs import native_case, seven_and_three, write_config, write_dataset
from tracejudge.entrypoints.cli import main
from tracejudge.viewer.index import INDEX_FILE, CaseQuery, RunIndex
from tracejudge.viewer.traces import CaseSource


def _run(tmp_path: Path) -> Path:
    data = seven_and_three(tmp_path / "cases.jsonl")
    run_dir = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "c.yaml", data, run_dir)), "--no-progress"]) == 0
    return run_dir


def test_filters_sort_and_pages(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    idx = RunIndex(run_dir)
    assert idx.refresh() == 10 and (run_dir / INDEX_FILE).exists()
    assert idx.metrics == ["tc", "traj"] and idx.tags == ["t1", "t2"]
    counts = idx.counts()
    assert counts["ok"] == 7 and counts["invalid_input"] == 3
    assert idx.query(CaseQuery(status="invalid_input")).total == 3
    assert idx.query(CaseQuery(status="failed")).total == 6  # 3 half-right (traj below 0.9) + 3 errors
    assert {r["case_id"] for r in idx.query(CaseQuery(below="traj")).rows} == {"half-0", "half-1", "half-2"}
    assert idx.query(CaseQuery(tag="t1")).total == 4
    assert idx.query(CaseQuery(q="MISSING TOOLS: 'B'")).total == 3  # reasons, case-insensitive
    assert idx.query(CaseQuery(q="100%_")).total == 0  # LIKE wildcards are literal
    ranked = idx.query(CaseQuery(sort="traj", desc=True)).rows
    assert [r["case_id"] for r in ranked[:4]] == ["good-0", "good-1", "good-2", "good-3"]
    assert ranked[-1]["values"]["traj"] is None  # results without a value sort last
    page2 = idx.query(CaseQuery(size=25, page=2))
    assert page2.query.page == 1 and page2.pages == 1  # clamped to the last page
    assert idx.result("half-0", 0)["scores"]["tc"]["reason"].startswith("missing tools")
    idx.close()


def test_grows_with_the_run_and_rebuilds_when_rewritten(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    results = run_dir / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[:4]))
    idx = RunIndex(run_dir)
    assert idx.refresh() == 4
    with open(results, "ab") as fh:
        fh.write(b"".join(lines[4:7]) + lines[7][:20])  # a torn last line: not indexed yet
    assert idx.refresh() == 7
    with open(results, "ab") as fh:
        fh.write(lines[7][20:] + b"".join(lines[8:]))
    assert idx.refresh() == 10
    # A later line for the same (case, trial) replaces the earlier one.
    again = json.loads(lines[0])
    again["scores"]["tc"]["reason"] = "re-scored"
    with open(results, "ab") as fh:
        fh.write(json.dumps(again).encode() + b"\n")
    assert idx.refresh() == 10 and idx.query(CaseQuery(q="re-scored")).total == 1
    idx.close()
    # Rewritten (not appended): rebuilt from scratch. Deleted: rebuilt too.
    results.write_bytes(b"".join(reversed(lines[:3])))
    idx = RunIndex(run_dir)
    assert idx.refresh() == 3
    idx.close()
    (run_dir / INDEX_FILE).unlink()
    assert RunIndex(run_dir).refresh() == 3


def test_traces_from_the_dataset_and_never_from_user_code(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    case, note = CaseSource(run_dir, manifest).get("half-1", 0)
    assert case is not None and [c.name for c in case.trace.steps[0].tool_calls] == ["a"] and "trace from" in note
    assert CaseSource(run_dir, manifest).get("nope", 0)[0] is None

    manifest["config"]["dataset"]["format"] = "viewer_must_not_import_this:adapt"
    case, note = CaseSource(run_dir, manifest).get("half-1", 0)
    assert case is None and "does not run code" in note
    assert "viewer_must_not_import_this" not in sys.modules


def test_live_traces_file_wins(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    live = native_case("half-1", ["a", "b"], ["a", "b", "c"])
    write_dataset(run_dir / "traces.jsonl", [{"case_id": "half-1", "trial": 0, "status": "ok", "case": live}, '{"torn'])
    src = CaseSource(run_dir, json.loads((run_dir / "manifest.json").read_text()))
    case, note = src.get("half-1", 0)
    assert [c.name for c in case.trace.steps[0].tool_calls] == ["a", "b", "c"] and "traces.jsonl" in note
    assert {i: t for i, t, _ in src.iter_texts()}["half-1"].count("\n") >= 2


def test_view_without_runs_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["view", "--port", "0"]) == 2  # nothing given, no runs/ here
    assert main(["view", str(tmp_path), "--port", "0"]) == 2  # not a run directory


def test_alignment_names_the_closest_call_and_the_differing_argument() -> None:
    from tracejudge import ToolCalls
    from tracejudge.core.records import Case
    from tracejudge.viewer.pages_case import closest_call

    case = Case.model_validate({
        "id": "c", "expected_tool_calls": [{"name": "lookup", "arguments": {"q": "a"}}, {"name": "book", "arguments": {"seat": "12A", "meal": "veg"}}],
        "trace": {"steps": [{"tool_calls": [{"name": "lookup", "arguments": {"q": "a"}}]},
                            {"tool_calls": [{"name": "book", "arguments": {"seat": "12B", "meal": "veg"}}]}]},
    })
    score = ToolCalls(arguments="exact").evaluate(case)
    assert score.details["missing"] == [1] and score.details["unexpected"] == [1]
    near = closest_call(score.reason, 1)
    assert near is not None and near[0] == 1 and "seat" in near[1] and "12B" in near[1]
    assert closest_call(score.reason, 0) is None


def test_view_on_a_busy_port_says_so(tmp_path: Path, capsys) -> None:
    import socket

    run_dir = _run(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert main(["view", str(run_dir), "--port", str(taken.getsockname()[1])]) == 2
    assert "cannot listen on 127.0.0.1" in capsys.readouterr().err


def test_a_damaged_index_is_rebuilt(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    (run_dir / INDEX_FILE).write_bytes(b"not a database at all" * 100)
    idx = RunIndex(run_dir)
    assert idx.refresh() == 10 and idx.query(CaseQuery(tag="t2")).total == 3


def test_case_ids_sort_in_natural_order_and_an_older_index_is_rebuilt_for_it(tmp_path: Path) -> None:
    ids = ["10-0", "2-1", "2-0", "1-0", "task-100", "task-20", "task-3", "007", "7"]
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(i, ["a"], ["a"] if n % 2 else []) for n, i in enumerate(ids)])
    run_dir = tmp_path / "run"
    assert main(["run", str(write_config(tmp_path / "c.yaml", data, run_dir)), "--no-progress"]) == 0
    natural = ["1-0", "2-0", "2-1", "007", "7", "10-0", "task-3", "task-20", "task-100"]
    idx = RunIndex(run_dir)
    assert idx.refresh() == len(ids)
    assert [r["case_id"] for r in idx.query(CaseQuery()).rows] == natural  # the text order put 10-0 before 2-0
    assert [r["case_id"] for r in idx.query(CaseQuery(desc=True)).rows] == natural[::-1]
    # Ties on a metric keep the natural order of the ids.
    assert [r["case_id"] for r in idx.query(CaseQuery(sort="tc")).rows if r["values"]["tc"] == 1.0] == [
        i for i in natural if ids.index(i) % 2]
    idx.close()
    # An index a viewer before the natural order built (schema 7, no case_key column) is rebuilt, not queried.
    import sqlite3
    db = sqlite3.connect(run_dir / INDEX_FILE)
    db.execute("UPDATE meta SET value = '7' WHERE key = 'schema'")
    db.execute("DROP INDEX results_case_key")
    db.execute("ALTER TABLE results DROP COLUMN case_key")
    db.commit()
    db.close()
    idx = RunIndex(run_dir)
    assert idx.refresh() == len(ids)
    assert [r["case_id"] for r in idx.query(CaseQuery()).rows] == natural
    idx.close()


def test_a_line_edited_in_place_past_the_first_bytes_is_read_again(tmp_path: Path) -> None:
    # The index noticed a rewrite only by its size shrinking or its first 4 KiB changing: a score edited by hand further
    # on (the same length) kept its old value in the table, beside a case page showing the new one, in later viewers
    # too; one edited to another length read as an append, and the moved bytes as a damaged line.
    import os

    from _runs import result_line

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    results = run_dir / "results.jsonl"
    results.write_text("".join(result_line(f"c{i:03d}", 0, {"m": (1.0, "fine")}) + "\n" for i in range(40)))
    assert results.stat().st_size > 4096 + 200  # (c039 past the first 4 KiB)

    def value(idx: RunIndex) -> float:
        (row,) = idx.query(CaseQuery(q="c039")).rows
        return row["values"]["m"]

    def edit(old: str, new: str) -> None:
        before = results.stat().st_mtime_ns
        text = results.read_text()
        cut = text.rindex('"c039"')
        results.write_text(text[:cut] + text[cut:].replace(old, new, 1))
        os.utime(results, ns=(before + 10**9, before + 10**9))  # (a coarse clock could give the same time)

    idx = RunIndex(run_dir)
    assert idx.refresh() == 40 and value(idx) == 1.0
    edit('"value": 1.0', '"value": 0.5')  # the same size
    assert idx.refresh() == 40 and value(idx) == 0.5
    later = RunIndex(run_dir)  # (a viewer started later reads the same index file)
    assert later.refresh() == 40 and value(later) == 0.5
    later.close()
    edit('"value": 0.5', '"value": 0.25')  # one byte longer: not an append
    assert idx.refresh() == 40 and value(idx) == 0.25 and idx.unreadable() == (0, [])
    generation = idx.generation
    with open(results, "a") as fh:  # a run appending is still read on from where the index was, not again whole
        fh.write(result_line("c040", 0, {"m": (0.0, "new")}) + "\n")
    assert idx.refresh() == 41 and idx.generation == generation
    assert idx.refresh() == 41 and idx.generation == generation
    idx.close()
