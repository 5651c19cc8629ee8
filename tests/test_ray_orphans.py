"""A head SIGKILLed in the middle of a Ray run (`run.executor: ray`, the local cluster it started) leaves no Ray process:
not its actors, not the cluster's agents, which Ray alone lets linger a minute or more."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
if not Path("/proc").is_dir():
    pytest.skip("the Ray process tests read Linux's /proc", allow_module_level=True)

import ray_procs  # noqa: E402
import _forkserver

TESTS = Path(__file__).resolve().parent


def test_a_sigkilled_head_takes_its_local_ray_cluster_along(tmp_path):
    with open(tmp_path / "cases.jsonl", "w", encoding="utf-8") as fh:
        for i in range(2000):
            fh.write(json.dumps({"id": f"case-{i}", "trace": {"steps": [], "output": f"answer {i}"}}) + "\n")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"dataset: {{path: {tmp_path / 'cases.jsonl'}, format: native}}\n"
                   "metrics: [{type: 'ray_helpers:SlowLength', sleep_ms: 50}]\n"
                   f"run: {{dir: {tmp_path / 'run'}, chunk_size: 4, executor: ray}}\ncache: {{dir: {tmp_path / 'cache'}}}\n")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(TESTS)}  # the cluster's workers import ray_helpers
    env.pop("RAY_ADDRESS", None)
    head = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    results, tree = tmp_path / "run" / "results.jsonl", []
    try:
        ray_procs.wait_for_results(head, results, 8)
        tree = ray_procs.descendants(head.pid)
        titles = [ray_procs.cmdline(pid) for pid in tree]
        assert any(t.startswith("ray::CpuWorker") for t in titles), titles  # the run's actors are working
        assert any("raylet" in t for t in titles) and any(t.startswith("ray::") and "Agent" in t for t in titles), titles
        head.kill()  # SIGKILL, what the OOM killer sends
        head.wait()
        assert head.returncode == -signal.SIGKILL
        left = ray_procs.wait_gone(tree, 30)  # about a second with the watchdog; Ray's agents alone take over 60 s
        assert left == [], [ray_procs.cmdline(pid) for pid in left]
    finally:
        head.kill()
        head.wait()
        ray_procs.kill_all(tree)
