"""Trials (each a fresh conversation), pass@k from their results, resume after SIGKILL, re-scoring."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import live_agents
import yaml
from live_support import REPO, TESTS, by_key, live_config, pass_at_k, pass_at_k_from_results, read_jsonl, run_live
from tracejudge.entrypoints.cli import main as cli_main
import _forkserver


def py_target(**extra):
    return {"kind": "python", "callable": "live_agents:agent", "pythonpath": str(TESTS), "retries": 0, **extra}


def answer_case(cid: str, pass_trials: list[int]) -> dict:
    return {"id": cid, "input": "q", "metadata": {"mode": "pass_trials", "pass_trials": pass_trials}, "expected_tool_calls": [{"name": "answer", "arguments": {"correct": True}}]}


def test_unbiased_estimator_by_hand():
    assert pass_at_k(3, 0, 1) == 0.0
    assert pass_at_k(3, 3, 3) == 1.0
    assert abs(pass_at_k(3, 1, 1) - 1 / 3) < 1e-12
    assert abs(pass_at_k(4, 1, 2) - (1 - 3 / 6)) < 1e-12  # C(3,2)/C(4,2)
    assert pass_at_k(3, 2, 2) == 1.0  # fewer than k failures: certain


def test_trials_are_fresh_conversations_and_feed_pass_at_k(tmp_path):
    live_agents.CALLS.clear()
    cases = [answer_case("all", [0, 1, 2]), answer_case("some", [0, 2]), answer_case("one", [1]), answer_case("none", [])]
    outcome = run_live(live_config(tmp_path, cases, py_target(), run={"trials": 3}))
    assert outcome.summary["status"] == {"ok": 12}
    results = read_jsonl(tmp_path / "run" / "results.jsonl")
    keyed = by_key(results)
    assert set(keyed) == {(c, t) for c in ("all", "some", "one", "none") for t in range(3)}
    assert [keyed[("some", t)]["scores"]["ToolCalls"]["passed"] for t in range(3)] == [True, False, True]
    # Each trial is its own conversation, and the agent is told which trial it is.
    assert sorted((c["case_id"], c["trial"]) for c in live_agents.CALLS) == sorted(keyed)
    assert len({c["conversation_id"] for c in live_agents.CALLS}) == 12
    assert all(c["history"] == [] for c in live_agents.CALLS)
    # pass@k over the trials, against the estimator worked by hand:
    # per case (n=3): all c=3, some c=2, one c=1, none c=0.
    assert abs(pass_at_k_from_results(results, "ToolCalls", 1) - (1 + 2 / 3 + 1 / 3 + 0) / 4) < 1e-12
    assert abs(pass_at_k_from_results(results, "ToolCalls", 2) - (1 + 1 + (1 - 1 / 3) + 0) / 4) < 1e-12
    assert abs(pass_at_k_from_results(results, "ToolCalls", 3) - (1 + 1 + 1 + 0) / 4) < 1e-12
    # The per-trial mean the summary reports is pass@1.
    assert abs(outcome.summary["metrics"]["ToolCalls"]["mean"] - 0.5) < 1e-9


def _write_yaml_config(tmp_path, n_cases: int, trials: int):
    cases = [{"id": f"c{i}", "input": f"q{i}", "expected_tool_calls": [{"name": "echo", "arguments": {"turn": 0, "text": f"q{i}"}}]} for i in range(n_cases)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    cfg = {
        "dataset": {"path": "cases.jsonl"},
        "metrics": [{"type": "ToolCalls", "arguments": "exact"}],
        "target": {"kind": "python", "callable": "live_agents:agent", "pythonpath": str(TESTS), "concurrency": 2},
        "run": {"dir": "run", "trials": trials, "flush_every": 1},
    }
    path = tmp_path / "live.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_resume_after_sigkill_does_not_rerun_finished_trials(tmp_path, monkeypatch):
    config_path = _write_yaml_config(tmp_path, n_cases=12, trials=2)
    results_path = tmp_path / "run" / "results.jsonl"
    log1 = tmp_path / "calls1.jsonl"
    env = {**os.environ, "LIVE_AGENT_LOG": str(log1), "LIVE_AGENT_DELAY": "0.1", "PYTHONPATH": str(REPO)}
    proc = _forkserver.popen(
        [sys.executable, "-c", "import sys; from tracejudge.entrypoints.cli import main; sys.exit(main(sys.argv[1:]))", "run", str(config_path), "--no-progress"],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if results_path.exists() and len(results_path.read_text().splitlines()) >= 8:
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    finished = {(r["case_id"], r["trial"]) for r in read_jsonl(results_path)}
    assert 8 <= len(finished) < 24, "the kill must land mid-run"
    first_calls = read_jsonl(log1)

    live_agents.CALLS.clear()
    monkeypatch.chdir(tmp_path)
    assert cli_main(["run", str(config_path), "--no-progress"]) == 0
    second = sorted((c["case_id"], c["trial"]) for c in live_agents.CALLS)
    everything = {(f"c{i}", t) for i in range(12) for t in range(2)}
    # Only the unfinished pairs ran again, each once; finished trials were not re-run.
    assert second == sorted(everything - finished)
    results = read_jsonl(results_path)
    assert set(by_key(results)) == everything  # every pair exactly once
    assert all(r["status"] == "ok" and r["scores"]["ToolCalls"]["value"] == 1.0 for r in results)
    assert finished <= {(c["case_id"], c["trial"]) for c in first_calls}  # what finished ran in the first process
    # Every result has its trace; a pair re-run after the kill may have two lines, the last one wins.
    traced = {(t["case_id"], t["trial"]) for t in read_jsonl(tmp_path / "run" / "traces.jsonl")}
    assert traced == everything


def test_rescore_uses_recorded_traces_without_calling_the_target(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config_path = _write_yaml_config(tmp_path, n_cases=3, trials=2)
    assert cli_main(["run", str(config_path), "--no-progress"]) == 0
    original = by_key(read_jsonl(tmp_path / "run" / "results.jsonl"))
    live_agents.CALLS.clear()
    assert cli_main(["run", str(config_path), "--no-progress", "--rescore", "run"]) == 0
    assert live_agents.CALLS == []  # the target was not called
    rescored = by_key(read_jsonl(tmp_path / "run-rescore" / "results.jsonl"))
    assert set(rescored) == set(original)
    for key, r in rescored.items():
        assert r["scores"] == original[key]["scores"]
    # With another metric, the same traces give new scores: the point of re-scoring.
    # (Trial 2 has no recording: three target_errors, which fail the gate's default max_target_error_share.)
    assert cli_main(["run", str(config_path), "--no-progress", "--rescore", "run", "--run-dir", "other",
                     "--set", "metrics.0.arguments=ignore", "--set", "run.trials=3"]) == 1
    other = by_key(read_jsonl(tmp_path / "other" / "results.jsonl"))
    assert {k: r["status"] for k, r in other.items() if k[1] == 2} == {("c0", 2): "target_error", ("c1", 2): "target_error", ("c2", 2): "target_error"}
    assert "no recorded trace for case 'c0' trial 2" in other[("c0", 2)]["error"]["message"]
    assert all(other[(f"c{i}", t)]["scores"]["ToolCalls"]["value"] == 1.0 for i in range(3) for t in range(2))
    # Re-scoring into the recorded run itself is refused.
    assert cli_main(["run", str(config_path), "--no-progress", "--rescore", "run", "--run-dir", "run"]) == 2
