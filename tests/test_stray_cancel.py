"""A cancellation of the run that no stop asked for (a metric cancelling every task of the event loop) is an internal
error: exit 3, one line on stderr naming the error and `RUN_DIR/crash.log`, `summary.json`'s `stopped` saying exit 3
and the command that resumes. It had escaped as Python's traceback, exit 1 (a gate FAIL to CI), no crash log, and a
summary saying `aborted`, exit 130. A real stop (SIGINT, SIGTERM) stays 130: `test_metric_self_cancel.py`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from _metric_runs import write_metric_run
from _metric_runs import tj as _tj
from tracejudge.stages.reports.stopped import stop_cause

CHECKS = '''\
import asyncio
import tracejudge as tj


@tj.metric
def cancel_all(case, trace):
    if case.id == "bad-1":
        for t in asyncio.all_tasks():
            t.cancel()
    return 1.0
'''


def test_a_metric_cancelling_every_task_is_an_internal_error(tmp_path: Path) -> None:
    write_metric_run(tmp_path, CHECKS, ["cancel_all"], 1)
    proc = _tj(tmp_path, "run", "eval.yaml", "--no-progress")
    run_dir = tmp_path / "runs" / "eval"
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("internal error: CancelledError: the run was cancelled, and no stop was asked for"), lines
    assert lines[0].endswith(f"(traceback in {run_dir / 'crash.log'})"), lines
    assert "Traceback" in (run_dir / "crash.log").read_text()
    stopped = json.loads((run_dir / "summary.json").read_text())["stopped"]
    assert stopped["how"] == "error" and stopped["exit_status"] == 3, stopped
    assert stopped["reason"].endswith("; resume with: tracejudge run eval.yaml --no-progress"), stopped


def test_a_cancellation_is_an_abort_unless_the_caller_says_it_cancels_only_after_a_stop() -> None:
    assert stop_cause(asyncio.CancelledError())["exit_status"] == 130  # (the Python API's caller cancelling its run)
    assert stop_cause(KeyboardInterrupt(), stray_cancel=True)["exit_status"] == 130
    group = BaseExceptionGroup("g", [asyncio.CancelledError(), ValueError("boom")])
    assert stop_cause(group, stray_cancel=True) == {"how": "error", "exit_status": 3, "reason": "internal error: ValueError: boom"}
