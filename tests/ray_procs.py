"""Processes as Linux's /proc shows them, for the Ray process tests: trees, groups, what still runs, and a `ray start` head."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
import _forkserver

PROC = Path("/proc")


def _stat(pid: int) -> list[str] | None:
    """Fields 3.. of /proc/PID/stat (state, ppid, pgrp, ...), or None once the process is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def pids() -> list[int]:
    """Every process id now."""
    return [int(p.name) for p in PROC.iterdir() if p.name.isdigit()]


def running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (an exited process nobody reaped runs nothing)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def cmdline(pid: int) -> str:
    """The process's command line (Ray workers show their title, `ray::CpuWorker.run`), '' once gone."""
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def descendants(root: int) -> list[int]:
    """Children, grandchildren, ... of `root` now."""
    parent = {}
    for pid in pids():
        fields = _stat(pid)
        if fields is not None:
            parent[pid] = int(fields[1])
    out, todo = [], [root]
    while todo:
        current = todo.pop()
        kids = [pid for pid, ppid in parent.items() if ppid == current]
        out += kids
        todo += kids
    return out


def group(pgid: int) -> list[int]:
    """Running processes of process group `pgid`."""
    return [pid for pid in pids() if (f := _stat(pid)) is not None and int(f[2]) == pgid and f[0] not in ("Z", "X")]


def wait_gone(watched: list[int], bound_s: float) -> list[int]:
    """Poll until none of `watched` runs or `bound_s` passed; the ones still running."""
    deadline = time.monotonic() + bound_s
    while True:
        left = [pid for pid in watched if running(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def wait_for_results(proc: subprocess.Popen[str], results: Path, n: int, bound_s: float = 300) -> None:
    """Poll until `results` has `n` lines (a run in `proc` is under way); fails if `proc` ends first or `bound_s` passes."""
    deadline = time.monotonic() + bound_s
    while not (results.exists() and results.read_text().count("\n") >= n):
        assert proc.poll() is None, proc.stderr.read()[-3000:] if proc.stderr else proc.returncode
        assert time.monotonic() < deadline, f"fewer than {n} results within {bound_s} s"
        time.sleep(0.5)


def kill_all(targets: list[int]) -> None:
    """SIGKILL each of `targets` that still runs (a test's clean-up, by process id)."""
    for pid in targets:
        if running(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """This environment without Ray's address and auth settings, with `HOME=home` (where Ray keeps `.ray/auth_token`)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    return {**env, "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0", **extra}


@dataclass
class Head:
    """A Ray head started by `ray start --head` in its own process group; `home` holds the token in `.ray/auth_token`."""

    address: str
    home: Path
    token: str
    pgid: int
    raylet: int


@contextmanager
def ray_head(num_cpus: int = 2, pythonpath: Path | None = None) -> Iterator[Head]:
    """`ray start --head` bound to 127.0.0.1 on a free port, its own temporary directory and `HOME` (with a token there,
    so the head turns token authentication on, as on any machine that ran Ray before); stopped by killing its process
    group and its raylet's children (`ray stop` would stop every Ray cluster on the machine). `pythonpath`: where the
    cluster's workers import test helpers from."""
    root = Path(tempfile.mkdtemp(prefix="tjray-"))  # short: Ray's socket paths live under it
    home = root / "home"
    (home / ".ray").mkdir(parents=True)
    token = secrets.token_hex(16)
    (home / ".ray" / "auth_token").write_text(token)
    port = free_port()
    ports = {flag: str(free_port()) for flag in ("--dashboard-port", "--ray-client-server-port", "--dashboard-agent-listen-port",
                                                  "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port",
                                                  "--node-manager-port", "--object-manager-port")}
    command = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.1",
               "--temp-dir", str(root / "ray"), "--num-cpus", str(num_cpus), "--include-dashboard", "false", "--disable-usage-stats",
               *[item for pair in ports.items() for item in pair]]
    env = clean_env(home, **({"PYTHONPATH": str(pythonpath)} if pythonpath else {}))
    started = _forkserver.popen(command, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    raylets: list[int] = []
    try:
        out, _ = started.communicate(timeout=300)
        assert started.returncode == 0, out[-3000:]
        raylets = [pid for pid in group(started.pid) if "raylet/raylet" in cmdline(pid)]
        assert raylets, out[-3000:]
        yield Head(f"127.0.0.1:{port}", home, token, started.pid, raylets[0])
    finally:
        started.kill()
        members = group(started.pid) + [pid for raylet in raylets for pid in descendants(raylet)]
        try:
            os.killpg(started.pid, signal.SIGKILL)
        except OSError:
            pass
        kill_all(members)
        wait_gone(members, 30)
        shutil.rmtree(root, ignore_errors=True)
