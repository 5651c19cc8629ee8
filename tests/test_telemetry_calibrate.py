"""`tracejudge calibrate`: README's example prints what README shows, and a long metric name keeps the table's figures
whole and in their columns at 80 columns, the name given whole after the table. Real processes, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import DATA
from readme_blocks import copy_layout, mismatch, parse
import _forkserver

REPO = Path(__file__).resolve().parents[1]
TJ = Path(sys.executable).with_name("tracejudge")
EXAMPLE = "tracejudge calibrate configs/demo.yaml --labels-field TaskCompletion=metadata.reward"
LONG = "customersupportresolutionquality-with-policycompliancecheckv2"  # 61 characters, no word break that fits


def _env(columns: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "PYTEST_", "COLUMNS", "LINES"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return env


def test_readme_calibrate_example_prints_what_readme_shows(tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip("the shared data README reads is not beside the repository")
    blocks = [b for b in parse((REPO / "README.md").read_text(encoding="utf-8")) if b.script.strip() == EXAMPLE]
    assert len(blocks) == 1 and blocks[0].kind == "run" and blocks[0].expected, "README shows the calibrate example as a block"
    root = copy_layout(REPO, DATA, tmp_path)
    done = _forkserver.run(["bash", "-c", "set -eo pipefail\n" + blocks[0].script], cwd=root, env=_env(None), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    wrong = mismatch(blocks[0].expected, done.stdout + done.stderr)
    assert wrong is None, wrong
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "κ ≈ 0.02 (accuracy 0.50" not in text  # (the figures it printed before)


def test_a_long_metric_name_keeps_the_figures_whole_and_aligned_at_80_columns(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    with open(cases, "w") as fh:
        for i in range(12):
            called = ["a", "b"] if i % 3 else ["a"]
            fh.write(json.dumps({"id": f"c{i}", "expected_tool_calls": [{"name": "a"}, {"name": "b"}], "metadata": {"reward": float(i % 2)},
                                 "trace": {"steps": [{"tool_calls": [{"name": n, "arguments": {}} for n in called]}], "output": "done"}}) + "\n")
    # (the judge: the simulator the run starts itself on 127.0.0.1)
    cfg = {"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": "TaskCompletion", "name": LONG}, {"type": "TaskCompletion"}],
           "judge": {"provider": "simulator", "model": "gpt-4o-mini"}, "run": {"dir": str(tmp_path / "run")},
           "cache": {"dir": str(tmp_path / "cache")}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    done = _forkserver.run([str(TJ), "calibrate", str(path), "--labels-field", f"{LONG}=metadata.reward", "--labels-field",
                           "TaskCompletion=metadata.reward"], env=_env(80), capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    lines = done.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("metric "))
    table = lines[head:lines.index("", head) if "" in lines[head:] else head + 8]
    rows = [line for line in table[2:] if line.strip()]
    assert all(len(line) <= 80 for line in table), table
    # Each metric's first row holds its figures in the header's columns: the `n` column's right edge is the same.
    firsts = [line for line in rows if any(line.startswith(p) for p in (LONG[:8], "TaskCompletion "))]
    assert len(firsts) == 2, table
    edge = table[0].index(" n") + 2
    for line in firsts:
        assert line[:edge].rstrip().endswith("12"), (line, table)
        assert " [" not in line  # (a figure's CI sits under it, whole)
    # The long name is broken in pieces in its column (never a figure cut), whole when read down the column, or, cut
    # short with an ellipsis, given whole after the table.
    at = next(i for i, line in enumerate(table) if line.startswith(LONG[:8]))
    column = "".join(line[:edge - 2].strip() for line in table[at:at + 3])
    assert column.startswith(LONG) or (column.endswith("…") and any(line.strip().endswith(f"= {LONG}") for line in lines)), table
