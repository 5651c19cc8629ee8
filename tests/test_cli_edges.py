"""Edges of the command line a first user meets: a closed stdout pipe, alias bombs, option names in errors."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.yaml"
TRACEJUDGE = Path(sys.executable).with_name("tracejudge")


def _crash_logs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("tracejudge-crash-*.log"))


def test_a_reader_that_closes_stdout_ends_the_command_quietly_with_141():
    before = _crash_logs()
    proc = subprocess.Popen([str(TRACEJUDGE), "extract", str(DEMO), "-o", "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`: the reader goes away while the writer has more to say
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, stderr
    assert first.startswith("{")
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert _crash_logs() == before
