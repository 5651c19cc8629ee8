"""Recorded runs that did not run to the end, read as their benchmark counts them.

- τ-bench: `run.py` (sierra-research/tau-bench `tau_bench/run.py`, `run`) catches what a run raised and writes
  `EnvRunResult(task_id, reward=0.0, info={"error", "traceback"}, traj=[], trial)`. `display_metrics` counts it as a
  failed trial; the case kept no trace of the error and read as an agent that chose to do nothing.

The files are built here in the shapes those functions write.
"""

from __future__ import annotations

import json
import sys
from math import comb
from pathlib import Path

import _forkserver


def cli(*args: str, cwd: Path):
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, cwd=cwd)


def results(run: Path) -> dict[str, dict]:
    return {r["case_id"]: r for r in map(json.loads, (run / "results.jsonl").read_text().splitlines())}


def hat(counts: dict[str, tuple[int, int]], k: int) -> float:
    """pass^k as both benchmarks compute it: per task C(c, k) / C(n, k), averaged over the tasks."""
    return sum(comb(c, k) / comb(n, k) for n, c in counts.values()) / len(counts)


# --- τ-bench -----------------------------------------------------------------------------------------------------

TASK = {"user_id": "yusuf_rossi_9620", "instruction": "You are Yusuf Rossi in 19122.", "outputs": [],
        "actions": [{"name": "find_user_id_by_name_zip", "kwargs": {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}}]}


def tau_run(task_id: int, trial: int, reward: float) -> dict:
    """A tool-calling run as `ToolCallingAgent.solve` (`tau_bench/agents/tool_calling_agent.py`) records it."""
    call = {"id": f"call_{task_id}{trial}", "type": "function",
            "function": {"name": "find_user_id_by_name_zip", "arguments": json.dumps(TASK["actions"][0]["kwargs"])}}
    traj = [{"role": "system", "content": "# Retail agent policy"}, {"role": "user", "content": "Hi, I want to exchange an item."},
            {"role": "assistant", "content": None, "tool_calls": [call], "function_call": None},
            {"role": "tool", "tool_call_id": call["id"], "name": "find_user_id_by_name_zip", "content": "yusuf_rossi_9620"},
            {"role": "assistant", "content": "I found your account.", "tool_calls": None, "function_call": None},
            {"role": "user", "content": "Thanks. ###STOP###"}]
    info = {"task": TASK, "source": "user", "user_cost": 0.01,
            "reward_info": {"reward": reward, "info": {"r_actions": reward, "gt_data_hash": "0"}, "actions": []}}
    return {"task_id": task_id, "reward": reward, "info": info, "traj": traj, "trial": trial}


def test_a_tau_bench_run_that_raised_keeps_its_error_and_counts_as_a_failed_trial(tmp_path):
    raised = {"task_id": 1, "reward": 0.0, "trial": 1, "traj": [],
              "info": {"error": "litellm.RateLimitError: rate limit reached", "traceback": "Traceback (most recent call last):\n  ..."}}
    runs = [tau_run(0, 0, 1.0), tau_run(0, 1, 0.0), tau_run(1, 0, 1.0), raised]
    (tmp_path / "runs.json").write_text(json.dumps(runs, indent=2))
    (tmp_path / "c.yaml").write_text(
        "dataset: {path: runs.json, format: tau-bench}\n"
        "metrics:\n  - {type: RecordedReward}\n  - {type: PassHatK, metric: RecordedReward, k: 1, group_by: task_id}\n"
        "  - {type: PassHatK, metric: RecordedReward, k: 2, group_by: task_id}\nrun: {dir: out}\n")
    proc = cli("run", "c.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = results(tmp_path / "out")
    assert rows["1-1"]["status"] == "ok" and rows["1-1"]["metadata"]["run_error"] == "litellm.RateLimitError: rate limit reached"
    assert "run_error" not in rows["1-0"]["metadata"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["run_errors"] == 1
    # `display_metrics` counts every result, the raised one a failure (reward 0.0): tasks 0 and 1, 2 trials, 1 success each.
    for k in (1, 2):
        assert summary["pass_at_k"][f"pass^{k}(RecordedReward)"]["value"] == hat({"0": (2, 1), "1": (2, 1)}, k)
