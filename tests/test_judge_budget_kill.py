"""The judge budget holds across SIGKILL: a resume counts what the killed process spent."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
import _forkserver

REPO = Path(__file__).resolve().parent.parent
TJ = Path(sys.executable).with_name("tracejudge")
BUDGET = 250_000  # about half of what the demo's judge needs (one grouped request per case)


def _spent(run_dir: Path) -> int:
    total = 0
    text = (run_dir / "results.jsonl").read_text() if (run_dir / "results.jsonl").exists() else ""
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            continue  # the line being written (a running process's, or a killed one's torn tail)
        for score in json.loads(line)["scores"].values():
            info = score.get("judge")
            if info and not info["cached"]:
                total += info["input_tokens"] + info["output_tokens"]
    return total


def test_budget_holds_and_is_reported_after_a_kill(tmp_path: Path) -> None:
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    args = [str(TJ), "run", str(REPO / "configs" / "demo.yaml"), "--no-progress", "--set", f"run.dir={run_dir}",
            "--set", f"cache.dir={cache}", "--set", f"budget.max_judge_tokens={BUDGET}"]
    first = _forkserver.popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = run_dir / "results.jsonl"
    deadline = time.monotonic() + 60
    # Killed once a result holds judge spend: the cases skipped for the budget (while earlier requests hold it) finish
    # at once and can make the first twenty lines, with no answered case among them yet.
    while time.monotonic() < deadline and (not results.exists() or results.read_bytes().count(b"\n") < 20 or _spent(run_dir) == 0):
        time.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    killed_spent = _spent(run_dir)
    assert killed_spent > 0

    second = _forkserver.run(args, capture_output=True, text=True, timeout=300)
    assert second.returncode in (0, 1), second.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    spent = _spent(run_dir)
    # Every token the results record counts in the summary, the killed segment's included
    # (the summary also counts what went into answers no result line kept), and the resume
    # spent only what the budget had left.
    reported = summary["judge"]["input_tokens"] + summary["judge"]["output_tokens"]
    assert spent <= reported <= BUDGET
    assert summary["status"].get("skipped_budget", 0) > 0
