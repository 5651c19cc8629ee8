"""SIGTERM while the dataset's reader waits on a pipe that stays open without data stops the run at once, as any stop:
exit status 130, `summary.stopped` saying a stop was asked for, and the resume finishes the run.

The reader is a user `Format` (a module beside the config) reading cases from a named pipe this test holds open. The
run's read waited for the reader's next record, so a SIGTERM was acted on only once the pipe closed. The run is a real
process under a generous timeout: one still waiting is killed by it and the test fails."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml
from _runs import native_case, write_config, write_dataset
import _forkserver

_FORMAT = '''
import dataclasses
from tracejudge.core import registry
from tracejudge.stages.load import RawRecord

_native = registry.format_for("native")


def _read(dataset):
    # The cases come from a named pipe beside the dataset file, written as a producer makes them.
    name = str(dataset.path) + ".pipe"
    with open(name, "rb") as fh:
        for n, line in enumerate(fh, 1):
            yield RawRecord(file=name, line=n, payload=line)


fmt = dataclasses.replace(_native, name="piped", read=_read, peek_id=None, count=None)
'''


def _writer(pipe: Path, proc: subprocess.Popen) -> int:
    """A descriptor writing to `pipe` once the run's reader has opened it; fails when the run ends first or never does."""
    deadline = time.monotonic() + 120
    while True:
        try:
            fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)  # (ENXIO while no reader has it open)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
        else:
            os.set_blocking(fd, True)
            return fd
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never opened the pipe"
        time.sleep(0.02)


def _run(cfg: Path) -> subprocess.Popen:
    return _forkserver.popen([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], cwd=cfg.parent,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigterm_while_the_reader_waits_on_a_pipe_stops_the_run(tmp_path: Path) -> None:
    (tmp_path / "piped.py").write_text(_FORMAT)
    data = write_dataset(tmp_path / "d.jsonl", [native_case(f"c-{i}", ["a"], ["a"]) for i in range(3)])
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run")
    body = yaml.safe_load(cfg.read_text())
    body["dataset"]["format"] = "piped:fmt"
    cfg.write_text(yaml.safe_dump(body))
    lines = data.read_bytes().splitlines(True)
    pipe = Path(f"{data}.pipe")
    os.mkfifo(pipe)

    proc = _run(cfg)
    try:
        fd = _writer(pipe, proc)
        try:
            os.write(fd, lines[0])  # one case, then nothing: the reader waits for the next line
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=120)
        finally:
            os.close(fd)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130 and "verdict: INTERRUPTED" in out, out + err
    stopped = json.loads((tmp_path / "run" / "summary.json").read_text())["stopped"]
    assert stopped["how"] == "stopped" and "stopped on request" in stopped["reason"], stopped

    # The resume reads the pipe again from its start and finishes the run.
    proc = _run(cfg)
    try:
        fd = _writer(pipe, proc)
        try:
            os.write(fd, b"".join(lines))
        finally:
            os.close(fd)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and "verdict: PASS" in out, out + err
    assert sorted(json.loads(line)["case_id"] for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()) == ["c-0", "c-1", "c-2"]
