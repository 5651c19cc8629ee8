"""`run.trials` above 1 without a target: the recorded traces do not change between trials, and the run says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _runs import native_case, write_dataset
import _forkserver

TRACEJUDGE = str(Path(sys.executable).with_name("tracejudge"))


def config(tmp: Path, cases: int) -> Path:
    data = write_dataset(tmp / "cases.jsonl", [native_case(f"c{i}", ["a"], ["a"]) for i in range(cases)])
    cfg = tmp / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "ToolCalls"}],
                               "run": {"dir": str(tmp / "run")}}))
    return cfg


def test_trials_on_recorded_traces_warn_that_they_need_a_target(tmp_path: Path) -> None:
    # Three trials of a recorded trace are the same trace scored three times: pass@3 = pass@1 and a narrower CI, silently.
    cfg = config(tmp_path, 2)
    warned = _forkserver.run([TRACEJUDGE, "run", str(cfg), "--no-progress", "--set", "run.trials=3"], capture_output=True, text=True,
                            timeout=120)
    assert warned.returncode == 0, warned.stderr[-2000:]
    assert "run.trials is 3 but there is no target" in warned.stderr
    assert "trials need a `target:` section that runs the agent again" in warned.stderr and "judge.samples" in warned.stderr
    once = _forkserver.run([TRACEJUDGE, "run", str(cfg), "--no-progress", "--run-dir", str(tmp_path / "one")], capture_output=True,
                          text=True, timeout=120)
    assert once.returncode == 0 and "no target" not in once.stderr
