"""The simulator's `noise` flips pairwise verdicts too (`tracejudge compare A --vs B --judge CONFIG`).

It used to apply to yes/no answers and rubric grades only, so a panel's members never disagreed on a pairwise
request and `judge.aggregate` could not be exercised with the simulator. A flipped grade is the mirror grade
(1 ↔ 3, 2 stays 2). Real comparisons against the simulator over HTTP on 127.0.0.1 (the style of
test_compare_pairwise.py), against figures computed by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from scipy.stats import binomtest
from test_compare_pairwise import N, make_run
from tracejudge.core.config import load_config
from tracejudge.stages.comparison.pairwise import compare_pairwise

RUBRIC = "Which run booked the flight the user asked for?"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    tmp = tmp_path_factory.mktemp("pairwise-noise")
    return tmp, make_run(tmp, "a", "alpha"), make_run(tmp, "b", "beta")


def compared(runs: tuple[Path, Path, Path], tmp: Path, name: str, **judge: Any) -> Any:
    data, a, b = runs
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"dataset": {"path": str(data / "a.jsonl")}, "metrics": [{"type": "TaskCompletion"}],
                                    "judge": {"provider": "simulator", "model": "gpt-4o-mini", "pairwise": {"rubric": RUBRIC}, **judge},
                                    "cache": {"dir": str(tmp / f"cache-{name}")}, "run": {"dir": str(tmp / f"run-{name}")}}))
    res = compare_pairwise(a, b, load_config(path, []), top=N)
    assert res.pairs == N and res.not_judged == 0
    return res


def test_one_judges_noise_flips_its_pairwise_grades(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    fair = compared(runs, tmp_path, "fair")
    q = 0.3
    noisy = compared(runs, tmp_path, "noisy", simulator={"noise": q})
    assert fair.flipped == 0 and noisy.flipped > 0
    # Each order is flipped alone with probability q: a decided pair flips (both orders name the same position) when
    # exactly one order is, 2q(1 − q); a tie (grade 2) is its own mirror and never flips.
    tie = 1 - 0.95 ** 2  # the simulator calls runs whose qualities (uniform) differ by < 0.05 equal
    assert binomtest(noisy.flipped, N, (1 - tie) * 2 * q * (1 - q)).pvalue > 0.01, noisy.flipped
    # Deterministic in the seed, the model, the request and its occurrence: a fresh cache gives the same verdicts.
    again = compared(runs, tmp_path, "noisy-again", simulator={"noise": q})
    assert (again.flipped, again.wins, again.losses, again.deciding) == (noisy.flipped, noisy.wins, noisy.losses, noisy.deciding)


@pytest.mark.parametrize("aggregate", ["majority", "all", "any", "mean"])
def test_panel_members_disagree_on_pairwise_requests(runs: tuple[Path, Path, Path], tmp_path: Path, aggregate: str) -> None:
    panel = ["simulator:a", "simulator:b"]
    agreeing = compared(runs, tmp_path, "agreeing", models=panel, aggregate=aggregate)
    assert agreeing.wins > 0 and agreeing.losses > 0  # two fair judges with one seed: the fair judge's verdicts
    # `a` flips every grade, `b` none: in each order one prefers what the other opposes, so no rule finds a winner.
    split = compared(runs, tmp_path, "split", models=panel, aggregate=aggregate, simulator={"noise": {"a": 1.0}})
    assert split.wins == split.losses == split.flipped == 0 and split.ties == N
