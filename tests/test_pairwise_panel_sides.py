"""A pairwise comparison judged by a panel: the panel's rules favour no position.

Two fair judges (simulators over real HTTP on 127.0.0.1, no position bias) with different seeds, so each has its own
view of which run is better and they disagree on some pairs. Neither prefers a position, so a comparison by the
panel of both must find no pair that flips with the order, whatever `judge.aggregate` says. It used to: the rules
made for scores lean on a tie — `majority`'s lower median of grades 1 and 3 (one judge for each run) is 1, the run
shown first, `all`'s lowest value the second, `any`'s highest the first — so a split panel read as position bias
(and a judge saying "equal" beside one preferring a run tipped one order only).

Each pair's verdict is computed by hand from the two judges' own verdicts, each judge compared alone first:
`majority` the run more judges prefer ("equal" pulling neither way; as many for each: a tie), `all` a run both
prefer, `any` a run one prefers and the other does not oppose; anything else a tie.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_compare_pairwise import N, make_run
from tracejudge.core.config import load_config
from tracejudge.stages.comparison.pairwise import compare_pairwise

RUBRIC = "Which run booked the flight the user asked for?"


def judged(tmp: Path, name: str, judge: dict[str, Any], a: Path, b: Path) -> Any:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"dataset": {"path": str(tmp / "a.jsonl")}, "metrics": [{"type": "TaskCompletion"}],
                                    "judge": {**judge, "pairwise": {"rubric": RUBRIC}},
                                    "cache": {"dir": str(tmp / f"cache-{name}")}, "run": {"dir": str(tmp / f"run-{name}")}}))
    return compare_pairwise(a, b, load_config(path, []), top=N)


def sides(res: Any) -> dict[str, str]:
    """Each case's verdict, "A", "B" or "=" (a tie), from a comparison with no flips."""
    assert res.pairs == N and res.not_judged == 0 and res.flipped == 0
    won = {d["case_id"]: d["winner"] for d in res.deciding}
    return {f"c{i}": won.get(f"c{i}", "=") for i in range(N)}


def expected(one: str, two: str, how: str) -> str:
    got = [s for s in (one, two) if s != "="]
    if how == "majority":
        return "=" if got.count("A") == got.count("B") else max(got, key=got.count)
    if how == "all":
        return one if one == two else "="
    return got[0] if got and len(set(got)) == 1 else "="  # any


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """(tmp, run A, run B, the two judges' URLs, each judge's own verdicts compared alone)."""
    from tracejudge.simulator.server import SimulatorThread
    from tracejudge.simulator.state import SimConfig

    tmp = tmp_path_factory.mktemp("pairwise-panel")
    a, b = make_run(tmp, "a", "alpha"), make_run(tmp, "b", "beta")
    sims = [SimulatorThread(SimConfig(seed=seed)) for seed in (11, 12)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PANEL_KEY", "k")
        try:
            urls = [s.url.rstrip("/") + "/v1" for s in sims]
            alone = [sides(judged(tmp, f"alone-{i}", {"provider": "openai", "model": "judge", "base_url": url, "api_key_env": "PANEL_KEY"},
                                  a, b)) for i, url in enumerate(urls)]
            yield tmp, a, b, urls, alone
        finally:
            for s in sims:
                s.stop()


@pytest.mark.parametrize("how", ["majority", "all", "any"])
def test_a_panel_of_two_fair_judges_shows_no_position_bias(setting: Any, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp, a, b, urls, alone = setting
    monkeypatch.setenv("PANEL_KEY", "k")
    split = sum(1 for c in alone[0] if {alone[0][c], alone[1][c]} == {"A", "B"})
    leaning = sum(1 for c in alone[0] if "=" in (alone[0][c], alone[1][c]) and alone[0][c] != alone[1][c])
    assert split >= 10 and leaning >= 3, (split, leaning)  # the judges do disagree: the test can tell the rules apart
    members = [{"model": f"openai:judge-{i}", "base_url": url} for i, url in enumerate(urls)]
    panel = judged(tmp, f"panel-{how}", {"provider": "openai", "model": "judge", "api_key_env": "PANEL_KEY", "models": members,
                                         "aggregate": how}, a, b)
    assert panel.position_bias_rate == 0.0
    assert sides(panel) == {c: expected(alone[0][c], alone[1][c], how) for c in alone[0]}
