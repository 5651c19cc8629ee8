"""A FIFO or a device in the place of a run directory's bookkeeping files (results.idx, cursor.ids, cursor.json,
checkpoint.json, configs.jsonl, the judge's journals) is never waited on: a resume refuses the ones it opens in place
naming the file, writes the others anew, and `report` and `estimate` read on without them. Each file used to be opened
with a plain open, which waits for a writer forever: the resume hung, deaf to SIGTERM, and so did `report` on an
interrupted run's judge_spend.jsonl.

Every command runs as a real process under a generous timeout: one that waits on the FIFO is killed by the timeout
and the test fails on it."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from _runs import native_case, write_config, write_dataset
from tracejudge.engine.run_state import IN_PLACE
from tracejudge.entrypoints.cli import main
import _forkserver

NOT_A_FILE = "not a regular file (a FIFO, a device or a socket)"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of 3 cases judged by the simulator the run starts on 127.0.0.1; its config is `c.yaml` beside it."""
    tmp = tmp_path_factory.mktemp("judged")
    data = write_dataset(tmp / "d.jsonl", [native_case(f"c-{i}", ["a"], ["a"]) for i in range(3)])
    config = write_config(tmp / "c.yaml", data, tmp / "done", judge={"provider": "simulator", "model": "gpt-4o-mini"},
                          metrics=[{"type": "ToolCorrectness", "name": "tc"}, {"type": "TaskCompletion"}])
    assert main(["run", str(config), "--no-progress"]) == 0
    return tmp / "done"


def _copy(judged: Path, where: Path, name: str, *, interrupted: bool = False, device: bool = False) -> Path:
    """A copy of the run with a FIFO (or a symlink to /dev/zero) in place of `name`; interrupted: its last segment never ended."""
    shutil.copytree(judged, where, ignore=shutil.ignore_patterns("view.idx*", ".lock"))
    if interrupted:
        cp = json.loads((where / "checkpoint.json").read_text())
        cp["segments"][-1]["ended"] = "running"
        (where / "checkpoint.json").write_text(json.dumps(cp))
        summary = json.loads((where / "summary.json").read_text())
        (where / "summary.json").write_text(json.dumps({**summary, "complete": False}))
    (where / name).unlink(missing_ok=True)
    if device:
        os.symlink("/dev/zero", where / name)
    else:
        os.mkfifo(where / name)
    return where


def _tracejudge(*args: str) -> tuple[int, str, str]:
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, timeout=180)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("name", ["results.idx", "cursor.ids", "configs.jsonl", "judge_spend.jsonl", "judge_run_id"])
def test_a_resume_refuses_a_fifo_it_would_open_in_place(judged: Path, tmp_path: Path, name: str) -> None:
    assert name in IN_PLACE
    run_dir = _copy(judged, tmp_path / "r", name, interrupted=True)
    manifest = (run_dir / "manifest.json").read_bytes()
    code, _, err = _tracejudge("run", str(judged.parent / "c.yaml"), "--run-dir", str(run_dir), "--no-progress")
    assert (code, err.strip()) == (2, f"error: {run_dir / name}: {NOT_A_FILE}"), err
    # Refused before anything was written: the directory is as it was, the FIFO still there for the user to see.
    assert (run_dir / "manifest.json").read_bytes() == manifest and (run_dir / name).is_fifo()


def test_a_device_in_the_index_s_place_is_refused_too(judged: Path, tmp_path: Path) -> None:
    # (a symlink to /dev/zero: a read of it never ends; stat follows the link)
    run_dir = _copy(judged, tmp_path / "r", "results.idx", device=True)
    code, _, err = _tracejudge("run", str(judged.parent / "c.yaml"), "--run-dir", str(run_dir), "--no-progress")
    assert (code, err.strip()) == (2, f"error: {run_dir / 'results.idx'}: {NOT_A_FILE}"), err


@pytest.mark.parametrize("name", ["cursor.json", "checkpoint.json"])
def test_a_fifo_as_a_file_the_resume_replaces_is_written_anew(judged: Path, tmp_path: Path, name: str) -> None:
    run_dir = _copy(judged, tmp_path / "r", name, interrupted=True)
    code, out, err = _tracejudge("run", str(judged.parent / "c.yaml"), "--run-dir", str(run_dir), "--no-progress")
    assert code == 0 and "verdict: PASS" in out and "3 already finished" in out, out + err
    assert (run_dir / name).is_file() and not (run_dir / name).is_fifo()
    # ... and the next resume reads it as it reads any (the cursor is used again; the checkpoint reused).
    code, out, err = _tracejudge("run", str(judged.parent / "c.yaml"), "--run-dir", str(run_dir), "--no-progress")
    assert code == 0 and "not reused" not in err and "not used" not in err, err


def test_report_and_estimate_read_on_without_a_fifo_journal_or_index(judged: Path, tmp_path: Path) -> None:
    run_dir = _copy(judged, tmp_path / "spend", "judge_spend.jsonl", interrupted=True)
    code, out, err = _tracejudge("report", str(run_dir))
    assert code == 130 and "verdict: INTERRUPTED" in out, out + err
    run_dir = _copy(judged, tmp_path / "idx", "results.idx", interrupted=True)
    code, out, err = _tracejudge("estimate", str(judged.parent / "c.yaml"), "--run-dir", str(run_dir))
    assert code == 0 and "TaskCompletion" in out, out + err
