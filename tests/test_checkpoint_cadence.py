"""When checkpoint.json is rewritten (by result count and time together), and that a kill loses nothing results.jsonl holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tracejudge.core.records import CaseResult, Score
from tracejudge.engine import journal_checkpoint, store
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.stages.aggregate.fold import Aggregator
import _forkserver

CHILD = """
import sys, time
from tracejudge.core.records import CaseResult, Score
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.stages.aggregate.fold import Aggregator
j = RunJournal.open(sys.argv[1], metric_keys=["m"], new_aggregator=lambda: Aggregator(["m"]), config_hash="h", flush_every=8)
i = 0
while True:
    v = (i % 5) / 4
    j.record(CaseResult(case_id=f"c{i}", scores={"m": Score(value=v, passed=v >= 0.5)}))
    i += 1
    if i % 8 == 0:
        time.sleep(0.01)
"""


def _open(run_dir: Path) -> RunJournal:
    # Flushes by count only (every 10 results), whatever the machine's speed, so checkpoints fall on known lines.
    return RunJournal.open(run_dir, metric_keys=["m"], new_aggregator=lambda: Aggregator(["m"]), config_hash="h", flush_every=10,
                           flush_seconds=3600.0)


def _covered(run_dir: Path) -> int:
    return json.loads((run_dir / store.CHECKPOINT).read_text())["results_lines"]


def _record_and_watch(run_dir: Path, n: int) -> list[int]:
    j = _open(run_dir)
    seen = []
    for i in range(n):
        j.record(CaseResult(case_id=f"c{i}", scores={"m": Score(value=(i % 3) / 2)}))
        if (run_dir / store.CHECKPOINT).exists() and (not seen or seen[-1] != _covered(run_dir)):
            seen.append(_covered(run_dir))
    return seen


def test_checkpoints_follow_the_result_count_once_the_time_has_passed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_checkpoint, "CHECKPOINT_EVERY_S", 0.0)
    # The first flush records the segment; then one checkpoint per CHECKPOINT_EVERY_RESULTS results.
    assert _record_and_watch(tmp_path, 2500) == [10, 1010, 2010]


def test_the_count_alone_does_not_rewrite_the_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fast run: 2,500 results within the time bound give no checkpoint after the segment's first.
    monkeypatch.setattr(journal_checkpoint, "CHECKPOINT_EVERY_S", 3600.0)
    assert _record_and_watch(tmp_path, 2500) == [10]


def test_a_trickle_is_checkpointed_by_time_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_checkpoint, "CHECKPOINT_MAX_S", 0.0)
    assert _record_and_watch(tmp_path, 35) == [10, 20, 30]


def test_sigkill_between_checkpoints_loses_nothing_results_jsonl_holds(tmp_path: Path) -> None:
    proc = _forkserver.popen([sys.executable, "-c", CHILD, str(tmp_path)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            path = tmp_path / store.RESULTS
            if path.exists() and path.read_bytes().count(b"\n") >= 1500:
                break
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    lines = [ln for ln in (tmp_path / store.RESULTS).read_bytes().split(b"\n")[:-1]]
    assert len(lines) >= 1500
    covered = _covered(tmp_path)
    j = _open(tmp_path)
    assert j.finished == len(lines)  # every whole line standing in results.jsonl is finished work
    assert j.recovery["tail_results"] == len(lines) - covered and j.recovery["killed_segment"]
    refold = Aggregator(["m"])
    for line in lines:
        refold.fold(CaseResult.model_validate_json(line))
    assert j.agg.summary() == refold.summary()
    j.close("finished")
