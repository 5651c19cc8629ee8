"""Builders of real run inputs for the aggregate/gate/report tests: native datasets, configs, results files."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
import _forkserver


def native_case(cid: str, expected: list[str], called: list[str], *, tags: list[str] | None = None, metadata: dict | None = None) -> dict[str, Any]:
    """A native case whose trace calls `called` (one step) and expects `expected` (names, no arguments)."""
    return {
        "id": cid,
        "expected_tool_calls": [{"name": n} for n in expected],
        "tags": tags or [],
        "metadata": metadata or {},
        "trace": {"steps": [{"tool_calls": [{"name": n, "arguments": {}} for n in called]}], "output": "done"},
    }


def write_dataset(path: Path, lines: list[Any]) -> Path:
    """Write JSONL lines; a `str` item is written verbatim (to plant a malformed line)."""
    with open(path, "w", encoding="utf-8") as fh:
        for item in lines:
            fh.write((item if isinstance(item, str) else json.dumps(item)) + "\n")
    return path


def seven_and_three(path: Path) -> Path:
    """10 cases: 7 valid ones (4 fully right, 3 half right) and 3 that end `invalid_input`."""
    lines: list[Any] = []
    for i in range(4):
        lines.append(native_case(f"good-{i}", ["a", "b"], ["a", "b"], tags=["t1"], metadata={"domain": "x"}))
    for i in range(3):
        lines.append(native_case(f"half-{i}", ["a", "b"], ["a"], tags=["t2"], metadata={"domain": "y"}))
    lines.append('{"id": "broken-json", ')  # not JSON
    lines.append({"id": "no-trace", "expected_tool_calls": [{"name": "a"}]})  # no trace, no target
    lines.append({"id": "typo", "expected_tool_call": [{"name": "a"}], "trace": {"steps": []}})  # unknown key
    return write_dataset(path, lines)


def write_config(path: Path, dataset: Path, run_dir: Path, **sections: Any) -> Path:
    """A YAML config scoring `dataset` with ToolCorrectness (name `tc`) and TrajectoryMatch (name `traj`).

    It tolerates 30% unreadable records (`seven_and_three` holds three in ten on purpose).
    """
    cfg: dict[str, Any] = {
        "assertions": {"max_invalid_share": 0.3},
        "dataset": {"path": str(dataset), "format": "native"},
        "metrics": [
            {"type": "ToolCorrectness", "name": "tc"},
            {"type": "TrajectoryMatch", "name": "traj", "order": "in_order", "threshold": 0.9},
        ],
        "run": {"dir": str(run_dir)},
        "cache": {"dir": str(path.parent / "cache")},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = value
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def small_runs(folder: Path, names: tuple[str, ...]) -> dict[str, Path]:
    """A run directory `folder/NAME` per name: 3 native cases (`NAME-0` … `NAME-2`) over a dataset of its own, run in-process."""
    from tracejudge.entrypoints.cli import main

    out = {}
    for name in names:
        data = write_dataset(folder / f"{name}.jsonl", [native_case(f"{name}-{i}", ["lookup"], ["lookup"]) for i in range(3)])
        assert main(["run", str(write_config(folder / f"{name}.yaml", data, folder / name)), "--no-progress"]) in (0, 1)
        out[name] = folder / name
    return out


def copy_run(src: Path, dst: Path) -> Path:
    """`src`'s run directory copied to `dst` (returned) without the viewer's index, as a run written there would be."""
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("view.idx*"))
    return dst


def result_line(cid: str, trial: int, scores: dict[str, tuple[float | None, str]], *, status: str = "ok", tags: list[str] | None = None,
                threshold: float = 1.0, error: str | None = None) -> str:
    """One results.jsonl line. `scores` maps metric → (value, reason)."""
    body: dict[str, Any] = {
        "case_id": cid, "trial": trial, "status": status, "tags": tags or [], "metadata": {},
        "scores": {k: {"value": v, "passed": None if v is None else v >= threshold, "reason": r} for k, (v, r) in scores.items()},
        "error": None if error is None else {"kind": status, "message": error}, "duration_s": 0.001,
    }
    if status != "ok":
        body["scores"] = {}
    return json.dumps(body)


def planted_runs(base: Path, *, n: int = 300, planted: int = 25, improved: int = 5, seed: int = 7) -> tuple[Path, Path, set[str], set[str]]:
    """Two synthetic runs over the same n cases; B regresses `planted` cases (1 → 0) and improves `improved` (0 → 1).

    Metric `acc` carries the change; metric `stable` is identical in both. Returns (A, B, planted ids, improved ids).
    """
    rng = random.Random(seed)
    a_dir, b_dir = base / "run-a", base / "run-b"
    a_dir.mkdir(parents=True)
    b_dir.mkdir(parents=True)
    values = [1.0 if rng.random() < 0.8 else 0.0 for _ in range(n)]
    ones = [i for i, v in enumerate(values) if v == 1.0]
    zeros = [i for i, v in enumerate(values) if v == 0.0]
    down = set(rng.sample(ones, planted))
    up = set(rng.sample(zeros, improved))
    with open(a_dir / "results.jsonl", "w") as fa, open(b_dir / "results.jsonl", "w") as fb:
        order_b = list(range(n))
        rng.shuffle(order_b)  # the newer run finished in another order
        for i in range(n):
            fa.write(result_line(f"c{i:03d}", 0, {"acc": (values[i], f"baseline reason {i}"), "stable": (0.5, "same")}) + "\n")
        for i in order_b:
            v = 0.0 if i in down else (1.0 if i in up else values[i])
            why = f"planted regression {i}: called the wrong tool" if i in down else f"current reason {i}"
            fb.write(result_line(f"c{i:03d}", 0, {"acc": (v, why), "stable": (0.5, "same")}) + "\n")
    return a_dir, b_dir, {f"c{i:03d}" for i in down}, {f"c{i:03d}" for i in up}


@contextmanager
def view_process(*args: str, wrap: Any = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """`tracejudge view ARGS --port 0` as a real process; yields (its server's URL, the process) and stops it after.

    `wrap(argv)` gives the command line that runs it (one that ends by exec'ing `argv`), e.g. inside a mount namespace.
    """
    argv = [sys.executable, "-m", "tracejudge", "view", *args, "--port", "0"]
    proc = _forkserver.popen(wrap(argv) if wrap is not None else argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert "http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        page = urlsplit(line.split()[2])  # the page it opens (a run's, when one run is served): yield the server
        yield f"{page.scheme}://{page.netloc}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # (a viewer stuck in a read: not left running after a failed test)
            proc.kill()
            proc.wait(timeout=30)
            raise


@contextmanager
def view_server(*args: str) -> Iterator[str]:
    """`tracejudge view ARGS --port 0` as a real process (`view_process`); yields its server's URL."""
    with view_process(*args) as (url, _):
        yield url


def sigkill_when(proc: subprocess.Popen, ready: Any, what: str, timeout_s: float = 120, sig: int = signal.SIGKILL) -> None:
    """SIGKILL `proc` (or send it `sig`) once `ready()` is true (polled every 20 ms), then reap it; fail when it ends first
    or `timeout_s` passes."""
    import time

    try:
        deadline = time.monotonic() + timeout_s
        while not ready():
            assert proc.poll() is None, f"the run ended before it was killed: {proc.stderr.read() if proc.stderr else ''}"
            assert time.monotonic() < deadline, f"{what} within {timeout_s} s"
            time.sleep(0.02)
        proc.send_signal(sig)
        proc.wait(timeout=120 if sig != signal.SIGKILL else 60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)


def http_get(url: str, timeout: float = 60) -> tuple[int, str]:
    """(status, body) of a GET; an HTTP error's status and page, not an exception."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@contextmanager
def small_tmpfs(mnt: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (`256k`) mounted on the new folder `mnt`, unmounted after; the test is skipped where this
    process may not mount one (not root)."""
    mnt.mkdir()
    if os.geteuid() != 0 or _forkserver.run(["mount", "-t", "tmpfs", "-o", f"size={size}", f"tj-{uuid.uuid4().hex[:8]}", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        _forkserver.run(["umount", "-l", str(mnt)], check=False)
