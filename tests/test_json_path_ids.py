"""json-path case and call ids that are not text: an integer is its decimal text, as `native` reads it; any other JSON
value is the record's `invalid_input` naming the option, never Python's spelling of it (`"True"`, `"['x']"`), which
took the id of a record whose id is that very text. Real CLI processes on real files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tracejudge.core.config import DatasetConfig
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
import _forkserver

IDS = [["x"], {"a": 1}, True, 1.5, "True", 42, "42", "['x']"]


def test_an_id_that_is_no_text_or_integer_is_refused_and_takes_no_other_records_id(tmp_path: Path) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps({"meta": {"run_id": v}, "q": f"q{i}", "gold": []}) + "\n" for i, v in enumerate(IDS)))
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("dataset:\n  path: runs.jsonl\n  format: json-path\n  options: {id: meta.run_id, input: q, output: q, expected_tool_calls: gold}\n"
                   "metrics: [{type: ToolCalls}]\nrun: {dir: run, executor: inprocess}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stderr  # the gate: invalid records
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    by_id = {r["case_id"]: r for r in results}
    assert len(results) == len(IDS)
    for line, kind in [(1, "an array ([\"x\"])"), (2, 'an object ({"a": 1})'), (3, "a boolean (true)"), (4, "a number (1.5)")]:
        got = by_id[f"{data}:{line}"]  # filed under no id of its own
        assert got["status"] == "invalid_input" and got["error"]["line"] == line
        assert got["error"]["field"] == "meta.run_id"
        assert got["error"]["message"] == f"option id ('meta.run_id'): an id is text or an integer, got {kind}"
    ok = {r["case_id"] for r in results if r["status"] == "ok"}
    assert ok == {"True", "42", "['x']"}  # the texts keep their ids; 42 is read as "42" …
    dup = by_id[f"42@{data}:7"]  # … so the "42" after it is its duplicate, said, not scored twice
    assert dup["status"] == "invalid_input" and "duplicate case id '42'" in dup["error"]["message"]


def test_a_call_id_that_is_no_text_or_integer_is_refused_naming_the_call(tmp_path: Path) -> None:
    data = tmp_path / "runs.jsonl"
    calls = [[{"id": 7, "name": "get"}], [{"id": False, "name": "get"}], [{"id": [1], "name": "get"}]]
    data.write_text("".join(json.dumps({"calls": c}) + "\n" for c in calls))
    fmt = format_for("json-path")
    dataset = DatasetConfig(path=data, format="json-path", options={"tool_calls": "calls"})
    options = fmt.prepare(dataset)
    got = [extract_record(raw, fmt, options) for raw in fmt.read(dataset)]
    assert got[0].trace.tool_calls()[0].id == "7"
    assert [(err.field, err.message) for _, err in got[1:]] == [
        ("tool_calls[0].id", "option call.id ('id'): an id is text or an integer, got a boolean (false)"),
        ("tool_calls[0].id", "option call.id ('id'): an id is text or an integer, got an array ([1])")]
