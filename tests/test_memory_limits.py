"""Memory: trials are made as the stages take them, `run.trials` is bounded, and running out of memory is exit 3 with a crash log.

Every command runs under an address-space limit (RLIMIT_AS), so a regression fails here instead of eating the machine.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _runs import native_case, write_dataset
import _forkserver

TRACEJUDGE = str(Path(sys.executable).with_name("tracejudge"))
LIMIT = 600 << 20  # a run of a few cases needs well under half of it


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def config(tmp: Path, cases: int, **run: object) -> Path:
    data = write_dataset(tmp / "cases.jsonl", [native_case(f"c{i}", ["a"], ["a"]) for i in range(cases)])
    cfg = tmp / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "ToolCalls"}],
                               "run": {"dir": str(tmp / "run"), **run}}))
    return cfg


def test_a_trial_count_beyond_the_bound_is_a_config_error(tmp_path: Path) -> None:
    got = _forkserver.run([TRACEJUDGE, "run", str(config(tmp_path, 3)), "--no-progress", "--set", "run.trials=100000000000"],
                         capture_output=True, text=True, timeout=120, preexec_fn=_capped)
    assert got.returncode == 2, got.stderr[-2000:]
    assert "--set run.trials=100000000000: run.trials: at most 10,000 trials" in got.stderr and not (tmp_path / "run").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and SIGINT as on Linux")
def test_trials_are_made_as_taken_so_results_come_at_once_in_flat_memory(tmp_path: Path) -> None:
    # 256 cases × 10,000 trials: all of a chunk's trials built at once took more than the limit before any was
    # written (the process died of MemoryError). Made as taken, results are written at once; the run is stopped then.
    proc = _forkserver.popen([TRACEJUDGE, "run", str(config(tmp_path, 256, trials=10_000)), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_capped)
    results = tmp_path / "run" / "results.jsonl"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline and not (results.exists() and results.stat().st_size > 0):
        time.sleep(0.05)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert results.stat().st_size > 0 and "INTERRUPTED" in out


def test_running_out_of_memory_is_exit_3_with_a_crash_log_not_a_gate_failure(tmp_path: Path) -> None:
    # An adapter that builds more than the process may hold: the MemoryError used to become invalid_input results
    # (exit 1, read as bad data), and where the traceback could not be formatted, Python's bare MemoryError and exit 1.
    (tmp_path / "hog.py").write_text("def read(record, options):\n    hoard = []\n    while True:\n        hoard.append([0] * 1_000_000)\n")
    cfg = config(tmp_path, 3)
    for executor in ("inprocess", "processes"):
        data = json.loads(cfg.read_text())
        data["dataset"]["format"], data["run"] = "hog:read", {"dir": str(tmp_path / executor), "executor": executor}
        cfg.write_text(json.dumps(data))
        got = _forkserver.run([TRACEJUDGE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=180, preexec_fn=_capped)
        assert got.returncode == 3, (executor, got.returncode, got.stderr[-2000:])
        line = got.stderr.strip().splitlines()[-1]
        assert line == f"internal error: MemoryError: out of memory (traceback in {tmp_path / executor / 'crash.log'})", line
        log = (tmp_path / executor / "crash.log").read_text()
        assert "MemoryError" in log
        assert (tmp_path / executor / "results.jsonl").read_text() == ""  # no case marked invalid: the resume reads them again
        # The failing frames are freed before the stop path writes the reports, so they fit in what is left: all three say
        # why the run stopped, and the crash log holds the one MemoryError (writing them used to run out too, inside it).
        assert "During handling of the above exception" not in log, log[-3000:]
        stopped = json.loads((tmp_path / executor / "summary.json").read_text())["stopped"]
        assert stopped["reason"] == "internal error: MemoryError: out of memory", stopped
        for name in ("report.md", "report.html", "junit.xml"):
            assert "out of memory" in (tmp_path / executor / name).read_text(), name



def test_an_error_raised_while_running_out_of_memory_is_reported_as_the_memory_error(tmp_path: Path) -> None:
    # Out of memory, the stop path's own writing can fail next: a second MemoryError, or CPython's SystemError from an
    # allocation that failed inside an import (`import structlog` for the warning). The one line names the MemoryError
    # the run failed of, and the whole chain is in the crash log.
    import argparse
    import io

    from rich.console import Console
    from tracejudge.entrypoints.commands.failures import crash

    try:
        try:
            raise MemoryError
        except MemoryError:
            raise SystemError("error return without exception set")  # noqa: B904 (as CPython chains it: the context)
    except SystemError as exc:
        failed: BaseException = ExceptionGroup("unhandled errors in a TaskGroup", [exc])
    out = io.StringIO()
    code = crash(argparse.Namespace(crash_dir=str(tmp_path), argv=["run", "c.yaml"]), failed, Console(file=out, width=400))
    assert code == 3
    assert out.getvalue().strip() == f"internal error: MemoryError: out of memory (traceback in {tmp_path / 'crash.log'})"
    log = (tmp_path / "crash.log").read_text()
    assert "MemoryError" in log and "SystemError: error return without exception set" in log
