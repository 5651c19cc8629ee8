"""Recorded runs that did not run to the end, read as their benchmark counts them.

- τ-bench: `run.py` (sierra-research/tau-bench `tau_bench/run.py`, `run`) catches what a run raised and writes
  `EnvRunResult(task_id, reward=0.0, info={"error", "traceback"}, traj=[], trial)`. `display_metrics` counts it as a
  failed trial; the case kept no trace of the error and read as an agent that chose to do nothing.
- τ²-bench: `run_with_retry` (sierra-research/tau2-bench `src/tau2/runner/batch.py`) writes a simulation whose retries
  ran out with `termination_reason: "infrastructure_error"`, no messages, no `reward_info` and `info.error`;
  `get_metrics_df` and `compute_metrics` (`src/tau2/metrics/agent_metrics.py`) leave it out of the average reward and
  of pass^k. It was scored as a case whose agent did nothing, and counted as a failed trial in pass^k.

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


# --- τ²-bench ----------------------------------------------------------------------------------------------------

def tau2_task(tid: str) -> dict:
    return {"id": tid, "description": None, "user_scenario": {"instructions": {"domain": "airline", "reason_for_call": "cancel"}},
            "evaluation_criteria": {"actions": [{"action_id": f"{tid}_0", "requestor": "assistant", "name": "get_user_details",
                                                 "arguments": {"user_id": "emma_kim_9957"}, "info": None, "compare_args": None}],
                                    "reward_basis": ["DB", "COMMUNICATE"]}}


def tau2_sim(tid: str, trial: int, reward: float) -> dict:
    """A simulation as `SimulationRun.model_dump` (`src/tau2/data_model/simulation.py`) writes it, its messages trimmed."""
    call = {"id": f"call_{tid}{trial}", "name": "get_user_details", "arguments": {"user_id": "emma_kim_9957"}, "requestor": "assistant"}
    messages = [{"role": "assistant", "content": "Hi! How can I help you today?", "turn_idx": 0},
                {"role": "user", "content": "I want to cancel a reservation.", "turn_idx": 1},
                {"role": "assistant", "content": None, "tool_calls": [call], "turn_idx": 2,
                 "usage": {"completion_tokens": 20, "prompt_tokens": 900}, "cost": 0.002},
                {"role": "tool", "id": call["id"], "content": "{\"user_id\": \"emma_kim_9957\"}", "requestor": "assistant", "error": False,
                 "turn_idx": 3},
                {"role": "assistant", "content": "I cannot cancel this reservation.", "turn_idx": 4,
                 "usage": {"completion_tokens": 9, "prompt_tokens": 950}, "cost": 0.002},
                {"role": "user", "content": "###STOP###", "turn_idx": 5}]
    return {"id": f"sim-{tid}-{trial}", "task_id": tid, "timestamp": "2026-01-15T08:15:08", "start_time": "2026-01-15T08:15:08",
            "end_time": "2026-01-15T08:16:08", "duration": 60.0, "termination_reason": "user_stop", "agent_cost": 0.004,
            "user_cost": 0.001, "reward_info": {"reward": reward, "reward_basis": ["DB", "COMMUNICATE"], "action_checks": []},
            "messages": messages, "trial": trial, "seed": 300}


def test_a_tau2_simulation_that_never_ran_is_left_out_of_pass_hat_k_as_upstream_leaves_it_out(tmp_path):
    never_ran = {"id": "5b0c", "task_id": "1", "timestamp": "2026-01-15T09:00:00", "start_time": "2026-01-15T09:00:00",
                 "end_time": "2026-01-15T09:00:00", "duration": 0.0, "termination_reason": "infrastructure_error", "messages": [],
                 "trial": 2, "seed": 300, "info": {"error": "APIConnectionError: Connection error.", "error_type": "APIConnectionError",
                                                  "error_traceback": "Traceback ...", "failed_after_attempts": 3}}
    sims = [tau2_sim("0", 0, 1.0), tau2_sim("0", 1, 1.0), tau2_sim("0", 2, 0.0),
            tau2_sim("1", 0, 1.0), tau2_sim("1", 1, 0.0), never_ran]
    info = {"git_commit": "0", "num_trials": 3, "max_steps": 200, "max_errors": 10, "seed": 300,
            "environment_info": {"domain_name": "airline", "policy": "# Airline Agent Policy"}}
    (tmp_path / "results.json").write_text(json.dumps({"timestamp": "2026-01-15T08:15:08", "info": info,
                                                       "tasks": [tau2_task("0"), tau2_task("1")], "simulations": sims}, indent=2))
    (tmp_path / "c.yaml").write_text(
        "dataset: {path: results.json, format: tau2-bench}\n"
        "metrics:\n  - {type: RecordedReward}\n  - {type: PassHatK, metric: RecordedReward, k: 1, group_by: task_id}\n"
        "  - {type: PassHatK, metric: RecordedReward, k: 2, group_by: task_id}\nrun: {dir: out}\n")
    proc = cli("run", "c.yaml", cwd=tmp_path)
    rows = results(tmp_path / "out")
    assert "1-2" not in rows  # (the id of the case that trial would have been, had it run)
    error = rows["1-2@infrastructure_error"]["error"]
    assert rows["1-2@infrastructure_error"]["status"] == "invalid_input" and error["field"] == "simulations[5].termination_reason", error
    assert error["file"].endswith("results.json") and error["line"] > 1
    assert "infrastructure_error" in error["message"] and "APIConnectionError: Connection error." in error["message"]
    assert proc.returncode == 1 and "max_invalid_share" in proc.stdout  # (the file holds a simulation to run again)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["metrics"]["RecordedReward"]["mean"] == 0.6  # upstream's avg_reward: 3 successes of the 5 that ran
    # `get_tasks_pass_hat_k`: task 0 has 3 trials (2 successes), task 1 the 2 that ran (1 success).
    for k in (1, 2):
        assert summary["pass_at_k"][f"pass^{k}(RecordedReward)"]["value"] == hat({"0": (3, 2), "1": (2, 1)}, k)


def test_a_tau2_simulation_that_never_ran_beside_one_of_its_trial_that_did_leaves_that_one_the_case(tmp_path):
    # A file holding both (merged from a resumed run, which upstream's `try_resume` reruns the trial for): upstream counts
    # the simulation that ran. Filed under the case id, the one that never ran took it when it came first, and the
    # simulation that ran was refused as its duplicate; after it, it was a "duplicate case id" naming neither fault.
    never_ran = {"id": "5b0c", "task_id": "1", "duration": 0.0, "termination_reason": "infrastructure_error", "messages": [],
                 "trial": 0, "info": {"error": "APIConnectionError: Connection error."}}
    info = {"git_commit": "0", "num_trials": 1, "environment_info": {"domain_name": "airline"}}
    for n, order in enumerate(([never_ran, tau2_sim("1", 0, 1.0)], [tau2_sim("1", 0, 1.0), never_ran])):
        sims = [tau2_sim("0", 0, 0.0), *order]
        (tmp_path / "results.json").write_text(json.dumps({"info": info, "tasks": [tau2_task("0"), tau2_task("1")], "simulations": sims},
                                                          indent=2))
        (tmp_path / "c.yaml").write_text("dataset: {path: results.json, format: tau2-bench}\nmetrics:\n  - {type: RecordedReward}\n"
                                         f"run: {{dir: out{n}}}\n")
        cli("run", "c.yaml", cwd=tmp_path)
        lines = [json.loads(line) for line in (tmp_path / f"out{n}" / "results.jsonl").read_text().splitlines()]
        assert sorted(r["case_id"] for r in lines) == ["0-0", "1-0", "1-0@infrastructure_error"]
        rows = results(tmp_path / f"out{n}")
        assert rows["1-0"]["status"] == "ok" and rows["1-0"]["scores"]["RecordedReward"]["value"] == 1.0
        error = rows["1-0@infrastructure_error"]["error"]
        assert error["field"] == f"simulations[{1 + order.index(never_ran)}].termination_reason" and "duplicate" not in error["message"]
        summary = json.loads((tmp_path / f"out{n}" / "summary.json").read_text())
        assert summary["metrics"]["RecordedReward"]["mean"] == 0.5  # upstream's avg_reward over the two that ran
