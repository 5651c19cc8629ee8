"""Runs of `tracejudge run` over four native cases scored by `ToolCalls` and custom metrics of a `checks.py`, as the
metric-fault tests make them: `write_metric_run` writes the files, `tj` runs the command line, `results` reads back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
import _forkserver

IDS = ["ok-0", "bad-1", "ok-2", "bad-3"]


def write_metric_run(tmp_path: Path, checks: str, metrics: list[str], processes: int) -> None:
    """`checks.py` (`checks`), `data.jsonl` (the `IDS`, each with one call that ToolCalls expects) and `eval.yaml`
    (ToolCalls and `checks:<m>` for each of `metrics`, `run.processes` `processes`, run directory `runs/eval`)."""
    (tmp_path / "checks.py").write_text(checks)
    case = {"trace": {"steps": [{"tool_calls": [{"name": "t", "arguments": {"a": 1}}]}], "output": "ok"},
            "expected_tool_calls": [{"name": "t", "arguments": {"a": 1}}]}
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"id": i, **case}) + "\n" for i in IDS))
    specs = ", ".join(["{type: ToolCalls}", *(f'{{type: "checks:{m}"}}' for m in metrics)])
    (tmp_path / "eval.yaml").write_text(f"dataset: {{path: data.jsonl, format: native}}\nmetrics: [{specs}]\n"
                                        f"run: {{dir: runs/eval, processes: {processes}}}\n")


def tj(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m tracejudge ARGS` in `cwd`, its output captured (text), at most 120 s."""
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def results(run_dir: Path) -> dict[str, dict]:
    """The result lines of `run_dir` by case id (a later line for an id replaces an earlier one)."""
    return {r["case_id"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}
