"""A panel's `agreement_with_panel` is leave-one-out: each model against the majority of the *other* models.

It used to count each model inside the majority it was compared with, so its own vote could make the majority it
then agreed with: a 3-model panel read about 81% where the models agree with each other's majority 70% of the time,
and each model of a 2-model panel read 100%. Real runs (the CLI, the simulator over HTTP on 127.0.0.1, whose `noise`
q flips each answer independently per model and question) against figures computed by hand:

- three models, q = 0.25 each, yes/no questions. The other two have a majority when they agree:
  0.75² + 0.25² = 0.625 of the questions; the model agrees with it with probability
  (0.75³ + 0.25³) / 0.625 = 0.4375 / 0.625 = 0.7. (Counting the model in: it is in the majority unless both
  others differ from it, 1 − (0.75·0.25² + 0.25·0.75²) = 1 − 0.1875 = 0.8125, the old figure.)
- two models, q = 0.25 each: the other model is the whole majority, so the figure is their plain agreement,
  0.75² + 0.25² = 0.625 (was 1.0): exactly the share of questions the panel did not tie on.
- hand-made verdicts of three models on four questions (below).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from scipy.stats import binomtest
from test_judge_samples_panel import write_cases
from tracejudge.entrypoints.cli import main
from tracejudge.stages.judge.judge_stats import JudgeTally

CASES = 150  # × 4 TaskCompletion questions = 600 subjects


def panel_run(tmp: Path, name: str, models: list[str]) -> dict[str, Any]:
    cases = write_cases(tmp / "cases.jsonl", CASES)
    cfg = tmp / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(cases)}, "metrics": [{"type": "TaskCompletion"}],
                                   "judge": {"provider": "simulator", "model": "gpt-4o-mini", "models": models, "aggregate": "majority",
                                             "simulator": {"noise": 0.25, "seed": 2}},
                                   "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / name)}}))
    assert main(["run", str(cfg)]) == 0
    return json.loads((tmp / name / "summary.json").read_text())["judge"]["panel"]["metrics"]["TaskCompletion"]


def test_three_models_are_each_compared_with_the_other_two(tmp_path: Path) -> None:
    models = ["simulator:m1", "simulator:m2", "simulator:m3"]
    got = panel_run(tmp_path, "three", models)
    assert got["subjects"] == CASES * 4 and got["tied"] == 0  # three yes/no votes always have a majority
    # 0.7 (about 375 questions rated per model: a standard error of 0.024), not the inclusive 0.8125.
    assert all(abs(got["agreement_with_panel"][m] - 0.7) < 0.06 for m in models), got["agreement_with_panel"]
    agree, rated = got["loo_agree"], got["loo_rated"]
    for m in models:
        assert rated[m] + got["others_tied"][m] == got["subjects"]  # every question is rated or the others tied
        assert binomtest(rated[m], got["subjects"], 0.625).pvalue > 0.001
        assert binomtest(agree[m], rated[m], 0.7).pvalue > 0.001, (m, agree[m], rated[m])
        assert got["agreement_with_panel"][m] == round(agree[m] / rated[m], 6)
    # The inclusive figure, 0.8125, is ruled out over all three models' answers.
    assert binomtest(sum(agree.values()), sum(rated.values()), 0.8125).pvalue < 1e-4


def test_two_models_agreement_is_their_plain_agreement(tmp_path: Path) -> None:
    models = ["simulator:m1", "simulator:m2"]
    got = panel_run(tmp_path, "two", models)
    plain = round(1 - got["tied"] / got["subjects"], 6)  # a 2-model panel ties exactly where the two disagree
    assert got["agreement_with_panel"] == {m: plain for m in models}
    assert binomtest(got["subjects"] - got["tied"], got["subjects"], 0.625).pvalue > 0.001


def test_hand_made_votes() -> None:
    # q1 yes yes yes | q2 yes yes no | q3 no yes yes | q4 no no no   (m1, m2, m3)
    # m1: others agree on q1 (yes ✓), q3 (yes ✗), q4 (no ✓); tie on q2   → 2/3, others_tied 1
    # m2: others agree on q1 ✓, q4 ✓; tie on q2 (yes/no), q3 (no/yes)      → 2/2, others_tied 2
    # m3: others agree on q1 ✓, q2 (yes ✗), q4 ✓; tie on q3               → 2/3, others_tied 1
    # (Counting each model in the whole panel's majority — yes, yes, yes, no — gave 3/4, 4/4, 3/4.)
    votes = {"m1": ["yes", "yes", "no", "no"], "m2": ["yes", "yes", "yes", "no"], "m3": ["yes", "no", "yes", "no"]}
    tally = JudgeTally()
    for i in range(4):
        tally.add_panel("M", {"panel": {"models": {m: {"answers": {f"q{i + 1}": {"answer": v[i]}}} for m, v in votes.items()}}})
    got = tally.summary(None, None)["panel"]["metrics"]["M"]
    assert got["agreement_with_panel"] == {"m1": 0.666667, "m2": 1.0, "m3": 0.666667}
    assert got["others_tied"] == {"m1": 1, "m2": 2, "m3": 1} and got["tied"] == 0
    # A resumed run adds the earlier segment's counts: the same votes twice give the same shares, twice the counts.
    again = JudgeTally()
    for i in range(4):
        again.add_panel("M", {"panel": {"models": {m: {"answers": {f"q{i + 1}": {"answer": v[i]}}} for m, v in votes.items()}}})
    both = again.summary({"panel": {"metrics": {"M": got}}}, None)["panel"]["metrics"]["M"]
    assert both["agreement_with_panel"] == got["agreement_with_panel"] and both["loo_rated"] == {"m1": 6, "m2": 4, "m3": 6}
