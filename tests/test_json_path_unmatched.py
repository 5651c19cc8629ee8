"""A json-path mapping that matches nothing is said once, at the end of the read, and the run goes on.

Real CLI processes on real files, as a user runs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
import _forkserver

RECORDS = [
    {"meta": {"id": "r1"}, "q": "Cancel order 7", "steps": [{"calls": [{"name": "cancel", "arguments": {"id": 7}}]}],
     "gold": [{"name": "cancel", "arguments": {"id": 7}}]},
    {"meta": {}, "q": "Cancel order 8", "steps": [{"calls": []}], "gold": [{"name": "cancel", "arguments": {"id": 8}}]},
]


def run(tmp_path: Path, *sets: str, command: str = "run", records: list[dict] = RECORDS) -> subprocess.CompletedProcess:
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("dataset:\n  path: runs.jsonl\n  format: json-path\n"
                   "  options: {id: meta.id, input: q, tool_calls: steps.*.calls, expected_tool_calls: gold}\n"
                   "metrics: [{type: ToolCalls}]\n")
    out = ["-o", str(tmp_path / "cases.jsonl")] if command == "extract" else []
    args = [sys.executable, "-m", "tracejudge", command, str(cfg), *out, *(x for s in sets for x in ("--set", s))]
    return _forkserver.run(args, capture_output=True, text=True, cwd=tmp_path, timeout=120, env=dict(os.environ))


def warnings_about(proc: subprocess.CompletedProcess, option: str) -> list[dict]:
    found = []
    for line in proc.stderr.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("option") == option and event.get("level") == "warning":
            found.append(event)
    return found


def test_a_tool_calls_path_that_matches_no_record_is_warned_once_with_the_nearest_path(tmp_path: Path) -> None:
    proc = run(tmp_path, "dataset.options.tool_calls=steps.*.calsl")
    assert proc.returncode in (0, 1), proc.stderr  # the run is not failed for it
    (got,) = warnings_about(proc, "dataset.options.tool_calls")
    assert got["path"] == "steps.*.calsl" and got["records"] == 2
    assert got["nearest_in_first_record"] == "steps.*.calls"
    assert "matched nothing in any record" in got["event"]
    assert len((tmp_path / "runs" / "eval" / "results.jsonl").read_text().splitlines()) == 2


def test_an_id_path_that_misses_some_records_warns_once_with_how_many_fell_back(tmp_path: Path) -> None:
    proc = run(tmp_path, command="extract")
    assert proc.returncode == 0, proc.stderr
    (got,) = warnings_about(proc, "dataset.options.id")
    assert got["path"] == "meta.id" and got["fell_back"] == 1 and got["records"] == 2
    ids = [json.loads(line)["id"] for line in (tmp_path / "cases.jsonl").read_text().splitlines()]
    assert ids == ["r1", "runs.jsonl:2"]  # the file:line fallback is kept
    assert not warnings_about(proc, "dataset.options.tool_calls")  # a call list empty in one record is no warning


def test_mappings_that_match_give_no_warning(tmp_path: Path) -> None:
    proc = run(tmp_path, "dataset.options.id=q")
    assert proc.returncode in (0, 1), proc.stderr
    assert "json-path" not in proc.stderr



def test_expected_calls_that_are_empty_lists_matched(tmp_path: Path) -> None:
    # `gold: []` in every record is "no call expected": it was warned as a mapping that matched nothing in any record.
    proc = run(tmp_path, command="extract", records=[{**r, "gold": []} for r in RECORDS])
    assert proc.returncode == 0, proc.stderr
    assert not warnings_about(proc, "dataset.options.expected_tool_calls")
    assert [json.loads(line)["expected_tool_calls"] for line in (tmp_path / "cases.jsonl").read_text().splitlines()] == [[], []]


def test_a_path_that_only_met_empty_lists_says_so(tmp_path: Path) -> None:
    # No step in any record: nothing tells `steps.*.calls` from a typo of it, and "matched nothing" was not what happened.
    proc = run(tmp_path, command="extract", records=[{**r, "steps": []} for r in RECORDS])
    assert proc.returncode == 0, proc.stderr
    (got,) = warnings_about(proc, "dataset.options.tool_calls")
    assert got["event"].startswith("a json-path mapping met only empty lists in every record") and got["records"] == 2
