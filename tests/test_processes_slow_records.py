"""Slow records with `processes: 2`: every worker computes part of a chunk (`executors.processes.PIECE_S`).

A chunk is up to 128 records; one of slow records (a custom metric taking a tenth of a second a case) kept one worker
busy for its whole length while the other idled, so a run of 40 such cases took as long with two workers as with one.
The run here is real (spawned workers, a metric that says which process scored it); the splitting's faults — a death in
a piece, a record every worker dies on, a stop — are driven through the executor with a stand-in for the worker trip.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from tracejudge.core.config import DatasetConfig
from tracejudge.engine.executors.base import ChunkLeft, CpuJob, ExecutorBroken, Extracted
from tracejudge.engine.executors.exits import WorkerDied
from tracejudge.engine.executors.pin import CULPRIT, budget_for
from tracejudge.engine.executors.processes import PIECE_S, ProcessExecutor
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
N = 40

METRIC = textwrap.dedent("""\
    import os, time
    from tracejudge import Metric, Score

    class Slow(Metric):
        def evaluate(self, case):
            time.sleep(0.05)
            return Score(value=1.0, passed=True, reason="slow", details={"pid": os.getpid()})
""")


def _run(root: Path, processes: int) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    (root / f"p{processes}.yaml").write_text(
        "dataset: {path: cases.jsonl}\nmetrics: [{type: 'slowmetric:Slow'}]\n"
        f"run: {{dir: out{processes}, processes: {processes}, executor: processes}}\n")
    proc = _forkserver.run([str(TRACEJUDGE), "run", f"p{processes}.yaml", "--no-progress"], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root)}, timeout=240)
    assert proc.returncode == 0, proc.stderr
    return proc, [json.loads(x) for x in (root / f"out{processes}" / "results.jsonl").read_text().splitlines()]


def test_a_slow_custom_metric_over_40_cases_is_computed_by_both_worker_processes(tmp_path: Path) -> None:
    (tmp_path / "slowmetric.py").write_text(METRIC)
    case = {"input": "x", "trace": {"steps": [], "output": "o"}}
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i:02d}", **case}) + "\n" for i in range(N)))
    _, two = _run(tmp_path, 2)
    _, one = _run(tmp_path, 1)
    pids = {r["scores"]["Slow"]["details"]["pid"] for r in two}
    assert len(pids) == 2, f"one worker computed all {N} cases: {pids}"
    # The same results, in the dataset's order, as computed in-process.
    assert [r["case_id"] for r in two] == [f"c{i:02d}" for i in range(N)] == [r["case_id"] for r in one]
    for a, b in zip(one, two, strict=True):
        assert a["status"] == b["status"] == "ok"
        assert {**a["scores"]["Slow"], "details": None} == {**b["scores"]["Slow"], "details": None}


# The splitting itself, with the worker trip (`ProcessExecutor._compute`) stood in for: a record is an int, its result
# an `Extracted` whose line is the record; a record in `doomed` kills the worker computing it.


def _executor(processes: int = 2) -> ProcessExecutor:
    job = CpuJob(format_name="native", dataset=DatasetConfig(path="cases.jsonl", format="native"), metric_specs=[], metrics=None,
                 merge=lambda m, s: m, score=True, keep_case=False)
    ex = ProcessExecutor(job, processes)
    ex.inline_left = 0  # every record to the (stand-in) workers
    return ex


class _Workers:
    def __init__(self, ex: ProcessExecutor, doomed: frozenset[int] | set[int] = frozenset(), kills: int = 0, together: int = 0) -> None:
        self.doomed, self.kills, self.together = doomed, kills, together
        self.calls: list[list[int]] = []
        self.deaths = 0
        self.busy = self.most = 0
        self.met = anyio.Event()
        ex._compute = self.compute  # type: ignore[method-assign]

    async def compute(self, records: list[int]) -> list[Extracted]:
        self.calls.append(list(records))
        self.busy += 1
        self.most = max(self.most, self.busy)
        try:
            if self.busy >= self.together:
                self.met.set()
            with anyio.fail_after(30):
                await self.met.wait()  # (`together` calls under way at once before any returns)
            await anyio.sleep(0)
            if self.kills or self.doomed.intersection(records):
                self.kills = max(0, self.kills - 1)
                self.deaths += 1
                raise anyio.BrokenWorkerProcess("the worker died") from WorkerDied("killed by signal SIGKILL (9)", 4242)
            return [Extracted("f", r) for r in records]
        finally:
            self.busy -= 1


def test_a_chunk_goes_to_the_workers_in_pieces_side_by_side_until_records_are_known_to_be_fast() -> None:
    async def main() -> None:
        ex = _executor()
        workers = _Workers(ex, together=2)
        assert ex._parts(N) == 2  # nothing known yet: one piece a worker
        out = await ex.map(list(range(N)))
        assert [x.line for x in out] == list(range(N))
        assert workers.most == 2 and sorted(map(len, workers.calls)) == [20, 20]
        assert ex.record_s is not None
        # The records' pace decides: a chunk expected to take less than PIECE_S is one trip, a longer one about one piece
        # per PIECE_S, never fewer than the workers nor more than its records.
        ex.record_s = PIECE_S / 1000
        assert ex._parts(128) == 1
        ex.record_s = PIECE_S / 100
        assert ex._parts(128) == 2
        ex.record_s = PIECE_S / 10
        assert ex._parts(128) == 13
        ex.record_s = PIECE_S * 4
        assert ex._parts(40) == 40 and ex._parts(1) == 1
        assert _executor(1)._parts(40) == 1

    anyio.run(main)


def test_a_worker_killed_under_a_piece_costs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        ex = _executor()
        workers = _Workers(ex, kills=1, together=2)
        with caplog.at_level(logging.WARNING, logger="tracejudge"):
            out = await ex.map(list(range(N)))
        assert [x.line for x in out] == list(range(N))
        assert workers.deaths == 1
        assert "tried once more in a fresh worker" in caplog.text

    anyio.run(main)


def test_the_records_workers_die_on_in_a_split_chunk_are_pinned_and_the_others_kept() -> None:
    async def main() -> None:
        ex = _executor()
        ex.record_s = PIECE_S / 2  # slow records: pieces of about two
        _Workers(ex, doomed={7, 30, 31})
        with pytest.raises(ExecutorBroken) as got:
            await ex.map(list(range(N)))
        results = got.value.results
        assert results is not None and len(results) == N
        lost = [i for i, x in enumerate(results) if isinstance(x, str)]
        assert lost == [7, 30, 31]
        assert all(results[i].startswith(CULPRIT) for i in lost)  # type: ignore[union-attr]
        assert [x.line for x in results if isinstance(x, Extracted)] == [i for i in range(N) if i not in lost]

    anyio.run(main)


def test_a_worker_dying_on_every_record_of_a_split_chunk_costs_what_an_unsplit_chunk_cost() -> None:
    async def main() -> None:
        ex = _executor()
        workers = _Workers(ex, doomed=set(range(N)), together=2)
        with pytest.raises(ExecutorBroken) as got:
            await ex.map(list(range(N)))
        assert got.value.results is not None and all(isinstance(x, str) for x in got.value.results)
        assert 2 <= workers.deaths <= 2 + budget_for(N), workers.calls

    anyio.run(main)


def test_a_death_while_the_run_stops_leaves_the_split_chunk_to_the_resume() -> None:
    async def main() -> None:
        ex = _executor()
        ex.stopping = anyio.Event()
        ex.stopping.set()  # the stop came first: no piece starts
        workers = _Workers(ex)
        with pytest.raises(ChunkLeft):
            await ex.map(list(range(N)))
        assert workers.calls == []
        ex.stopping = anyio.Event()
        workers = _Workers(ex, doomed={3})

        async def stop_then_die(records: list[int]) -> list[Extracted]:
            ex.stopping.set()  # type: ignore[union-attr]
            return await workers.compute(records)

        ex._compute = stop_then_die  # type: ignore[method-assign]
        with pytest.raises(ChunkLeft):
            await ex.map(list(range(N)))
        assert workers.deaths == 1  # not tried once more

    anyio.run(main)
