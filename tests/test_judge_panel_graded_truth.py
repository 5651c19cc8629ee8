"""A panel on a graded metric (a Rubric), against the judge simulator over real HTTP.

- The simulator's truth is a hash of the seed, the request's first fenced data tag and the answer's place, never
  the model (`tracejudge.simulator.flaws`): a Rubric's grade was drawn from the whole request body, model included,
  so a flawless panel of simulator models disagreed on grades (Fleiss' κ −0.017) while agreeing on yes/no questions.
- The terminal said a graded question without a majority grade was "not credited to the score", but `majority`
  scores every graded question with the panel's lower median grade (votes 2, 3, 5 → 3).
- The tie rule was said to be inspect-ai's; inspect-ai's `majority_score` leaves a tie unscored (NaN).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_judge_samples_panel import write_cases
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.stages.judge import repeat
from tracejudge.stages.reports.judge_lines import quality_lines

RUBRIC = {"type": "Rubric", "name": "quality", "criteria": "Did the agent book the cheapest flight?", "scale": [1, 5]}
OTHER = {"type": "Rubric", "name": "tone", "criteria": "Was the agent polite?", "scale": [1, 5]}
MODELS = ["simulator:a", "simulator:b", "simulator:c"]


def _run(tmp: Path, name: str, sim: dict[str, Any], models: list[str] = MODELS) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cases = write_cases(tmp / "cases.jsonl", 16)
    cfg = {"dataset": {"path": str(cases)}, "metrics": [RUBRIC, OTHER, {"type": "TaskCompletion"}],
           "judge": {"provider": "simulator", "simulator": sim, "aggregate": "majority", "models": models},
           "cache": {"enabled": False}, "run": {"dir": str(tmp / name)}}
    summary = anyio.run(lambda: runner.run(validate_config(cfg))).summary
    return summary, [json.loads(line) for line in (tmp / name / "results.jsonl").read_text().splitlines()]


def test_a_flawless_panel_of_simulator_models_agrees_on_grades(tmp_path: Path) -> None:
    summary, rows = _run(tmp_path, "flawless", {"seed": 5})
    panel = summary["judge"]["panel"]["metrics"]
    for metric in ("quality", "tone", "TaskCompletion"):
        assert panel[metric]["tied"] == 0 and panel[metric]["fleiss_kappa"] in (1.0, None), (metric, panel[metric])
        assert set(panel[metric]["agreement_with_panel"].values()) == {1.0}, (metric, panel[metric])
    for r in rows:
        for metric in ("quality", "tone"):
            votes = {m["answers"]["q1"] for m in r["scores"][metric]["details"]["panel"]["models"].values()}
            assert len(votes) == 1, (r["case_id"], metric, votes)
    grades = [r["scores"]["quality"]["details"]["panel"]["answers"]["q1"] for r in rows]
    assert len(set(grades)) > 2  # the truth still varies by case
    # The grade is the truth of what is asked: another rubric over the same data is graded on its own.
    assert grades != [r["scores"]["tone"]["details"]["panel"]["answers"]["q1"] for r in rows]
    # A single model of another name gives the panel's grades.
    _, alone = _run(tmp_path, "alone", {"seed": 5}, models=["simulator:zz"])
    assert {r["case_id"]: r["scores"]["quality"]["details"]["answers"]["q1"]["score"] for r in alone} == \
        {r["case_id"]: g for r, g in zip(rows, grades, strict=True)}


def test_graded_ties_are_said_to_take_the_lower_median_and_yes_no_ties_to_go_against(tmp_path: Path) -> None:
    # (Noise moves a grade to its mirror, 2 ↔ 4: two members disagreeing have no majority grade.)
    summary, rows = _run(tmp_path, "noisy", {"seed": 5, "noise": 0.3}, models=MODELS[:2])
    tied = [r for r in rows if r["scores"]["quality"]["details"]["panel"]["tied_questions"]]
    assert tied, "noise made no graded question lack a majority"
    for r in tied:
        panel = r["scores"]["quality"]["details"]["panel"]
        votes = [m["answers"]["q1"] for m in panel["models"].values()]
        assert panel["answers"]["q1"] == statistics.median_low(votes)  # scored all the same: the lower median
        assert r["scores"]["quality"]["value"] == (statistics.median_low(votes) - 1) / 4
    lines = quality_lines(summary)
    graded = next(line for line in lines if line.startswith("judge panel quality:"))
    assert "not credited" not in graded and "without a majority grade" in graded and "lower median grade" in graded, graded
    yes_no = next(line for line in lines if line.startswith("judge panel TaskCompletion:"))
    if summary["judge"]["panel"]["metrics"]["TaskCompletion"]["tied"]:
        assert "tied" in yes_no and "a tie goes against the score" in yes_no, yes_no


def test_the_tie_rule_is_inspect_ais_strict_majority_but_decided_where_inspect_leaves_it_unscored() -> None:
    scorer = pytest.importorskip("inspect_ai.scorer")
    from inspect_ai.scorer._reducer.reducer import majority_score

    reduce = majority_score()
    for votes in (["yes", "yes", "no"], ["no", "no", "yes"], ["yes", "yes", "yes"]):
        ours = repeat._majority(votes, "yes")
        theirs = reduce([scorer.Score(value="C" if v == "yes" else "I") for v in votes]).value
        assert ours == ("yes" if theirs == "C" else "no")  # a strict majority: the same answer
    assert math.isnan(reduce([scorer.Score(value="C"), scorer.Score(value="I")]).value)  # inspect-ai: unscored
    assert repeat._majority(["yes", "no"], "yes") == "no"  # tracejudge: decided, against the score
    doc = " ".join((repeat.__doc__ or "").split())
    assert "as inspect-ai's `majority` reducer decides" not in doc and "unscored (NaN)" in doc, doc
