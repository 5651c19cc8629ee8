"""Forked worker processes (`engine.executors.forked`): what a spawned worker does, from a fork of the head.

A run of tracejudge's own adapter and metrics over a dataset too large to run in-process forks its
two workers from the `tracejudge` command (real processes, SIGKILL): a forked worker killed from
outside costs nothing (its chunk is tried once more, the results are those of `processes: 1`),
and forked workers end when their head is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ray_procs import running  # noqa: E402
from test_worker_faults import _children  # noqa: E402
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
N = 2_500  # about 10 MB: above `INLINE_BYTES`, so the run goes to workers


def _workspace(root: Path, processes: int, out: str) -> None:
    pad = "x" * 4_000
    with open(root / "cases.jsonl", "w") as fh:
        for i in range(N):
            calls = [{"name": "lookup", "arguments": {"k": i % 7}}, {"name": "book" if i % 3 else "cancel", "arguments": {"n": i}}]
            fh.write(json.dumps({"id": f"case-{i:04d}", "expected_tool_calls": [{"name": "lookup"}, {"name": "book"}],
                                 "metadata": {"pad": pad}, "trace": {"steps": [{"tool_calls": calls}], "output": f"done {i}"}}) + "\n")
    (root / f"{out}.yaml").write_text(
        "dataset: {path: cases.jsonl}\n"
        "metrics:\n  - {type: ToolCalls, arguments: ignore}\n  - {type: TrajectoryMatch, order: in_order}\n"
        "  - {type: Contains, value: done}\n"
        f"run: {{dir: {out}, processes: {processes}, executor: processes}}\n"
    )


def _lines(path: Path) -> dict[str, dict]:
    got = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        r.pop("duration_s")
        got[r["case_id"]] = r
    return got


def test_a_forked_worker_killed_from_outside_costs_nothing(tmp_path):
    _workspace(tmp_path, 2, "two")
    _workspace(tmp_path, 1, "one")
    proc = _forkserver.popen([str(TRACEJUDGE), "run", "two.yaml", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        workers = _children(proc.pid)
        if len(workers) >= 2:  # forked as the executor starts, before any result: killed before or while computing
            killed = workers[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.01)
    try:
        _, err = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:  # a hung run is killed with its workers, not left running past the test
        stuck = _children(proc.pid)
        proc.kill()
        for pid in stuck:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"the run did not finish within 240 s after worker {killed} was killed (workers then: {stuck}):\n{err[-3000:]}")
    assert killed is not None, err
    assert proc.returncode == 0, err
    assert "tried once more in a fresh worker" in err
    retried = [json.loads(x) for x in err.splitlines() if "tried once more in a fresh worker" in x]
    assert [(x["error"], x["pid"]) for x in retried] == [("killed by signal SIGKILL (9)", killed)], err  # how it died, not that a socket closed
    one = _forkserver.run([str(TRACEJUDGE), "run", "one.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert one.returncode == 0, one.stderr
    two, single = _lines(tmp_path / "two" / "results.jsonl"), _lines(tmp_path / "one" / "results.jsonl")
    assert len(two) == N and {r["status"] for r in two.values()} == {"ok"}
    assert two == single


def test_forked_workers_end_when_their_head_is_killed(tmp_path):
    _workspace(tmp_path, 2, "two")
    proc = _forkserver.popen([str(TRACEJUDGE), "run", "two.yaml", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
        workers = _children(proc.pid)
        time.sleep(0.01)
    assert len(workers) >= 2
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    while _running(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(workers), "orphaned workers still running"


def _running(pids: list[int]) -> list[int]:
    # Neither gone nor a zombie waiting to be reaped; a process may vanish between any two reads of /proc.
    return [p for p in pids if running(p)]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_to_the_process_group_stops_cleanly_and_the_same_command_resumes(tmp_path, sig):
    # A terminal's Ctrl-C (and a CI runner's SIGTERM to the group) signals the head and its workers alike. The head
    # stops the run and lets the chunks in flight finish; a worker that died of Ctrl-C raised KeyboardInterrupt into
    # the head, which then printed tracebacks and neither reports nor the resume command, and workers killed by the
    # SIGTERM were warned of as dead and their chunks retried in fresh workers while the run stopped.
    _workspace(tmp_path, 2, "two")
    _workspace(tmp_path, 1, "one")
    proc = _forkserver.popen([str(TRACEJUDGE), "run", "two.yaml", "--no-progress"], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(_children(proc.pid)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before its workers were seen"
    os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "died" not in err, err
    assert "fresh worker" not in err, err
    assert "INTERRUPTED" in out + err and "tracejudge run two.yaml" in out + err, out + err
    again = _forkserver.run([str(TRACEJUDGE), "run", "two.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert again.returncode == 0, again.stderr
    one = _forkserver.run([str(TRACEJUDGE), "run", "one.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert one.returncode == 0, one.stderr
    assert _lines(tmp_path / "two" / "results.jsonl") == _lines(tmp_path / "one" / "results.jsonl")


def test_a_killed_forked_worker_is_replaced_by_one_worker_not_added_to(tmp_path):
    # `run.processes: 2`: after one of the two forked workers is killed, its share goes to one spawned
    # worker, so at most two workers are alive at any moment of the rest of the run (never three).
    _workspace(tmp_path, 2, "two")
    proc = _forkserver.popen([str(TRACEJUDGE), "run", "two.yaml", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    most: list[int] = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        workers = _running(_children(proc.pid))
        if killed is None and len(workers) >= 2:
            killed = workers[0]
            os.kill(killed, signal.SIGKILL)
        elif killed is not None and len(workers) > len(most):
            most = workers
        time.sleep(0.01)
    _, err = proc.communicate(timeout=240)
    assert killed is not None and proc.returncode == 0, err
    # (No assertion that a chunk was retried: on a busy machine the worker may be killed between two chunks, holding
    # none; the retry of a chunk in flight is the test above's.)
    assert 1 <= len(most) <= 2, f"{len(most)} workers alive at once after the kill: {most}"
    assert len(_lines(tmp_path / "two" / "results.jsonl")) == N
