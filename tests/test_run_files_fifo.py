"""A FIFO in the place of a run directory's manifest.json, summary.json or checkpoint.json (an unpacked artifact, a
crafted directory) is said to be no file, never waited on: a plain read of one waits for a writer forever, and it hung
`report`, the viewer's pages and a resume."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _runs import view_server
from test_resume_untrusted import finished  # noqa: F401  (finished: a run of 3 cases, shared)
from test_viewer_usability import get
from tracejudge.core.errors import ManifestError
from tracejudge.engine import store
from tracejudge.engine.checkpoint_file import recorded_config_hash
from tracejudge.engine.run_state import last_segment_finished, resume_command, results_beyond_checkpoint, summary_of
import _forkserver


def _with_fifo(finished: Path, where: Path, name: str, *, interrupted: bool = False) -> Path:
    shutil.copytree(finished, where, ignore=shutil.ignore_patterns("view.idx*"))
    if interrupted:  # (its resume command is then looked for, in the manifest when the checkpoint records none)
        cp = json.loads((where / "checkpoint.json").read_text())
        cp["segments"][-1]["ended"] = "running"
        cp["segments"][-1].pop("command", None)
        (where / "checkpoint.json").write_text(json.dumps(cp))
        summary = json.loads((where / "summary.json").read_text())
        (where / "summary.json").write_text(json.dumps({**summary, "complete": False}))
    (where / name).unlink()
    os.mkfifo(where / name)
    return where


def _returns(call: Callable[[], Any], fifo: Path, timeout_s: float = 20) -> Any:
    """`call()`'s value, failing when it is still waiting after `timeout_s` (a reader waiting on `fifo` is then let go by
    opening it for writing and closing it, so the test process is never left hung)."""
    got: dict[str, Any] = {}

    def work() -> None:
        try:
            got["value"] = call()
        except BaseException as exc:  # noqa: BLE001  (handed to the test)
            got["error"] = exc

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(10)
        pytest.fail(f"waited on the FIFO {fifo.name}")
    if "error" in got:
        raise got["error"]
    return got.get("value")


def test_a_fifo_as_the_manifest_is_refused_at_once(finished: Path, tmp_path: Path) -> None:
    run_dir = _with_fifo(finished, tmp_path / "m", "manifest.json", interrupted=True)
    fifo = run_dir / "manifest.json"
    with pytest.raises(ManifestError, match="manifest is not a regular file"):
        _returns(lambda: store.read_manifest(run_dir), fifo)
    assert _returns(lambda: store.read_manifest(run_dir, strict=False), fifo) is None
    assert _returns(lambda: resume_command(run_dir), fifo).startswith(f"tracejudge run CONFIG --run-dir {run_dir}")
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "manifest.json: manifest is not a regular file (a FIFO, a device or a socket)" in proc.stderr, proc.stderr
    with view_server(str(run_dir)) as url:  # (its state looks for the resume command in the manifest)
        for path in ("/run/m", "/?list"):
            status, page = get(url + path)
            assert status == 200 and "interrupted" in page, (path, status, page[:300])


@pytest.mark.parametrize("name", ["summary.json", "checkpoint.json"])
def test_a_fifo_as_the_summary_or_the_checkpoint_is_no_file(finished: Path, tmp_path: Path, name: str) -> None:
    run_dir = _with_fifo(finished, tmp_path / "r", name)
    fifo = run_dir / name
    summary = _returns(lambda: summary_of(run_dir), fifo)
    assert summary is None if name == "summary.json" else summary["complete"] is True
    assert _returns(lambda: results_beyond_checkpoint(run_dir), fifo) is False
    _returns(lambda: (last_segment_finished(run_dir), recorded_config_hash(run_dir)), fifo)
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1) and "verdict:" in proc.stdout, proc.stdout + proc.stderr


def test_a_fifo_as_the_results_is_refused_at_once(finished: Path, tmp_path: Path) -> None:
    # report, compare and a resume read results.jsonl with a plain open, which waited for a writer forever.
    from tracejudge.core.regular_file import NotRegularFile
    from tracejudge.engine.result_lines import iter_result_lines

    run_dir = _with_fifo(finished, tmp_path / "r", "results.jsonl")
    fifo = run_dir / "results.jsonl"
    with pytest.raises(NotRegularFile):
        _returns(lambda: list(iter_result_lines(fifo)), fifo)
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "report", str(run_dir)], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr.strip()) == (2, f"error: {fifo}: not a regular file (a FIFO, a device or a socket)"), proc.stderr
    # export read it inside the writing of its CSV, whose error was then named as the CSV's own (an internal error, exit 3).
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "export", str(run_dir), "--to", "csv", str(tmp_path / "out.csv")],
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr.strip()) == (2, f"error: {fifo}: not a regular file (a FIFO, a device or a socket)"), proc.stderr
    assert not (tmp_path / "out.csv").exists()


def test_a_folder_in_a_files_place_is_a_folder_not_a_fifo(tmp_path: Path) -> None:
    # `os.open` opens a folder read-only; it was then called "not a regular file (a FIFO, a device or a socket)".
    from tracejudge.core.regular_file import open_regular

    (tmp_path / "results.jsonl").mkdir()
    with pytest.raises(IsADirectoryError) as got:
        open_regular(tmp_path / "results.jsonl")
    assert str(got.value) == f"[Errno 21] Is a directory: '{tmp_path / 'results.jsonl'}'"
