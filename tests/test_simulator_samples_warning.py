"""`judge.samples` at temperature 0 is not warned of for the simulator with noise: its samples do differ.

The warning (a deterministic server answers the same request alike, so the samples say nothing) used to be given
for the simulator too, in a run whose samples disagreed at the configured rate. It stays for any judge that would
answer alike: a real server, the simulator without noise, or a panel member whose noise is 0. A real run against
the simulator over HTTP on 127.0.0.1 (the style of test_judge_samples_panel.py), and `run_warnings` on configs.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from test_judge_samples_panel import run, write_cases
from tracejudge.core.config import run_warnings, validate_config


def sample_notes(tmp_path: Path, judge: dict[str, Any]) -> list[str]:
    config = validate_config({"dataset": {"path": str(tmp_path / "c.jsonl")}, "metrics": [{"type": "TaskCompletion"}],
                              "judge": {"samples": 3, **judge}, "run": {"dir": str(tmp_path / "run")}}, check_files=False)
    return [n for n in run_warnings(config) if n.startswith("judge.samples")]


def test_a_noisy_simulators_samples_differ_and_are_not_warned_of(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 30)
    with caplog.at_level(logging.WARNING, logger="tracejudge"):
        summary, _ = run(tmp_path, cases, "sampled", samples=3, sim={"noise": 0.33})
    assert summary["judge"]["samples"] and all(b["flip_rate"] > 0 for b in summary["judge"]["samples"].values())
    assert not [r.getMessage() for r in caplog.records if "deterministic" in r.getMessage()]
    # Without noise the same run's samples all agree: the warning holds there.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tracejudge"):
        summary, _ = run(tmp_path, cases, "alike", samples=3)
    assert all(b["flip_rate"] == 0 for b in summary["judge"]["samples"].values())
    assert [r for r in caplog.records if "a deterministic server answers it the same way" in r.getMessage()]


def test_the_warning_holds_wherever_a_judge_would_answer_alike(tmp_path: Path) -> None:
    assert sample_notes(tmp_path, {"provider": "simulator", "simulator": {"noise": 0.33}}) == []
    assert sample_notes(tmp_path, {"provider": "simulator", "simulator": {"noise": {"gpt-4o-mini": 0.33}}}) == []
    panel = {"provider": "simulator", "models": ["simulator:a", "simulator:b"]}
    assert sample_notes(tmp_path, {**panel, "simulator": {"noise": {"simulator:a": 0.2, "b": 0.1}}}) == []
    assert sample_notes(tmp_path, {**panel, "simulator": {"noise": {"*": 0.2}}}) == []
    # Each of these has a judge that answers a repeated request alike.
    for judge in ({"provider": "simulator"}, {"provider": "simulator", "simulator": {"noise": {"gpt-4o-mini": 0.0, "*": 0.3}}},
                  {**panel, "simulator": {"noise": {"a": 0.2}}},
                  {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9", "api_key_env": None, "simulator": {"noise": 0.3}},
                  {**panel, "models": ["simulator:a", "openai:b"], "simulator": {"noise": 0.3}}):
        [note] = sample_notes(tmp_path, judge)
        assert "a deterministic server answers it the same way" in note, judge
