"""A user's mistake is one line and exit status 2, never a traceback: real processes, real ports, real files."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import extract_lines
import _forkserver

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={**os.environ, **(env or {})})


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_simulate_on_a_port_out_of_range_or_in_use(tmp_path: Path) -> None:
    for command in ("simulate", "view"):
        line = one_line_error(cli(command, "--port", "70000", cwd=tmp_path))
        assert line == "error: --port 70000: a TCP port is 0 to 65535 (0 picks a free one)"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_error(cli("simulate", "--port", str(port), cwd=tmp_path))
    assert line.startswith(f"error: --port {port}: cannot listen on 127.0.0.1:{port} (") and "address already in use" in line
    assert line.endswith("pick another port, or 0 for a free one")


# `_name.py` files are the benchmarks' shared helpers and peer programs, not benchmarks.
@pytest.mark.parametrize("script", sorted(p.name for p in (REPO / "benchmarks").glob("*.py") if not p.name.startswith("_")))
def test_every_benchmark_answers_help(script: str, tmp_path: Path) -> None:
    proc = _forkserver.run([sys.executable, str(REPO / "benchmarks" / script), "--help"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: ") and "Traceback" not in proc.stderr


def test_a_config_error_prints_no_progress_line(tmp_path: Path, tau_paths) -> None:
    trajectories, tasks = tau_paths
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {json.dumps(str(trajectories))}, format: tau-bench, tasks: {json.dumps(str(tasks))}}}\n"
                   "metrics: [{type: TaskCompletion}]\n"
                   "judge: {provider: openai, model: gpt-4o-mini, api_key_env: TRACEJUDGE_TEST_UNSET_KEY}\nrun: {dir: run}\n")
    env = {k: v for k, v in os.environ.items() if k != "TRACEJUDGE_TEST_UNSET_KEY"}
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg)], capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr
    assert "TRACEJUDGE_TEST_UNSET_KEY" in proc.stderr
    assert "progress" not in proc.stderr and "{" not in proc.stderr  # no JSON progress line around the error


def test_estimate_without_judge_metrics_says_so(tmp_path: Path, tau_paths) -> None:
    trajectories, tasks = tau_paths
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {json.dumps(str(trajectories))}, format: tau-bench, tasks: {json.dumps(str(tasks))}}}\n"
                   "metrics: [{type: ToolCalls}]\n")
    line = one_line_error(cli("estimate", str(cfg), cwd=tmp_path))
    assert line.startswith(f"error: {cfg}: no LLM-judge metric in `metrics:`") and "sends nothing to a judge" in line
    assert cli("estimate", str(cfg), cwd=tmp_path).stdout == ""  # no empty table


def test_estimate_fits_80_columns_without_cutting_a_metric_name(tmp_path: Path, tau_paths) -> None:
    trajectories, tasks = tau_paths
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {json.dumps(str(trajectories))}, format: tau-bench, tasks: {json.dumps(str(tasks))}}}\n"
                   "metrics: [{type: TaskCompletion}, {type: ToolCallNecessity}]\njudge: {provider: simulator}\ncache: {enabled: false}\n")
    proc = cli("estimate", str(cfg), cwd=tmp_path, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80
    assert "…" not in proc.stdout  # a long name wraps onto the next line instead of being cut
    first_column = "".join(line[:17] for line in proc.stdout.splitlines()).replace(" ", "")
    assert "TaskCompletion" in first_column and "ToolCallNecessity" in first_column


@pytest.mark.parametrize("fmt", ["native", "openai-messages", "otel"])
def test_a_control_character_in_json_is_named_once(tmp_path: Path, fmt: str) -> None:
    got = extract_lines(tmp_path, fmt, ['{"id": "a\x01b", "messages": []}'])
    (_, info), = got
    assert "Invalid control character at column" in info.message and "at at" not in info.message, info.message


def test_retrieved_passages_given_as_strings_say_what_a_passage_is(tmp_path: Path) -> None:
    # `expected_passages` are strings, so strings in `trace.retrieved` looked right; the error said only "Input should be an object".
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "r1", "input": "q", "expected_passages": ["a"],
                                                  "trace": {"steps": [], "output": "x", "retrieved": ["a", {"content": "b"}]}}) + "\n")
    (tmp_path / "c.yaml").write_text("dataset: {path: c.jsonl}\nmetrics: [{type: ToolCalls}]\nrun: {dir: run}\n")
    proc = cli("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 1
    result = json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[0])
    assert result["status"] == "invalid_input" and result["error"]["field"] == "trace.retrieved[0]"
    assert result["error"]["message"] == ('trace.retrieved[0]: Input should be an object (got str); a retrieved passage is an object: '
                                          '{"content": "the text"}, optionally with "id", "score" and "source"')
