"""A metric that cancels its own task, or gives no `Score` at all, costs its score, never the run.

- an async custom metric calling `asyncio.current_task().cancel()` was taken for the run's cancellation
  (`Task.cancelling()`): its task ended cancelled, the case was written with `null` for its score, and the run (and
  every resume) ended with an internal error (exit 3). It is the metric's failure (`metric raised CancelledError`); a
  stop (SIGINT, SIGTERM) while an async metric is awaited still stops the run (130, INTERRUPTED);
- a sync one (a function, a metric class's `evaluate`) doing the same returns normally, its cancellation pending: the
  run ended saying the dataset was empty (no results), and beside an async metric the cases were written `ok` with no
  scores at all, which the resume took as finished. The same failure of that metric alone;
- a metric class whose `evaluate` / `aevaluate` returns None or a dict (not a `Score`) ended the run the same way:
  `metric failed: … returned NoneType, not a Score`;
- the journal never writes a result holding what is not a `Score`, nor one of status ok missing a metric of the run
  (the last guard before the file);
- outside the score stage a caller's own cancellation of `aevaluate` (`asyncio.timeout`) stays the caller's, and so
  does a cancellation of the task scoring sync metrics that the metric did not make.

Real runs of a real metric file.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _metric_runs import IDS, write_metric_run
from _metric_runs import results as _results
from _metric_runs import tj as _tj
import tracejudge as tj
from tracejudge.core.records import Case, CaseResult, Score
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.stages.aggregate.fold import Aggregator
from tracejudge.stages.score import ascore_case
import _forkserver

CHECKS = '''\
import asyncio
import tracejudge as tj


def _bad(case):
    return case.id.startswith("bad")


@tj.metric
async def self_cancel(case, trace):
    if _bad(case):
        asyncio.current_task().cancel()
        await asyncio.sleep(0)
    return 1.0


@tj.metric
async def cancels_twice(case, trace):
    await asyncio.sleep(0)
    if _bad(case):
        asyncio.current_task().cancel()
        asyncio.current_task().cancel()
        await asyncio.sleep(0)
    return 1.0


@tj.metric
def sync_cancel(case, trace):
    if _bad(case):
        asyncio.current_task().cancel()
    return 1.0


class SyncCancel(tj.Metric):
    def evaluate(self, case):
        if case.id.startswith("bad"):
            asyncio.current_task().cancel()
            asyncio.current_task().cancel()
        return tj.Score(value=1.0, passed=True, reason="fine")


class NoScore(tj.Metric):
    def evaluate(self, case):
        return None if case.id.startswith("bad") else tj.Score(value=1.0, passed=True, reason="fine")


class ANoScore(tj.Metric):
    def evaluate(self, case):
        return tj.Score(value=1.0, passed=True, reason="fine")

    async def aevaluate(self, case):
        return {"value": 1.0} if case.id.startswith("bad") else tj.Score(value=1.0, passed=True, reason="fine")


@tj.metric
async def waits(case, trace):
    if _bad(case):
        open("waiting", "w").close()
        await asyncio.sleep(60)
    return 1.0
'''



def _write(tmp_path: Path, metrics: list[str], processes: int) -> None:
    write_metric_run(tmp_path, CHECKS, metrics, processes)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_metric_that_cancels_its_own_task_is_a_metric_that_raised(tmp_path: Path, processes: int) -> None:
    metrics = ["self_cancel", "cancels_twice", "sync_cancel", "SyncCancel", "NoScore", "ANoScore"]
    _write(tmp_path, metrics, processes)
    for attempt in range(2):  # the run, then the same command again (a resume: nothing left to do)
        proc = _tj(tmp_path, "run", "eval.yaml", "--no-progress")
        out = proc.stdout + proc.stderr
        assert proc.returncode == 1, out  # the gate's FAIL, not an internal error (3)
        assert "internal error" not in out and "Traceback" not in proc.stderr, out
        assert "verdict: FAIL" in proc.stdout, out
    run_dir = tmp_path / "runs" / "eval"
    assert not (run_dir / "crash.log").exists()
    results = _results(run_dir)
    assert sorted(results) == sorted(IDS) and {r["status"] for r in results.values()} == {"ok"}
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in metrics:
        assert summary["metrics"][key].get("raised") == 2, (key, summary["metrics"][key])
        assert results["ok-2"]["scores"][key]["value"] == 1.0
    for cid in ("bad-1", "bad-3"):
        bad = results[cid]["scores"]
        assert bad["ToolCalls"]["value"] == 1.0  # the case's other scores stand
        for key in ("self_cancel", "cancels_twice", "sync_cancel", "SyncCancel"):
            assert bad[key]["value"] is None and bad[key]["reason"].startswith("metric raised CancelledError"), bad[key]
            assert bad[key]["details"] == {"exception": "CancelledError"}
        assert bad["NoScore"]["reason"] == "metric failed: metric NoScore returned NoneType, not a Score", bad["NoScore"]
        assert bad["ANoScore"]["reason"] == "metric failed: metric ANoScore returned dict, not a Score", bad["ANoScore"]


def test_a_sync_metric_that_cancels_its_own_task_alone_is_a_metric_that_raised(tmp_path: Path) -> None:
    # No async metric: the cases are scored by `score_case` on the loop, one after another (`CpuJob.arun`).
    metrics = ["sync_cancel", "SyncCancel"]
    _write(tmp_path, metrics, 1)
    for attempt in range(2):  # the run, then a resume with nothing left to do
        proc = _tj(tmp_path, "run", "eval.yaml", "--no-progress")
        out = proc.stdout + proc.stderr
        assert proc.returncode == 1 and "verdict: FAIL" in proc.stdout, out
        assert "internal error" not in out and "Traceback" not in proc.stderr and "dataset is empty" not in out, out
        assert f"({4 - 4 * attempt} new results, {4 * attempt} already finished)" in proc.stdout, out
    run_dir = tmp_path / "runs" / "eval"
    results = _results(run_dir)
    assert sorted(results) == sorted(IDS) and {r["status"] for r in results.values()} == {"ok"}
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in metrics:
        assert summary["metrics"][key].get("raised") == 2, (key, summary["metrics"][key])
        for cid in IDS:
            score = results[cid]["scores"][key]
            if cid.startswith("bad"):
                assert score["value"] is None and score["reason"].startswith("metric raised CancelledError"), score
                assert score["details"] == {"exception": "CancelledError"}
            else:
                assert score["value"] == 1.0
            assert results[cid]["scores"]["ToolCalls"]["value"] == 1.0


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_while_an_async_metric_is_awaited_still_stops_the_run(tmp_path: Path, stop: signal.Signals) -> None:
    _write(tmp_path, ["self_cancel", "waits"], 1)
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", "eval.yaml", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "waiting").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (tmp_path / "waiting").exists() and proc.returncode == 130, out + err
    assert "verdict: INTERRUPTED" in out and "internal error" not in out + err, out + err
    for result in _results(tmp_path / "runs" / "eval").values():  # what was written before the stop: no `waits` stopped
        assert "waits" not in result["scores"] or result["scores"]["waits"]["value"] == 1.0, result


def test_the_journal_never_writes_what_is_not_a_score(tmp_path: Path) -> None:
    journal = RunJournal.open(tmp_path, metric_keys=["m", "n"], new_aggregator=lambda: Aggregator(["m", "n"]),
                              config_hash="h", flush_every=10)
    try:
        result = CaseResult(case_id="c0", scores={"m": Score(value=1.0, passed=True)})
        result.scores["n"] = None  # type: ignore[assignment]  # (as a metric that ended without a score left it)
        assert journal.record(result)
        assert journal.agg.summary()["metrics"]["n"]["raised"] == 1
    finally:
        journal.close("finished")
    line = json.loads((tmp_path / "results.jsonl").read_text())
    assert line["scores"]["m"]["value"] == 1.0
    assert line["scores"]["n"] == {"value": None, "passed": None, "reason": "metric failed: metric n gave no score "
                                   "(NoneType)", "details": None, "judge": None}


def test_the_journal_never_writes_an_ok_result_missing_a_metric(tmp_path: Path) -> None:
    # (As a case whose scores were lost on the way was written: `ok`, no scores, taken by a resume as finished.)
    journal = RunJournal.open(tmp_path, metric_keys=["m", "n"], new_aggregator=lambda: Aggregator(["m", "n"]),
                              config_hash="h", flush_every=10)
    try:
        assert journal.record(CaseResult(case_id="c0", scores={"m": Score(value=1.0, passed=True)}))
        assert journal.record(CaseResult(case_id="c1", scores={}))
        assert journal.record(CaseResult(case_id="c2", status="invalid_input"))  # (no scores: as it should be)
        summary = journal.agg.summary()["metrics"]
        assert summary["m"]["raised"] == 1 and summary["n"]["raised"] == 2
    finally:
        journal.close("finished")
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert lines[0]["scores"]["m"]["value"] == 1.0 and list(lines[1]["scores"]) == ["m", "n"]
    for line in lines[:2]:
        assert line["scores"]["n"]["reason"] == "metric failed: metric n gave no score (none was recorded for the case)"
    assert lines[2]["scores"] == {}


def test_ascore_case_takes_a_sync_metrics_own_cancellation_and_no_other() -> None:
    # (The score stage after a target scores with `ascore_case`: the run ended with an internal error, exit 3.)
    @tj.metric
    def sync_cancel(case, trace):
        asyncio.current_task().cancel()
        return 1.0

    case = Case.model_validate({"id": "c", "trace": {"steps": [], "output": "x"}})

    async def main() -> tuple[dict[str, Score], int]:
        scores = await ascore_case(case, [sync_cancel()])
        await asyncio.sleep(0)  # nothing left pending: the metric's cancellation was taken
        return scores, asyncio.current_task().cancelling()  # type: ignore[union-attr]

    scores, cancelling = asyncio.run(main())
    assert cancelling == 0 and scores["sync_cancel"].reason.startswith("metric raised CancelledError"), scores
    assert scores["sync_cancel"].details == {"exception": "CancelledError"}

    async def cancelled_before() -> None:
        asyncio.current_task().cancel()  # type: ignore[union-attr]  # (the caller's own, pending: not the metric's)
        await ascore_case(case, [sync_cancel()])

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled_before())


def test_a_callers_own_timeout_around_aevaluate_stays_the_callers() -> None:
    @tj.metric
    async def slow(case, trace):
        await asyncio.sleep(10)
        return 1.0

    case = Case.model_validate({"id": "c", "trace": {"steps": [], "output": "x"}})

    async def main() -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await slow().aevaluate(case)

    asyncio.run(main())
