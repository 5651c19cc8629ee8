"""A dataset read with the wrong `dataset.format` is one config error naming the format that reads it, not a result per line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _run(tmp_path: Path, data: Path, fmt: str) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {data}, format: {fmt}}}\nmetrics: [{{type: ToolCalls}}]\nrun: {{dir: run, executor: inprocess}}\n")
    return subprocess.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)


def _case(i: int) -> dict:
    call = {"name": "lookup", "arguments": {"n": i}}
    return {"id": f"c{i}", "expected_tool_calls": [call], "trace": {"steps": [{"tool_calls": [call]}], "output": "done"}}


def test_a_json_array_read_as_lines_is_refused_with_the_format_that_reads_it(tmp_path: Path) -> None:
    data = tmp_path / "cases.json"
    data.write_text(json.dumps([_case(i) for i in range(40)], indent=2))  # one case spans many lines
    done = _run(tmp_path, data, "openai-messages")
    assert done.returncode == 2
    assert (f"dataset.path: {data}: the first 100 records are all invalid for format 'openai-messages' (the first: {data}:1: invalid JSON"
            in done.stderr)
    assert "the file is one JSON array and no format reads it as such: write one record per line (JSON Lines)" in done.stderr
    assert len(done.stderr.splitlines()) <= 3
    assert not (tmp_path / "run").exists()


def test_invalid_records_before_a_valid_one_still_cost_only_themselves(tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(f"not json {i}\n" for i in range(99)) + json.dumps(_case(0)) + "\n")
    done = _run(tmp_path, data, "native")
    assert done.returncode == 1  # the gate fails on the invalid share; the run went through
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(results) == 100 and [r["status"] for r in results].count("ok") == 1


def test_tau_bench_runs_read_as_chat_lines_suggest_their_format(tmp_path: Path, tau_paths) -> None:
    done = _run(tmp_path, tau_paths[0], "openai-messages")
    assert done.returncode == 2
    assert "the first 100 records are all invalid for format 'openai-messages'" in done.stderr
    assert "they read as format 'tau-bench': set dataset.format" in done.stderr
