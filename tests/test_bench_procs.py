"""The benchmarks' process helper (`benchmarks/_procs.py`): what a benchmark starts never outlives it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import _procs  # noqa: E402
from _procs import guarded, started, timed  # noqa: E402

# A server that ignores SIGTERM and has a worker of its own: the shape of a stuck simulator.
STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
print(os.getpid(), worker.pid, flush=True)
time.sleep(300)
"""


def gone(pid: int) -> bool:
    """Has `pid` stopped running (exited, or a zombie waiting to be reaped)? Polls for up to 10 s: SIGKILL is delivered asynchronously."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(") ", 1)[-1][0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_a_process_that_ignores_sigterm_is_killed_with_its_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_procs, "GRACE_S", 0.5)
    with started([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True) as proc:
        leader, worker = map(int, proc.stdout.readline().split())
    assert proc.returncode == -signal.SIGKILL
    assert gone(leader) and gone(worker)


def test_timed_counts_the_cpu_of_the_child_and_its_workers() -> None:
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    code = f"import subprocess, sys\n{spin}subprocess.run([sys.executable, '-c', {spin!r}])\nprint('done')"
    done = timed([sys.executable, "-c", code]).check("spinner")
    assert done.stdout.strip() == "done"
    assert done.cpu >= 0.6


def test_a_failed_step_prints_what_was_measured_then_the_error_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    measured: list[str] = []

    def measure() -> None:
        measured.append("first row")
        raise RuntimeError("the second step broke")

    with pytest.raises(SystemExit) as stopped:
        guarded(measure, lambda: print("table:", *measured))
    assert stopped.value.code == 1
    out, err = capsys.readouterr()
    assert out == "table: first row\n"
    assert "partial" in err and "RuntimeError: the second step broke" in err
