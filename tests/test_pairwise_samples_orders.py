"""Pairwise comparison with `judge.samples` (and a panel's `aggregate: mean`): each order's preference first, then both orders.

The simulator's pairwise judge (a real HTTP server on 127.0.0.1) prefers the run of higher hidden quality and,
with `position_bias` b, answers "the first shown" with probability b, drawn afresh for each sample (each is the
request's next occurrence). With S samples the order in which the better run is shown *second* prefers the first
shown when more of its samples are biased than not. The comparison used to set the
two orders' *mean* values against each other, so 5 of 5 samples for B in one order and 4 of 5 in the other read as a
flip and the pair became a tie: more samples, more ties (retained decisions 0.8^S). Now an order's preference is the
sign of its samples' mean preference, and the pair is decided when the two orders' preferences agree.

Hand-computed reference figures (b = 0.2), the chance that a pair the unbiased judge decides stays decided:
- 1 sample: the order showing the better run second must be unbiased: 1 − 0.2 = 0.8.
- 5 samples, new rule: fewer than 3 of 5 biased: 1 − P(Bin(5, 0.2) ≥ 3)
  = 1 − (10·0.2³·0.8² + 5·0.2⁴·0.8 + 0.2⁵) = 1 − (0.0512 + 0.0064 + 0.00032) = 0.94208.
- 5 samples, old rule: none of 5 biased: 0.8⁵ = 0.32768.
- a panel of 2 models × 3 samples, `aggregate: mean`: the simulator's bias draw depends on the request's
  occurrence, not on the model, so both members answer alike and the panel's mean is one member's: decided
  unless 2 or 3 of 3 samples are biased: 1 − (3·0.2²·0.8 + 0.2³) = 1 − 0.104 = 0.896 (old rule: 0.8³ = 0.512).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from scipy.stats import binomtest
from test_compare_pairwise import N, make_run
from tracejudge.core.config import load_config
from tracejudge.entrypoints.cli import main
from tracejudge.stages.comparison.pairwise import compare_pairwise
from tracejudge.stages.comparison.pairwise_rule import case_bootstrap, pair_point


def config(tmp: Path, name: str, data: Path, bias: float, samples: int = 1, models: list[str] | None = None) -> Path:
    judge: dict[str, Any] = {"provider": "simulator", "model": "gpt-4o-mini", "simulator": {"position_bias": bias, "seed": 5},
                             "samples": samples, "pairwise": {"rubric": "Which run booked the flight the user asked for?"}}
    if models:
        judge.update(models=models, aggregate="mean")
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"dataset": {"path": str(data)}, "metrics": [{"type": "TaskCompletion"}], "judge": judge,
                                    "cache": {"dir": str(tmp / f"cache-{name}")}, "run": {"dir": str(tmp / f"run-{name}")}}))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, dict[str, str], int]:
    """Runs A and B, the unbiased judge's verdicts (case → winner) and the number of pairs it calls equal."""
    tmp = tmp_path_factory.mktemp("pairwise-samples")
    a, b = make_run(tmp, "a", "alpha"), make_run(tmp, "b", "beta")
    fair = compare_pairwise(a, b, load_config(config(tmp, "fair", tmp / "a.jsonl", 0.0), []), top=N)
    assert fair.flipped == 0 and fair.pairs == N and fair.wins > 20 and fair.losses > 20
    return tmp, a, b, {d["case_id"]: d["winner"] for d in fair.deciding}, fair.ties


def check_against_truth(res: Any, truth: dict[str, str], equal: int, keep: float) -> None:
    """Every decided pair is the unbiased judge's verdict; the truly decided pairs stay decided at the rate `keep`;
    a pair the unbiased judge calls equal is a tie; flips are the lost decisions plus equal pairs an order tipped."""
    assert res.pairs == N and res.not_judged == 0
    assert res.deciding and all(truth.get(d["case_id"]) == d["winner"] for d in res.deciding)
    kept = res.wins + res.losses
    assert binomtest(kept, len(truth), keep).pvalue > 0.01, (kept, len(truth), keep)
    assert res.ties == N - kept and len(truth) - kept <= res.flipped <= len(truth) - kept + equal
    assert res.win_rate == round((res.wins + res.ties / 2) / N, 6)


def test_more_samples_keep_more_decisions_not_fewer(runs: tuple[Path, Path, Path, dict[str, str], int], tmp_path: Path) -> None:
    tmp, a, b, truth, equal = runs
    one = compare_pairwise(a, b, load_config(config(tmp_path, "one", tmp / "a.jsonl", 0.2), []), top=N)
    five = compare_pairwise(a, b, load_config(config(tmp_path, "five", tmp / "a.jsonl", 0.2, samples=5), []), top=N)
    check_against_truth(one, truth, equal, 0.8)
    check_against_truth(five, truth, equal, 0.94208)
    assert binomtest(five.wins + five.losses, len(truth), 0.32768).pvalue < 1e-6  # the old rule's rate is ruled out
    assert five.wins + five.losses >= one.wins + one.losses
    fair_rate = (sum(w == "B" for w in truth.values()) + equal / 2) / N
    # The winner does not reverse: B's win rate stays on the unbiased judge's side of one half.
    assert (five.win_rate - 0.5) * (fair_rate - 0.5) > 0 and abs(five.win_rate - fair_rate) < abs(one.win_rate - fair_rate) + 0.02


def test_a_mean_panel_decides_each_order_from_its_members_samples(runs: tuple[Path, Path, Path, dict[str, str], int], tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    tmp, a, b, truth, equal = runs
    cfg = config(tmp_path, "panel", tmp / "a.jsonl", 0.2, samples=3, models=["simulator:m1", "simulator:m2"])
    assert main(["compare", str(a), "--vs", str(b), "--judge", str(cfg), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["judge"]["requests"] == N * 2 * 2 * 3  # pairs × orders × models × samples
    check_against_truth(SimpleNamespace(**got), truth, equal, 0.896)  # (`deciding`: the first 10, each checked)
    assert binomtest(got["wins"] + got["losses"], len(truth), 0.512).pvalue < 1e-6


def test_the_rule_on_hand_made_values() -> None:
    # (A-first value, B-first value) → (B's point, flipped). A value is the first shown's mean: 1 first better, 0 second.
    assert pair_point(0.0, 1.0) == (1.0, False)  # B better in both orders, 5 of 5 samples each
    assert pair_point(0.2, 0.8) == (1.0, False)  # 4 of 5 for B in each order: the same preference, not a flip
    assert pair_point(0.2, 1.0) == (1.0, False)  # 4 of 5 and 5 of 5: the old rule called this a flip and a tie
    assert pair_point(0.6, 0.8) == (0.5, True)  # A-first prefers A, B-first prefers B: the order decided
    assert pair_point(0.5, 0.5) == (0.5, False)  # equal in both orders: a tie, no flip
    assert pair_point(0.5, 0.6) == (0.5, True)  # 1 of 5 more for the first shown (B) against "equal": inconsistent
    assert pair_point(0.9, 0.3) == (0.0, False)  # A better in both orders


def test_the_ci_resamples_cases_with_all_their_trials(runs: tuple[Path, Path, Path, dict[str, str], int], tmp_path: Path) -> None:
    tmp, a, b, _, _ = runs
    cfg = load_config(config(tmp_path, "trials", tmp / "a.jsonl", 0.0), [])
    once = compare_pairwise(a, b, cfg)
    # The same runs with every case's result given a second trial (the same trace, so the same verdicts): twice the
    # pairs but no new evidence, so the case bootstrap gives exactly the same interval. Resampling pairs narrowed it.
    twice = []
    for run in (a, b):
        copy = tmp_path / f"{run.name}-2trials"
        shutil.copytree(run, copy)
        rows = [json.loads(x) for x in (copy / "results.jsonl").read_text().splitlines() if x.strip()]
        with open(copy / "results.jsonl", "a") as fh:
            for r in rows:
                fh.write(json.dumps({**r, "trial": 1}) + "\n")
        twice.append(copy)
    res = compare_pairwise(twice[0], twice[1], cfg)
    assert res.pairs == 2 * N and res.win_rate == once.win_rate and res.wins == 2 * once.wins
    assert res.win_rate_ci == once.win_rate_ci
    # Hand-computed: two cases of 10 trials, all won (1) and all lost (0). A replication draws each case with
    # probability 1/2 twice: win rate 0 (1/4), 0.5 (1/2) or 1 (1/4); its 2.5th and 97.5th percentiles are 0 and 1.
    assert case_bootstrap([("c1", 1.0)] * 10 + [("c2", 0.0)] * 10, seed=0) == [0.0, 1.0]
