"""`_forkserver.run`/`popen` against plain `subprocess` on the same `tracejudge` commands: where a test could tell a
forked command from a fresh process (what `communicate` returns, the errors `subprocess` raises, the umask), and that a
killed test process leaves neither a server nor its folder behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path
from typing import Any

import pytest

import _forkserver

TJ = [sys.executable, "-m", "tracejudge"]
PLAIN = types.SimpleNamespace(run=subprocess.run, popen=subprocess.Popen)
BOTH = pytest.mark.parametrize("way", [PLAIN, _forkserver], ids=["subprocess", "forked"])


def _outcome(call: Any) -> Any:
    try:
        done = call()
    except (OSError, ValueError) as exc:
        return type(exc).__name__
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("options", [{"cwd": "missing"}, {"cwd": "a-file"}, {"input": b"x", "stdin": subprocess.PIPE},
                                     {"capture_output": True, "stdout": subprocess.PIPE}])
def test_refused_arguments_raise_as_subprocess_raises(tmp_path: Path, options: dict[str, Any]) -> None:
    (tmp_path / "a-file").write_text("")
    if "cwd" in options:
        options = {**options, "cwd": str(tmp_path / options["cwd"])}
    plain = _outcome(lambda: subprocess.run([*TJ, "--version"], **options))
    assert plain in ("FileNotFoundError", "NotADirectoryError", "ValueError")
    assert _outcome(lambda: _forkserver.run([*TJ, "--version"], **options)) == plain


@BOTH
def test_a_command_creates_files_with_the_test_process_umask(tmp_path: Path, way: Any) -> None:
    old = os.umask(0o077)
    try:
        done = way.run([*TJ, "init", "-o", str(tmp_path / "start.yaml")], capture_output=True, timeout=60)
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "start.yaml").stat().st_mode & 0o777 == 0o600


@BOTH
def test_communicate_after_a_readline_returns_the_rest(way: Any) -> None:
    # (one stream: Popen reads its file object, so what the readline buffered is not lost)
    with way.popen([*TJ, "--help"], stdout=subprocess.PIPE) as proc:
        first = proc.stdout.readline()
        rest, _ = proc.communicate()
    assert first.startswith(b"usage: tracejudge") and b"simulate" in rest
    assert first + rest == subprocess.run([*TJ, "--help"], capture_output=True, check=True).stdout


@BOTH
def test_a_timeout_gives_the_bytes_read_and_a_later_communicate_all_of_them(way: Any) -> None:
    proc = way.popen([*TJ, "simulate", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:  # until a communicate that timed out has read the listening line
            try:
                proc.communicate(timeout=0.5)
            except subprocess.TimeoutExpired as exc:
                timed_out = exc
            if timed_out.stdout or time.monotonic() > deadline:
                break
    finally:
        proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert isinstance(timed_out.stdout, bytes) and timed_out.stderr is None  # (Popen's: the bytes so far, never decoded)
    assert timed_out.stdout.decode() in out and out.startswith("judge simulator listening on"), (out, err)


def test_a_killed_test_process_leaves_no_server_and_no_folder(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import _forkserver
        assert _forkserver.run([sys.executable, "-m", "tracejudge", "--version"], capture_output=True).returncode == 0
        print(_forkserver._STATE["proc"].pid, _forkserver._STATE["folder"], flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == -9, done.stderr
    pid, folder = done.stdout.split()
    deadline = time.monotonic() + 30
    while Path(folder).exists() or Path(f"/proc/{pid}").exists():
        assert time.monotonic() < deadline, (folder, pid, os.listdir(folder) if Path(folder).exists() else None)
        time.sleep(0.1)
