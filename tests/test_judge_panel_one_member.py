"""A judge panel (`judge.models`) of one member: its verdicts are that model's, but every figure a panel is for (Fleiss'
κ, each member's leave-one-out agreement) compares members, and the run left `judge.panel.metrics` empty without a word.
It now warns, naming the config file, its line and the field. Real `tracejudge run` processes; the judge is the simulator
the run starts on 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _runs import native_case, write_dataset
import _forkserver


def _run(tmp: Path, models: list[str]) -> tuple[subprocess.CompletedProcess[str], Path]:
    write_dataset(tmp / "cases.jsonl", [native_case(f"c{i}", ["a"], ["a"]) for i in range(3)])
    cfg = tmp / f"panel{len(models)}.yaml"
    cfg.write_text("dataset: {path: cases.jsonl, format: native}\n"
                   "metrics: [{type: TaskCompletion}]\n"
                   "judge:\n"
                   "  provider: simulator\n"
                   f"  models: {json.dumps(models)}\n"
                   f"run: {{dir: run{len(models)}}}\n")
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg)], capture_output=True, text=True, cwd=tmp, timeout=300)
    return proc, cfg


def test_a_panel_of_one_member_is_warned_of_at_its_line(tmp_path: Path) -> None:
    proc, cfg = _run(tmp_path, ["simulator:a"])
    assert proc.returncode == 0, proc.stdout + proc.stderr  # a warning: the run is sound, its verdicts are the member's
    assert f"{cfg}:5: judge.models: a panel of one member (simulator:a)" in proc.stderr, proc.stderr
    assert "Fleiss' kappa and each member's leave-one-out agreement" in proc.stderr and "judge.model: simulator:a" in proc.stderr
    summary = json.loads((tmp_path / "run1" / "summary.json").read_text())
    assert summary["judge"]["panel"]["metrics"] == {}  # what the warning says: no agreement figure


def test_a_panel_of_two_members_is_not_warned_of(tmp_path: Path) -> None:
    proc, _ = _run(tmp_path, ["simulator:a", "simulator:b"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "panel of one member" not in proc.stderr, proc.stderr
    summary = json.loads((tmp_path / "run2" / "summary.json").read_text())
    assert summary["judge"]["panel"]["metrics"]["TaskCompletion"]["subjects"] > 0
