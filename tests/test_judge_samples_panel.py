"""Repeated judging (`judge.samples`) and panels (`judge.models`) against the simulator's known noise, over real HTTP.

The simulator flips each answer with the configured probability q, independently per sample (its
`noise` decides by the how-many-th time it sees the same request): N samples must show that rate,
and a panel's Fleiss' kappa must be the one statsmodels computes from the verdicts it recorded.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
from scipy.stats import binom, binomtest
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.stages.judge.judge_stats import JudgeTally, fleiss

METRICS = [{"type": "TaskCompletion"}, {"type": "TrajectoryEfficiency"}]  # grouped: one request per case asks both


def write_cases(path: Path, n: int) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"name": "search", "arguments": {"day": i}, "result": f"flight F{i}"}]},
                     {"tool_calls": [{"name": "book", "arguments": {"flight": f"F{i}"}, "result": "ok"}]}, {"output": f"Booked F{i}."}]
            fh.write(json.dumps({"id": f"c{i}", "input": f"Book a flight on day {i}", "trace": {"steps": steps}}) + "\n")
    return path


def run(tmp: Path, cases: Path, name: str, **judge: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    sim = judge.pop("sim", {})
    cfg = {"dataset": {"path": str(cases)}, "metrics": METRICS,
           "judge": {"provider": "simulator", "model": "gpt-4o-mini", "simulator": sim, **judge},
           "cache": {"dir": str(tmp / f"cache-{name}")}, "run": {"dir": str(tmp / name)}}
    summary = anyio.run(lambda: runner.run(validate_config(cfg))).summary
    return summary, [json.loads(line) for line in (tmp / name / "results.jsonl").read_text().splitlines()]


def test_samples_reproduce_the_configured_flip_rate(tmp_path: Path) -> None:
    q, n_samples = 0.1, 5
    cases = write_cases(tmp_path / "cases.jsonl", 60)
    _, truth_rows = run(tmp_path, cases, "truth")
    truth = {(r["case_id"], k): s["details"]["answers"] for r in truth_rows for k, s in r["scores"].items()}
    summary, rows = run(tmp_path, cases, "sampled", samples=n_samples, temperature=0.7, sim={"noise": q})
    judge = summary["judge"]
    # Grouped, each sample its own request; the grouping figure counts cases (each once, however many samples asked it).
    assert judge["grouped_requests"] == 60 and judge["requests"] == 60 * n_samples
    flipped = answers = 0
    minority: list[int] = []
    flaky = 0
    for r in rows:
        for key, score in r["scores"].items():
            s = score["details"]["samples"]
            assert s["n"] == n_samples and len(s["values"]) == n_samples
            assert math.isclose(score["value"], sum(s["values"]) / n_samples, abs_tol=1e-6)
            for qid, votes in s["answers"].items():
                base = truth[(r["case_id"], key)][qid]["answer"]
                flipped += sum(v != base for v in votes)
                answers += len(votes)
                minority.append(sum(v != s["majority"][qid] for v in votes))
            flaky += s["flaky"]
    # Every sample's answer differs from the flawless one with probability q: a binomial count.
    assert binomtest(flipped, answers, q).pvalue > 0.01, (flipped, answers)
    # The recorded flip rate (answers against their question's majority) is E[min(X, N − X)] / N for X ~ Bin(N, q).
    pmf = [binom.pmf(x, n_samples, q) for x in range(n_samples + 1)]
    mean = sum(min(x, n_samples - x) * p for x, p in enumerate(pmf))
    var = sum(min(x, n_samples - x) ** 2 * p for x, p in enumerate(pmf)) - mean ** 2
    measured = sum(minority) / (len(minority) * n_samples)
    assert abs(measured - mean / n_samples) < 4 * math.sqrt(var / len(minority)) / n_samples, (measured, mean / n_samples)
    # The summary's flakiness per metric is the share of items whose samples disagree; both metrics together give the measured figures.
    block = judge["samples"]
    assert sum(b["items"] for b in block.values()) == 120 and sum(b["flaky"] for b in block.values()) == flaky
    assert sum(b["flips"] for b in block.values()) == sum(minority) and sum(b["answers"] for b in block.values()) == answers


def test_one_sample_keeps_the_cache_keys(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 5)
    cache = tmp_path / "cache-shared"
    for name, samples in (("one", 1), ("three", 3)):
        cfg = {"dataset": {"path": str(cases)}, "metrics": METRICS, "judge": {"provider": "simulator", "model": "gpt-4o-mini", "samples": samples},
               "cache": {"dir": str(cache)}, "run": {"dir": str(tmp_path / name)}}
        summary = anyio.run(lambda cfg=cfg: runner.run(validate_config(cfg))).summary
    # The three-sample run found sample 0 of every case in the cache the one-sample run filled, and asked samples 1 and 2.
    assert (summary["judge"]["cache_hits"], summary["judge"]["requests"]) == (5, 10)


def test_fleiss_kappa_matches_a_hand_computed_table() -> None:
    # 5 subjects, 3 raters, yes/no. p_yes = 9/15, Pe = 0.6² + 0.4² = 0.52; P_i = 1, 1/3, 1/3, 1, 1 so P̄ = 11/15;
    # kappa = (11/15 − 0.52) / (1 − 0.52) = 4/9.
    rows = [[3, 0], [2, 1], [1, 2], [0, 3], [3, 0]]
    assert math.isclose(fleiss(rows) or 0.0, 4 / 9, rel_tol=1e-9)
    tally = JudgeTally()
    for row in rows:
        answers = ["yes"] * row[0] + ["no"] * row[1]
        tally.add_panel("m", {"panel": {"models": {f"j{i}": {"answers": {"q1": a}} for i, a in enumerate(answers)}}})
    got = tally.summary(None, None)["panel"]["metrics"]["m"]
    assert got["subjects"] == 5 and math.isclose(got["fleiss_kappa"], 4 / 9, abs_tol=1e-6)
    # Resuming adds an earlier segment's counts: the same table twice has the same kappa.
    assert math.isclose(JudgeTally().summary({"panel": {"metrics": {"m": got}}}, None)["panel"]["metrics"]["m"]["fleiss_kappa"], 4 / 9, abs_tol=1e-6)


def test_a_panel_keeps_each_models_verdict_and_reports_agreement(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 40)
    noise = {"gpt-4o-mini": 0.0, "gpt-4.1-mini": 0.1, "claude-3-5-haiku-latest": 0.4}
    models = ["simulator:gpt-4o-mini", "simulator:gpt-4.1-mini", "simulator:claude-3-5-haiku-latest"]
    summary, rows = run(tmp_path, cases, "panel", models=models, aggregate="majority", sim={"noise": noise})
    block = summary["judge"]["panel"]
    for r in rows:
        for score in r["scores"].values():
            panel = score["details"]["panel"]
            assert list(panel["models"]) == models and panel["aggregate"] == "majority"
            assert score["judge"]["model"] == "panel:" + "+".join(models)
    for metric, got in block["metrics"].items():
        # Fleiss' kappa over the verdicts the scores recorded, recomputed here from them.
        table = []
        for r in rows:
            per_model = r["scores"][metric]["details"]["panel"]["models"]
            for qid in per_model[models[0]]["answers"]:
                votes = [m["answers"][qid] for m in per_model.values()]
                table.append([votes.count("yes"), votes.count("no")])
        assert math.isclose(got["fleiss_kappa"], fleiss(table) or 0.0, abs_tol=1e-6) and got["subjects"] == len(table)
        agree = got["agreement_with_panel"]
        assert agree[models[0]] > agree[models[2]]  # the noisiest judge agrees least with the panel
    assert set(block["models"]) == set(models) and all(m["requests"] == 40 for m in block["models"].values())
    assert summary["judge"]["requests"] == 120  # every model asked once per case (grouped)


def test_the_gate_states_the_ci_of_a_mean_over_samples() -> None:
    from tracejudge.core.evalconfig import AssertionsConfig
    from tracejudge.stages.aggregate.gate import evaluate_gate

    summary = {"results": 10, "metrics": {"tc": {"results": 10, "scored": 10, "mean": 0.62, "ci95": [0.55, 0.69], "passed": 6}},
               "judge": {"samples_per_request": 3, "samples": {"tc": {"items": 10}}}}
    verdict = evaluate_gate(AssertionsConfig.model_validate({"metrics": {"tc": {"min_mean": 0.6}}}), summary, None)
    check = next(c for c in verdict.checks if c.name == "tc min_mean")
    assert check.ok and "95% CI [0.5500, 0.6900], each value a mean of 3 samples" in check.detail
    summary["judge"]["samples"] = {}  # a metric no judge scored (deterministic) is not a mean of samples
    verdict = evaluate_gate(AssertionsConfig.model_validate({"metrics": {"tc": {"min_mean": 0.6}}}), summary, None)
    assert "samples" not in next(c for c in verdict.checks if c.name == "tc min_mean").detail


def test_panel_members_inherit_the_judge_section_unless_on_another_provider(tmp_path: Path, monkeypatch: Any) -> None:
    import pytest
    from tracejudge.core.errors import ConfigError
    from tracejudge.stages.judge.panel import member_key, panel_members

    monkeypatch.setenv("MY_KEY", "k1")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    cases = write_cases(tmp_path / "cases.jsonl", 1)
    cfg = validate_config({"dataset": {"path": str(cases)}, "metrics": METRICS,
                           "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "MY_KEY",
                                     "models": ["gpt-4.1-mini", "llama3:8b", {"model": "anthropic:claude-3-5-haiku-latest", "limits": {"rpm": 50}}]}})
    a, b, c = panel_members(cfg)
    assert (a.name, a.cfg.base_url, a.cfg.api_key_env, a.limits) == ("openai:gpt-4.1-mini", "http://127.0.0.1:9/v1", "MY_KEY", None)
    assert (b.name, b.cfg.provider, b.cfg.base_url) == ("openai:llama3:8b", "openai", "http://127.0.0.1:9/v1")  # a tag, not a provider
    assert (c.name, c.cfg.base_url, c.cfg.api_key_env, c.limits.rpm) == ("anthropic:claude-3-5-haiku-latest", None, "ANTHROPIC_API_KEY", 50)
    assert member_key(a) == "k1"
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        member_key(c)
    # A run with that panel stops before it starts: no run directory is made.
    run_cfg = cfg.model_copy(update={"run": cfg.run.model_copy(update={"dir": tmp_path / "never"})})
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        anyio.run(lambda: runner.run(run_cfg))
    assert not (tmp_path / "never").exists()
    twice = cfg.model_copy(update={"judge": cfg.judge.model_copy(update={"models": [a_ for a_ in cfg.judge.models[:1]] * 2})})
    with pytest.raises(ConfigError, match="twice"):
        panel_members(twice)


def test_flakiness_adds_up_across_segments_of_a_resumed_run() -> None:
    first, second = JudgeTally(), JudgeTally()
    first.add_samples("tc", {"samples": {"flaky": True, "flip_rate": 0.25, "answers": {"q1": ["yes", "no", "yes", "yes"]}}})
    first.add_samples("tc", {"samples": {"flaky": False, "flip_rate": 0.0, "answers": {"q1": ["yes"] * 4}}})
    earlier = first.summary(None, None)
    second.add_samples("tc", {"samples": {"flaky": True, "flip_rate": 0.5, "answers": {"q1": ["yes", "no", "yes", "no"]}}})
    got = second.summary(earlier, None)["samples"]["tc"]
    assert (got["items"], got["flaky"], got["flips"], got["answers"]) == (3, 2, 3, 12)
    assert math.isclose(got["flakiness"], 2 / 3, abs_tol=1e-6) and math.isclose(got["flip_rate"], 0.25)
