"""Shared fixtures: the judge simulator on a free loopback port, paths to the real data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline.simulator import SimConfig, SimulatorThread

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def simulator() -> Iterator[Callable[..., SimulatorThread]]:
    """A factory: `simulator(rpm=..., script=[...])` starts a simulator over real HTTP on 127.0.0.1.

    Every simulator started is stopped when the test ends.
    """
    started: list[SimulatorThread] = []

    def start(**options) -> SimulatorThread:
        sim = SimulatorThread(SimConfig(**options))
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.stop()
