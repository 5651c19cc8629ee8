"""A simulator run with another seed is not served the verdicts of the first from the cache.

Every simulated verdict is a hash of the seed, so the seed is part of the simulator's name in cache keys
(`simulator_cache_name`); seed 0 without flaws keeps the plain name `simulator` its keys always had.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from test_judge_samples_panel import write_cases
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.stages.judge.panel import simulator_cache_name


def _run(tmp: Path, cases: Path, name: str, seed: int, cache: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    cfg = {"dataset": {"path": str(cases)}, "metrics": [{"type": "TaskCompletion"}, {"type": "Rubric", "criteria": "Was it done?", "scale": [1, 5]}],
           "judge": {"provider": "simulator", "simulator": {"seed": seed}}, "cache": {"dir": str(cache)}, "run": {"dir": str(tmp / name)}}
    summary = anyio.run(lambda: runner.run(validate_config(cfg))).summary
    rows = [json.loads(line) for line in (tmp / name / "results.jsonl").read_text().splitlines()]
    return summary, {r["case_id"]: {k: s["value"] for k, s in r["scores"].items()} for r in rows}


def test_another_seed_misses_the_cache_and_gets_its_own_verdicts(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 8)
    _, zero = _run(tmp_path, cases, "zero", 0, tmp_path / "shared")
    _, fresh = _run(tmp_path, cases, "fresh", 5, tmp_path / "own")
    assert fresh != zero  # the seed changes the simulated verdicts
    summary, five = _run(tmp_path, cases, "five", 5, tmp_path / "shared")
    assert summary["judge"]["cache_hits"] == 0 and five == fresh
    summary, again = _run(tmp_path, cases, "again", 5, tmp_path / "shared")
    assert summary["judge"]["requests"] == 0 and again == fresh


def test_seed_zero_without_flaws_keeps_its_name() -> None:
    class Options:
        agreement, noise, position_bias, seed = 1.0, 0.0, 0.0, 0

    assert simulator_cache_name(Options()) == "simulator"
    Options.seed = 7
    assert simulator_cache_name(Options()) == "simulator?seed=7"
    Options.noise = 0.2
    assert simulator_cache_name(Options()) == "simulator?agreement=1.0,noise=0.2,noise_rule=2,position_bias=0.0,seed=7"
