"""A run with several judge metrics resumes from its checkpoint: per-item judge counts may exceed the result lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import require
import _forkserver

ROOT = Path(__file__).resolve().parent.parent


def test_resume_of_a_run_with_two_judge_metrics_reuses_its_checkpoint(tmp_path: Path) -> None:
    """The demo judges two metrics a case: 2 × 30 judged items over 30 result lines is a true checkpoint, not a damaged one."""
    require(ROOT.parent / "shared" / "data" / "tau_bench")
    cmd = [sys.executable, "-m", "tracejudge", "run", str(ROOT / "configs" / "demo.yaml"), "--run-dir", str(tmp_path / "run"),
           "--set", "dataset.limit=30", "--no-progress"]
    first = _forkserver.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert first.returncode in (0, 1), first.stderr  # the demo's gate on 30 cases may fail; the run itself finished
    again = _forkserver.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert again.returncode == first.returncode, again.stderr
    assert "checkpoint not reused" not in again.stderr, again.stderr
