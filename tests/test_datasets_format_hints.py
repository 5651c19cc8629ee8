"""The wrong-format hint names each format's own typical file by its own format; `--fresh` reads a τ-bench tasks file once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from tracejudge.core.config import DatasetConfig
from tracejudge.stages.extract.first_records import formats_that_read
import _forkserver

EXAMPLES = REPO / "examples" / "data"


def _typical(data_dir: Path) -> dict[str, Path]:
    return {"native": EXAMPLES / "cases.jsonl", "openai-messages": EXAMPLES / "chats.jsonl", "anthropic-messages": EXAMPLES / "claude_runs.jsonl",
            "multivon": EXAMPLES / "multivon_cases.jsonl", "json-path": EXAMPLES / "runs.jsonl",
            "tau-bench": data_dir / "tau_bench/historical_trajectories/gpt-4o-airline.json",
            "tau-bench-tasks": data_dir / "tau_bench/tasks/tasks_airline_test.json",
            "tau2-bench": data_dir / "tau2_bench/model_training_results/gpt-4.1_airline_default_gpt-4.1_1trials.json",
            "bfcl": data_dir / "bfcl/BFCL_v4_simple_python.json", "otel": data_dir / "otel_genai/hand/mcp_tool_call.json"}


def test_each_formats_typical_file_is_hinted_as_its_own_format(data_dir):
    # `json-path` reads any JSON object line: it was named first for native records, chat logs and BFCL questions alike.
    for name, path in _typical(data_dir).items():
        hinted = formats_that_read(DatasetConfig(path=path, format=name, options={}), "mlflow")
        assert name in hinted and ("json-path" not in hinted or name == "json-path"), (name, hinted)


def _run(tmp_path: Path, data: Path, fmt: str, *extra: str) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {data}, format: {fmt}}}\nmetrics: [{{type: ToolCalls}}]\nrun: {{dir: run, executor: inprocess}}\n")
    return _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress", *extra], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)


def test_native_records_read_as_tau_bench_are_told_native(tmp_path):
    done = _run(tmp_path, EXAMPLES / "cases.jsonl", "tau-bench")
    assert done.returncode == 2, done.stderr
    assert "they read as format 'native': set dataset.format" in done.stderr and "json-path" not in done.stderr


def test_native_records_that_fail_everywhere_are_told_native_not_json_path(tmp_path):
    # Each has a `trace` of the wrong shape: no format reads them but `json-path`, which reads any object. (A format whose file
    # is one document refuses the file at once; a line format waits for 100 invalid records.)
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"id": f"c{i}", "input": "hi", "trace": {"steps": "none"}}) + "\n" for i in range(3)))
    done = _run(tmp_path, data, "tau-bench")
    assert done.returncode == 2, done.stderr
    message = " ".join(done.stderr.split())
    assert "they are tracejudge's own records (format 'native'" in message and "'json-path'" not in message, message


def test_records_no_format_knows_are_pointed_to_a_json_path_mapping(tmp_path):
    done = _run(tmp_path, EXAMPLES / "runs.jsonl", "tau-bench")
    assert done.returncode == 2, done.stderr
    assert "format 'json-path' reads any JSON object: set dataset.format: json-path with dataset.options" in " ".join(done.stderr.split())


@pytest.mark.parametrize("fresh", [False, True])
def test_a_tasks_files_warnings_are_said_once_with_or_without_fresh(tmp_path, tau_paths, fresh):
    tasks = json.loads(tau_paths[1].read_text())
    text = json.dumps(tasks, indent=2)
    at = text.index('"task_index": 5,') + len('"task_index": 5,')
    (tmp_path / "tasks.json").write_text(text[:at] + "," + text[at:])  # task 5 cannot be read: one warning
    (tmp_path / "runs.json").write_text(json.dumps(json.loads(tau_paths[0].read_text())[:3], indent=2))
    (tmp_path / "c.yaml").write_text("dataset: {path: runs.json, format: tau-bench, tasks: tasks.json}\nmetrics: [{type: TrajectoryMatch}]\n"
                                     "run: {dir: run, executor: inprocess}\n")
    for _ in range(2 if fresh else 1):  # (the second `--fresh` starts over beside the first run)
        done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress", *(["--fresh"] if fresh else [])],
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        said = [json.loads(line) for line in done.stderr.splitlines() if "unreadable task skipped" in line]
        assert len(said) == 1 and said[0]["line"] == text.count("\n", 0, text.rindex("{", 0, at)) + 1, done.stderr


def test_a_short_file_under_the_wrong_format_gets_the_hint_and_broken_records_their_own_errors(tmp_path):
    # Three native records read as openai-messages were three invalid_input results and exit 1, with no word of the
    # format they are (150 of them were refused with the hint).
    got = _run(tmp_path, REPO / "examples" / "data" / "cases.jsonl", "openai-messages")
    assert got.returncode == 2, got.stderr
    assert "all 3 of its records are invalid" in got.stderr and "they read as format 'native': set dataset.format" in got.stderr
    # Records no format reads stay results of their own (each error says what is wrong), short file or not.
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(json.dumps({"id": f"b{i}", "trace": {"steps": "not a list"}}) + "\n" for i in range(3)))
    got = _run(tmp_path, broken, "native")
    assert got.returncode == 1 and "Config error" not in got.stderr, got.stderr
