"""Quiet by default: a Ray run prints none of Ray's every-run notices, and Ray's actionable warnings still come through."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
import _forkserver

ray = pytest.importorskip("ray")
REPO = Path(__file__).resolve().parent.parent


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


def test_ray_notices_are_dropped_and_its_warnings_kept() -> None:
    from tracejudge.engine.executors.ray_executor import RAY_NOISE, quiet_ray

    quiet_ray()
    quiet_ray()  # idempotent: one filter per logger
    keep = _Keep()
    loggers = [logging.getLogger(name) for name in RAY_NOISE]  # Ray's loggers do not propagate: listen on them
    for logger in loggers:
        logger.addHandler(keep)
    try:
        for logger, notice in zip(loggers, RAY_NOISE.values()):
            logger.warning(notice + ".")
        loggers[1].warning("Token authentication is disabled for this Ray cluster. Anyone with network access ...")
    finally:
        for logger in loggers:
            logger.removeHandler(keep)
    assert [m[:46] for m in keep.seen] == ["Token authentication is disabled for this Ray "]


def test_a_ray_run_prints_no_ray_notice(tmp_path: Path) -> None:
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(REPO / "configs" / "demo.yaml"), "--set", "run.executor=ray",
                           "--set", "dataset.limit=4", "--set", f"run.dir={tmp_path / 'run'}", "--set", f"cache.dir={tmp_path / 'cache'}",
                           "--no-progress"], capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert "verdict:" in proc.stdout
    for notice in ("SIGTERM handler is not set", "Token authentication is enabled"):
        assert notice not in proc.stderr, proc.stderr
