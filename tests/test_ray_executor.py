"""`run.executor: ray` on a local 2-CPU Ray cluster: the same results as in-process, a killed worker loses nothing, and a
record that kills every worker scoring it costs that record alone."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from ray_helpers import native_dataset, results_by_key
from tracejudge.core.config import load_config
from tracejudge.engine import runner
from tracejudge.engine.executors.pin import CULPRIT

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.yaml"
DETERMINISTIC = ["metrics=[{type: ToolCalls, name: writes_exact, arguments: exact, include_failed: false, "
                 "exclude_tools: ['get_*', 'search_*', 'list_*', calculate, think, 'transfer_*']}, "
                 "{type: TrajectoryMatch, order: in_order}, {type: ToolCorrectness, allow_extra: true}]"]


def _run(config_path: Path, run_dir: Path, overrides: list[str], on_result: Any = None) -> runner.RunOutcome:
    config = load_config(config_path, overrides)
    return anyio.run(lambda: runner.run(config, run_dir=run_dir, on_result=on_result))


def test_a_local_ray_cluster_gives_the_local_results_on_tau_bench(tmp_path, ray_cluster, data_dir):
    common = [*DETERMINISTIC, f"cache.dir={tmp_path / 'cache'}"]
    local = _run(DEMO, tmp_path / "local", [*common, "run.executor=inprocess"])
    on_ray = _run(DEMO, tmp_path / "ray", [*common, "run.executor=ray"])
    assert on_ray.new_results == local.new_results == 200
    assert results_by_key(tmp_path / "ray") == results_by_key(tmp_path / "local")
    for key in ("results", "status", "metrics", "groups"):
        assert on_ray.summary.get(key) == local.summary.get(key)
    assert ray_cluster.is_initialized()  # the executor left the session's cluster running


def _cpu_workers() -> set[int]:
    """Pids of the processes Ray titled as `CpuWorker` actors (`ray::CpuWorker…` in their command line)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if (Path("/proc") / entry / "cmdline").read_bytes().startswith(b"ray::CpuWorker"):
                    found.add(int(entry))
            except OSError:
                continue
    return found


def test_killing_a_ray_worker_mid_run_loses_nothing(tmp_path, ray_cluster):
    data = native_dataset(tmp_path / "cases.jsonl", 300)
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"dataset: {{path: {data}}}\nmetrics: [{{type: 'ray_helpers:SlowLength', sleep_ms: 8}}, {{type: ToolCalls}}]\n"
                   f"run: {{dir: {tmp_path / 'unused'}, chunk_size: 8}}\ncache: {{dir: {tmp_path / 'cache'}}}\n")
    killed: list[int] = []
    seen = {"n": 0}
    before = _cpu_workers()

    def on_result(_: Any) -> None:
        seen["n"] += 1
        if seen["n"] == 30:
            # Mid-run by construction: the kill is done before the head takes its 31st result. (Asking the actor
            # for its pid queued behind its chunks, so on a busy machine the kill could land after the run.)
            for pid in sorted(_cpu_workers() - before)[:1]:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    on_ray = _run(cfg, tmp_path / "ray", ["run.executor=ray"], on_result)
    assert killed, "no worker was killed"
    local = _run(cfg, tmp_path / "local", ["run.executor=inprocess"])
    assert on_ray.new_results == local.new_results == 301
    got = results_by_key(tmp_path / "ray")
    assert got == results_by_key(tmp_path / "local")
    assert sum(r["status"] == "ok" for r in got.values()) == 300
    assert not any((r.get("error") or {}).get("kind") == "worker_error" for r in got.values())


def test_a_live_python_target_runs_on_ray_workers_and_a_killed_one_is_redone(tmp_path, ray_cluster):
    pids, died = tmp_path / "pids.txt", tmp_path / "died"
    cases = [{"id": f"c{i}", "input": f"q{i}", "expected_tool_calls": [{"name": "echo", "arguments": {"text": f"q{i}"}}],
              "metadata": {"pid_log": str(pids), **({"die_once": str(died)} if i == 7 else {})}} for i in range(40)]
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(c) + "\n" for c in cases))
    cfg = tmp_path / "live.yaml"
    cfg.write_text(f"dataset: {{path: {data}, format: native}}\nmetrics: [{{type: ToolCalls, arguments: exact}}]\n"
                   "target: {kind: python, callable: 'ray_helpers:pid_agent', retries: 0, concurrency: 4}\n"
                   f"run: {{dir: {tmp_path / 'unused'}}}\ncache: {{dir: {tmp_path / 'cache'}}}\n")
    on_ray = _run(cfg, tmp_path / "ray", ["run.executor=ray"])
    ray_pids = {int(p) for p in pids.read_text().split()}
    assert died.exists(), "the worker was not killed"
    pids.unlink()
    local = _run(cfg, tmp_path / "local", ["run.executor=inprocess"])
    # The target ran in Ray worker processes, never in the head; the killed worker's case was redone by a restarted one.
    assert os.getpid() not in ray_pids and len(ray_pids) >= 2
    assert {int(p) for p in pids.read_text().split()} == {os.getpid()}
    assert on_ray.new_results == local.new_results == 40
    got = results_by_key(tmp_path / "ray")
    assert got == results_by_key(tmp_path / "local")
    assert all(r["status"] == "ok" and r["scores"]["ToolCalls"]["value"] == 1.0 for r in got.values())
    # The head wrote the live traces, as for a local run.
    assert len((tmp_path / "ray" / "traces.jsonl").read_text().splitlines()) == 40


def test_a_record_that_kills_every_ray_worker_costs_that_record_alone(tmp_path, ray_cluster):
    # Its worker dies every time Ray retries the part, which spends the actor's restarts: every later part routed to
    # that worker failed at once, and the chunk's other part with it (536 of 600 cases were lost, on every resume).
    data = native_dataset(tmp_path / "cases.jsonl", 160, broken=False)
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"dataset: {{path: {data}}}\nmetrics: [{{type: 'ray_helpers:DieOn', case_id: case-3}}]\n"
                   f"run: {{dir: {tmp_path / 'run'}, executor: ray}}\ncache: {{dir: {tmp_path / 'cache'}}}\n")
    out = _run(cfg, tmp_path / "run", [])
    got = results_by_key(tmp_path / "run")
    assert out.new_results == len(got) == 160
    lost = {k: r for k, r in got.items() if r["status"] != "ok"}
    assert list(lost) == [("case-3", 0)], sorted(lost)[:5]
    err = lost[("case-3", 0)]["error"]
    assert err["kind"] == "worker_error" and err["message"].startswith(CULPRIT), err
    assert all(r["scores"]["DieOn"]["value"] == 1.0 for k, r in got.items() if k != ("case-3", 0))
