"""A result never scored because its worker process died fails the gate, whatever `max_invalid_share` allows, and is
counted in `summary.json`'s `worker_errors` (real processes; a custom metric that ends its worker on some cases)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")

METRIC = """\
import os
import tracejudge

@tracejudge.metric
def dies_on(case, trace) -> bool:
    if os.environ.get("CRASH") == "1" and case.id in ("c5", "c77"):
        os._exit(9)  # what a crash in native code looks like from the head
    return True
"""


def _run(tmp_path: Path, crash: bool) -> tuple[subprocess.CompletedProcess[str], dict]:
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "CRASH": "1" if crash else "0"}
    got = _forkserver.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=240)
    return got, json.loads((tmp_path / "out" / "summary.json").read_text())


def test_a_worker_death_fails_the_gate_and_the_same_command_redoes_it(tmp_path):
    (tmp_path / "crashmetric.py").write_text(METRIC)
    with open(tmp_path / "cases.jsonl", "w") as fh:
        for i in range(300):
            fh.write(json.dumps({"id": f"c{i}", "input": "x", "trace": {"steps": [], "output": "ok"}}) + "\n")
    (tmp_path / "run.yaml").write_text(
        "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: 'crashmetric:dies_on'}\n"
        "run: {dir: out, processes: 2}\nassertions: {max_invalid_share: 0.5}\n")
    got, summary = _run(tmp_path, crash=True)
    assert summary["worker_errors"] == 2, summary
    assert got.returncode == 1, got.stdout + got.stderr
    assert "worker errors" in got.stdout and "2 of 300 results were never scored" in got.stdout, got.stdout
    # `report` gives the run's verdict: it counts them from results.jsonl too (it wrote a summary without them: PASS).
    written = (tmp_path / "out" / "summary.json").read_bytes()
    report = _forkserver.run([str(TRACEJUDGE), "report", "out"], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert report.returncode == 1 and "2 of 300 results were never scored" in report.stdout, report.stdout + report.stderr
    assert (tmp_path / "out" / "summary.json").read_bytes() == written
    got, summary = _run(tmp_path, crash=False)  # the same command, the crash gone: both redone, the gate passes
    assert got.returncode == 0, got.stdout + got.stderr
    assert "worker_errors" not in summary and summary["results"] == 300 and summary["status"] == {"ok": 300}, summary
