"""`judge.samples` above 1 at temperature 0 is warned of: a deterministic server answers the same request the same way,
so the samples reported no flakiness (0 of 5 items at 0, 5 of 5 at 0.7 on one server) and the run paid for them."""

from __future__ import annotations

from pathlib import Path

from tracejudge.core.config import run_warnings, validate_config


def _notes(tmp_path: Path, judge: dict) -> list[str]:
    config = validate_config({"dataset": {"path": str(tmp_path / "c.jsonl"), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                              "judge": {"provider": "simulator", **judge}, "run": {"dir": str(tmp_path / "run")}}, check_files=False)
    return [n for n in run_warnings(config) if n.startswith("judge.samples")]


def test_samples_at_temperature_zero_are_warned_of(tmp_path: Path) -> None:
    [note] = _notes(tmp_path, {"samples": 3})
    assert "at judge.temperature 0 asks the same request 3 times" in note and "judge.temperature (e.g. 0.7)" in note
    assert _notes(tmp_path, {"samples": 3, "temperature": 0.7}) == [] and _notes(tmp_path, {"samples": 1}) == []
