"""Progress log lines (stderr not a terminal) follow `--log-level`: shown at the default, not at `error`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _runs import native_case, write_dataset  # noqa: E402
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")


@pytest.mark.parametrize(("args", "shown"), [
    ([], True),
    (["--log-level", "error"], False),
    (["run", "--log-level", "error"], False),  # the option typed after the command
])
def test_progress_lines_are_left_out_at_log_level_error(tmp_path: Path, args: list[str], shown: bool) -> None:
    write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", ["a"], ["a"]) for i in range(3)])
    (tmp_path / "config.yaml").write_text("dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: ToolCorrectness}]\n")
    argv = [*args, "config.yaml"] if args[:1] == ["run"] else [*args, "run", "config.yaml"]
    got = _forkserver.run([str(TJ), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    progress = [line for line in got.stderr.splitlines() if '"event": "progress' in line]
    assert bool(progress) is shown, got.stderr
    assert "verdict: PASS" in got.stdout + got.stderr
