"""`tracejudge estimate`: a row of metrics asked together counts the cases it asks about."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
import _forkserver


def _rows(tmp_path: Path, config: str) -> dict[str, list[str]]:
    """`tracejudge estimate` of three one-call cases under `config` (its `metrics:` and `judge:`/`run:` lines):
    each table row's first two cells (cases, requests), by its metric's name."""
    call = {"name": "lookup", "arguments": {"x": 1}, "result": "ok"}
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "trace": {"steps": [{"tool_calls": [call]}], "output": "a"}}) + "\n"
                                              for i in range(3)))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: c.jsonl}\n" + config)
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "estimate", str(cfg)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout + done.stderr
    return {line.split()[0]: line.split()[1:3] for line in done.stdout.splitlines() if line.strip().startswith(("Task", "Tool", "Traj", "total"))}


def test_a_grouped_row_counts_its_cases(tmp_path: Path) -> None:
    rows = _rows(tmp_path, "metrics: [{type: TaskCompletion}, {type: TrajectoryEfficiency}]\n"
                           "judge: {provider: simulator, model: sim, group: case}\nrun: {trials: 2}\n")
    assert rows["TaskCompletion+TrajectoryEfficiency"] == ["6", "6"]  # 3 cases x 2 trials, one request each (was "0" cases)
    # The total counts each case once a trial (it summed the metrics' rows: 12 for 3 cases x 2 trials).
    assert rows["TaskCompletion"][0] == "6" and rows["total"][0] == "6"


def test_items_shared_across_cases_beside_a_metric_asked_per_question_are_priced(tmp_path: Path) -> None:
    # An odd item left to ask alone at the end, after a metric that is never grouped: estimate crashed with a TypeError.
    rows = _rows(tmp_path, "metrics: [{type: TaskCompletion}, {type: ToolCallNecessity, one_question_per_request: true}]\n"
                           "judge: {provider: simulator, model: sim, group: none, items_per_request: 2}\n")
    assert rows["TaskCompletion"] == ["3", "2"]  # three items: one request of two, and the odd one alone
    assert rows["ToolCallNecessity"] == ["3", "3"]
