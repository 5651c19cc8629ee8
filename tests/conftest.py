"""Shared fixtures: where the real recorded traces live; `tests/` on sys.path so `helpers` imports."""

from __future__ import annotations

import sys
"""Shared fixtures: where the real recorded traces live, and small case builders."""


from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent))
pytest_plugins = ["pytester"]  # runs pytest inside tests to check the tracejudge plugin's output



@pytest.fixture(scope="session")
def data_dir() -> Path:
    """`../shared/data` seen from the repository root (the real traces; see its README)."""
    if not DATA.is_dir():
        pytest.fail(f"the shared trace data is missing: expected it at {DATA}")
    return DATA


@pytest.fixture(scope="session")
def tau_paths(data_dir: Path) -> tuple[Path, Path]:
    """(trajectory file, tasks file) of τ-bench's GPT-4o airline runs."""
    tau = data_dir / "tau_bench"
    return tau / "historical_trajectories" / "gpt-4o-airline.json", tau / "tasks" / "tasks_airline_test.json"
