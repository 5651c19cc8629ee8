"""pass@k and pass^k over a live python target where some cases crash or time out on every trial: a crashed sample is a
failed sample (Chen et al.'s HumanEval harness), so such a case is one with c = 0 in the average, never left out."""

from __future__ import annotations

import pytest
from live_support import live_config, pass_at_k, run_live
from test_target_trials_resume import answer_case, py_target


def test_a_case_whose_every_trial_crashed_or_timed_out_counts_as_failed_in_pass_at_k(tmp_path) -> None:
    cases = [answer_case("all", [0, 1, 2]), answer_case("some", [0, 2]), answer_case("one", [1]),
             {"id": "crash", "input": "q", "metadata": {"mode": "crash"}},
             {"id": "hang", "input": "q", "metadata": {"mode": "hang"}},
             {"id": "na", "input": "q"}]  # (no expected calls: ToolCalls does not apply, and the case stays out)
    metrics = [{"type": "ToolCalls", "arguments": "exact"}, {"type": "PassAtK", "metric": "ToolCalls", "k": 2},
               {"type": "PassHatK", "metric": "ToolCalls", "k": 2}]
    config = live_config(tmp_path, cases, py_target(timeout_s=0.5), run={"trials": 3}, metrics=metrics)
    outcome = run_live(config)
    assert outcome.summary["status"] == {"ok": 12, "target_error": 6}
    figures = outcome.summary["pass_at_k"]
    # Per case (n = 3): all c=3, some c=2, one c=1, crash c=0, hang c=0.
    assert figures["pass@2(ToolCalls)"]["value"] == (1 + 1 + pass_at_k(3, 1, 2) + 0 + 0) / 5
    assert figures["pass^2(ToolCalls)"]["value"] == (1 + 1 / 3 + 0 + 0 + 0) / 5
    for fig in figures.values():
        assert fig["cases"] == 5 and fig["no_scored_trial"] == 1, fig
    # The figure every metric gets with trials > 1 counts them the same way.
    auto = outcome.summary["metrics"]["ToolCalls"]["pass_at_k"]
    assert auto["1"]["value"] == pytest.approx((1 + 2 / 3 + 1 / 3) / 5) and auto["1"]["cases"] == 5
