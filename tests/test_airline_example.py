"""The example live sweep: the airline agent on the 50 τ-bench airline tasks, 3 trials, ToolCalls."""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

from live_support import REPO, by_key, pass_at_k_from_results, read_jsonl, run_live
from tracejudge.core.config import load_config

CONFIG = REPO / "examples" / "agents" / "airline.yaml"


def test_airline_sweep_pass_at_k(tmp_path):
    config = load_config(CONFIG, [f"run.dir={tmp_path / 'run'}"])
    outcome = run_live(config)
    assert outcome.summary["status"] == {"ok": 150}
    results = read_jsonl(tmp_path / "run" / "results.jsonl")
    keyed = by_key(results)
    assert set(keyed) == {(str(t), k) for t in range(50) for k in range(3)}

    passed = defaultdict(list)
    for r in results:
        passed[r["case_id"]].append(r["scores"]["writes_exact"]["passed"])
    assert sum(sum(v) for v in passed.values()) == 119  # trials passing out of 150
    assert sum(1 for v in passed.values() if len(set(v)) > 1) == 19  # tasks whose trials disagree
    assert sum(1 for v in passed.values() if not any(v)) == 2  # blind spots: never right
    assert abs(pass_at_k_from_results(results, "writes_exact", 1) - float(Fraction(119, 150))) < 1e-12
    assert abs(pass_at_k_from_results(results, "writes_exact", 3) - 48 / 50) < 1e-12

    # Every call the agent made fits the tau-bench tool schemas and the fake database accepts it.
    traces = read_jsonl(tmp_path / "run" / "traces.jsonl")
    calls = [c for t in traces for s in t["case"]["trace"]["steps"] for c in s["tool_calls"]]
    assert len(calls) > 300
    assert [c for c in calls if c.get("error")] == []


def test_airline_agent_is_deterministic(tmp_path):
    a = load_config(CONFIG, [f"run.dir={tmp_path / 'a'}", "dataset.limit=10"])
    b = load_config(CONFIG, [f"run.dir={tmp_path / 'b'}", "dataset.limit=10", "target.concurrency=1"])
    run_live(a)
    run_live(b)
    scores_a = {k: r["scores"] for k, r in by_key(read_jsonl(tmp_path / "a" / "results.jsonl")).items()}
    scores_b = {k: r["scores"] for k, r in by_key(read_jsonl(tmp_path / "b" / "results.jsonl")).items()}
    assert scores_a == scores_b and len(scores_a) == 30
