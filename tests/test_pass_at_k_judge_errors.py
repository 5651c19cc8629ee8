"""pass@k and pass^k of a run where the judge failed on some trials (the simulator refuses them over 127.0.0.1) while the
agent crashed on others: a judge failure fails the trial only for the judge metric; the deterministic score computed on
that trial is a sample like any other; a crashed agent fails the trial for every metric. A trial the judge budget
skipped is counted the same way as one the judge failed on."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from math import comb

import pytest

from live_support import live_config, pass_at_k, read_jsonl, run_live
from test_target_trials_resume import answer_case, py_target
from tracejudge.simulator.server import SimulatorThread


def test_a_judge_failure_fails_only_the_judge_metric_in_pass_at_k(simulator: Callable[..., SimulatorThread], tmp_path) -> None:
    sim = simulator(refuse_marker="JUDGE-REFUSES")
    refused = {**answer_case("refused", [0, 1, 2, 3]), "metadata": {"mode": "pass_trials", "pass_trials": [0, 1, 2, 3], "judge_refuses": [0, 1, 2]}}
    some = {**answer_case("some", [0, 2]), "metadata": {"mode": "pass_trials", "pass_trials": [0, 2], "judge_refuses": [0]}}
    cases = [refused, some, answer_case("plain", [1]), {"id": "crash", "input": "q", "metadata": {"mode": "crash"},
                                                         "expected_tool_calls": [{"name": "answer", "arguments": {"correct": True}}]}]
    metrics = [{"type": "ToolCalls", "arguments": "exact"}, {"type": "TaskCompletion"},
               {"type": "PassAtK", "metric": "ToolCalls", "k": 2}, {"type": "PassHatK", "metric": "ToolCalls", "k": 2},
               {"type": "PassAtK", "metric": "TaskCompletion", "k": 2}, {"type": "PassHatK", "metric": "TaskCompletion", "k": 2}]
    config = live_config(tmp_path, cases, py_target(), run={"trials": 4}, metrics=metrics,
                         judge={"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "max_attempts": 1},
                         cache={"dir": str(tmp_path / "cache")}, assertions={"max_target_error_share": 1.0})
    outcome = run_live(config)
    assert outcome.summary["status"] == {"ok": 8, "judge_error": 4, "target_error": 4}
    assert sim.stats.refused >= 4
    figures = outcome.summary["pass_at_k"]

    # ToolCalls, from the agent's calls alone: refused c=4, some c=2, plain c=1, crash c=0 (n = 4 each).
    c_tools = [4, 2, 1, 0]
    assert figures["pass@2(ToolCalls)"]["value"] == pytest.approx(sum(pass_at_k(4, c, 2) for c in c_tools) / 4)  # (cases fold in any order)
    assert figures["pass^2(ToolCalls)"]["value"] == pytest.approx(sum(hat(4, c, 2) for c in c_tools) / 4)

    # TaskCompletion: a trial the judge failed on, or whose agent crashed, fails; the others pass as the judge said.
    passed: dict[str, int] = defaultdict(int)
    for r in read_jsonl(tmp_path / "run" / "results.jsonl"):
        score = r["scores"].get("TaskCompletion") or {}
        judged = r["status"] == "ok"
        assert judged or score.get("value") is None, json.dumps(r)
        passed[r["case_id"]] += bool(judged and score.get("passed"))
    assert passed["refused"] <= 1 and passed["crash"] == 0
    c_judge = [passed[c] for c in ("refused", "some", "plain", "crash")]
    assert figures["pass@2(TaskCompletion)"]["value"] == pytest.approx(sum(pass_at_k(4, c, 2) for c in c_judge) / 4)
    assert figures["pass^2(TaskCompletion)"]["value"] == pytest.approx(sum(hat(4, c, 2) for c in c_judge) / 4)
    for fig in figures.values():
        assert fig["cases"] == 4 and fig["no_scored_trial"] == 0 and fig["too_few_trials"] == 0, fig


def hat(n: int, c: int, k: int) -> float:
    """pass^k of one case: C(c, k) / C(n, k) (τ-bench's `display_metrics`)."""
    return comb(c, k) / comb(n, k)


def test_a_trial_the_judge_budget_skipped_fails_only_the_judge_metric(simulator: Callable[..., SimulatorThread], tmp_path) -> None:
    sim = simulator()
    cases = [answer_case("all", [0, 1, 2]), answer_case("some", [0, 2]), answer_case("none", [])]
    metrics = [{"type": "ToolCalls", "arguments": "exact"}, {"type": "TaskCompletion"},
               {"type": "PassAtK", "metric": "ToolCalls", "k": 2}, {"type": "PassAtK", "metric": "TaskCompletion", "k": 2}]
    config = live_config(tmp_path, cases, py_target(), run={"trials": 3}, metrics=metrics, budget={"max_cost_usd": 0.0000001},
                         judge={"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1"})
    outcome = run_live(config)
    assert outcome.summary["status"] == {"skipped_budget": 9} and sim.stats.requests == 0
    figures = outcome.summary["pass_at_k"]
    assert figures["pass@2(ToolCalls)"]["value"] == pytest.approx((1 + 1 + 0) / 3)  # (c = 3, 2, 0 of n = 3)
    assert (figures["pass@2(TaskCompletion)"]["value"], figures["pass@2(TaskCompletion)"]["cases"]) == (0.0, 3)
