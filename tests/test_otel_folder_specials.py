"""Format `otel`, a folder of exports holding what is no regular file: a FIFO is counted in the folder's warning with
its reason (it was left out without a word), and a symbolic link loop's `invalid_input` says it is a loop (it said the
link's target was missing). The reads run as `tracejudge extract` in a child process: a FIFO opened for reading would
wait for a writer, so the timeout only guards against a hang.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "otel-loop-faults"

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")


def _extract(tmp_path: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {folder.name}, format: otel}}\nmetrics: [{{type: MaxToolCalls, max_calls: 10}}]\n")
    return subprocess.run([sys.executable, "-m", "tracejudge", "extract", str(cfg), "-o", "-"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(DATA / "oi-empty-result.jsonl", folder / "run.jsonl")  # a real OpenInference recording: one conversation
    return folder


def test_a_fifo_in_the_folder_is_counted_in_the_warning_as_a_named_pipe_and_the_others_read(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    os.mkfifo(folder / "pipe.jsonl")
    got = _extract(tmp_path, folder)
    assert got.returncode == 0, got.stderr
    assert len([json.loads(line) for line in got.stdout.splitlines()]) == 1, got.stdout
    warned = [line for line in got.stderr.splitlines() if "not read" in line]
    assert len(warned) == 1, got.stderr
    assert f"1 files under {folder} not read: 1 a FIFO (named pipe), not a regular file: pipe.jsonl" in warned[0]


def test_a_symbolic_link_loop_in_the_folder_is_invalid_input_saying_it_is_a_loop(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "a.jsonl").symlink_to("b.jsonl")
    (folder / "b.jsonl").symlink_to("a.jsonl")
    (folder / "gone.jsonl").symlink_to("nowhere.jsonl")
    got = _extract(tmp_path, folder)
    assert got.returncode == 1, got.stderr
    said = {line.split(": ", 1)[0].rsplit("/", 1)[-1]: line for line in got.stderr.splitlines() if line.startswith("invalid input")}
    assert sorted(said) == ["a.jsonl:1", "b.jsonl:1", "gone.jsonl:1"], got.stderr
    for name in ("a.jsonl:1", "b.jsonl:1"):
        assert said[name].endswith("(a symbolic link loop)") and "target is missing" not in said[name]
    assert said["gone.jsonl:1"].endswith("(a symbolic link whose target is missing)")
    assert len([json.loads(line) for line in got.stdout.splitlines()]) == 1, got.stdout
