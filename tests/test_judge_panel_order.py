"""A panel's `aggregate: majority` does not depend on the order its models are listed in.

With two models every disagreement is a tie; a tie used to go to the first-listed model, so the same answers
gave another mean and pass rate once the list was swapped, and the first model read "agreement with the
panel 100.0%". A tie now goes against the score (a strict majority credits it), whatever the order.
Real runs against the judge simulator, whose noise makes the two models disagree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from test_judge_samples_panel import write_cases
from tracejudge.core.config import validate_config
from tracejudge.engine import runner

MODELS = ["simulator:gpt-4o-mini", "simulator:gpt-4o"]


def _run(tmp: Path, cases: Path, name: str, models: list[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    cfg = {"dataset": {"path": str(cases)}, "metrics": [{"type": "TaskCompletion"}],
           "judge": {"provider": "simulator", "samples": 3, "simulator": {"noise": 0.3, "seed": 3}, "aggregate": "majority", "models": models},
           "cache": {"enabled": False}, "run": {"dir": str(tmp / name)}}
    summary = anyio.run(lambda: runner.run(validate_config(cfg))).summary
    rows = [json.loads(line) for line in (tmp / name / "results.jsonl").read_text().splitlines()]
    return summary, {r["case_id"]: r["scores"]["TaskCompletion"] for r in rows}


def test_the_same_panel_in_either_order_gives_the_same_scores(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 12)
    first, a = _run(tmp_path, cases, "ab", MODELS)
    second, b = _run(tmp_path, cases, "ba", MODELS[::-1])
    # The models answered the same in both runs (the simulator's noise is seeded per request): only the order differs.
    for case in a:
        assert a[case]["details"]["panel"]["models"] == {m: b[case]["details"]["panel"]["models"][m] for m in MODELS}
    tied = sum(len({m["answers"][q] for m in s["details"]["panel"]["models"].values()}) > 1
               for s in a.values() for q in s["details"]["answers"])
    assert tied > 0  # the noise made the two models disagree: the order mattered here before
    assert {c: (s["value"], s["passed"]) for c, s in a.items()} == {c: (s["value"], s["passed"]) for c, s in b.items()}
    assert all(s["details"]["panel"]["tied_questions"] == sum(len({m["answers"][q] for m in s["details"]["panel"]["models"].values()}) > 1
                                                               for q in s["details"]["answers"]) for s in a.values())
    assert {c: s["details"]["panel"]["answers"] for c, s in a.items()} == {c: s["details"]["panel"]["answers"] for c, s in b.items()}
    got, again = first["metrics"]["TaskCompletion"], second["metrics"]["TaskCompletion"]
    assert (got["mean"], got["pass_rate"]) == (again["mean"], again["pass_rate"])
    # A tied question is answered against the score and says so.
    for s in a.values():
        for qid, answer in s["details"]["answers"].items():
            votes = [m["answers"][qid] for m in s["details"]["panel"]["models"].values()]
            if len(set(votes)) > 1:
                good = "no" if qid == "q4" else "yes"  # TaskCompletion's q4 asks whether the agent failed
                assert answer["answer"] != good and "no majority of the panel" in answer["reason"], (votes, answer)
    # The agreement figures leave the ties out rather than crediting them to the first-listed model.
    for summary in (first, second):
        panel = summary["judge"]["panel"]["metrics"]["TaskCompletion"]
        assert panel["tied"] == tied
        # Leave-one-out: each model against the other, i.e. the questions they did not tie on (not 1.0 any more).
        assert panel["agreement_with_panel"] == {m: round(1 - tied / panel["subjects"], 6) for m in MODELS}
