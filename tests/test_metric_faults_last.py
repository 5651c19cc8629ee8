"""The last ways a custom metric could take the run down with it, or have its details written wrong.

- any `BaseException` a metric raises (a class of its own deriving from it, a `GeneratorExit`, a group of them) is a
  metric that raised, as `SystemExit` is, in the main process and in worker processes, sync and async: it ended the
  run with an internal error (exit 3); so is a `CancelledError` that is not the run's own cancellation (one a sync
  metric raised, or that of a future an async one awaited): the run ended with no results, "the dataset is empty";
  a stop while an async metric is awaited still stops the run;
- a NaN or infinite number in a metric's details is written as `"NaN"` / `"Infinity"` / `"-Infinity"`: JSON has no
  such number, and it was written as `null`, a value the metric never gave;
- `os._exit()` in a metric cannot be caught: in a worker process the case is a `worker_error` that fails the gate and
  is retried by the same command; in the main process the run ends with the metric's status and no verdict, and
  `report` says INTERRUPTED (exit 130), never PASS (README, custom metrics).

Real runs of a real metric file.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _metric_runs import IDS, write_metric_run
from _metric_runs import results as _results
from _metric_runs import tj as _tj
import _forkserver

CHECKS = '''\
import asyncio, math, os
import pydantic
import tracejudge as tj


class Stop(BaseException):
    pass


class Stats(pydantic.BaseModel):
    ratio: float


def _bad(case):
    return case.id.startswith("bad")


@tj.metric
def own_base(case, trace):
    if _bad(case):
        raise Stop("the metric's own")
    return 1.0


@tj.metric
def closes(case, trace):
    if _bad(case):
        raise GeneratorExit("closed")
    return 1.0


@tj.metric
def grouped(case, trace):
    if _bad(case):
        raise BaseExceptionGroup("several", [Stop("first"), GeneratorExit("second")])
    return 1.0


@tj.metric
def cancels(case, trace):
    if _bad(case):
        raise asyncio.CancelledError("raised by the metric")
    return 1.0


@tj.metric
async def acancels(case, trace):
    if _bad(case):
        future = asyncio.get_running_loop().create_future()
        future.cancel()  # (as something else the metric awaits can be cancelled under it)
        await future
    return 1.0


@tj.metric
async def waits(case, trace):
    if _bad(case):
        open("waiting", "w").close()
        await asyncio.sleep(60)
    return 1.0


@tj.metric
async def aown_base(case, trace):
    await asyncio.sleep(0)
    if _bad(case):
        raise Stop("async")
    return 1.0


SHARED = {"ratio": float("nan")}


@tj.metric
def odd_numbers(case, trace):
    if _bad(case):
        details = {"ratio": float("nan"), "spread": [float("inf"), -float("inf"), 0.5], "shared": SHARED,
                   "model": Stats(ratio=float("inf")), "tags": {"x"}}
        return tj.Score(value=0.75, reason="computed", details=details)
    # (what the metric keeps must stay as it was: it is not the result's to change)
    assert math.isnan(SHARED["ratio"])
    return tj.Score(value=1.0, reason="computed", details={"ratio": 0.25})


@tj.metric
def hard_exit(case, trace):
    if _bad(case):
        os._exit(0)
    return 1.0
'''



def _run(tmp_path: Path, metrics: list[str], processes: int) -> tuple[subprocess.CompletedProcess, Path]:
    _write(tmp_path, metrics, processes)
    return _tj(tmp_path, "run", "eval.yaml", "--no-progress"), tmp_path / "runs" / "eval"


def _write(tmp_path: Path, metrics: list[str], processes: int) -> None:
    write_metric_run(tmp_path, CHECKS, metrics, processes)


@pytest.mark.parametrize(("processes", "metrics"), [
    (1, ["own_base", "closes", "grouped", "cancels", "aown_base", "acancels"]),  # (async: all scored in the main process)
    (2, ["own_base", "closes", "grouped", "cancels"]),  # (sync only: the worker processes score them)
])
def test_a_base_exception_a_metric_raises_is_a_metric_that_raised(tmp_path: Path, processes: int, metrics: list[str]) -> None:
    proc, run_dir = _run(tmp_path, metrics, processes)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the gate's FAIL, not an internal error (3)
    assert "internal error" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "verdict: FAIL" in proc.stdout
    results = _results(run_dir)
    assert sorted(results) == sorted(IDS)
    assert {r["status"] for r in results.values()} == {"ok"}  # the metric's failure, not the case's
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in metrics:
        assert summary["metrics"][key].get("raised") == 2, (key, summary["metrics"][key])
        assert f"FAIL {key} max_metric_error_share" in proc.stdout, key
        assert results["ok-2"]["scores"][key]["value"] == 1.0
    bad = results["bad-1"]["scores"]
    assert bad["ToolCalls"]["value"] == 1.0
    assert bad["own_base"]["reason"].startswith("metric raised Stop: the metric's own (at "), bad["own_base"]
    assert bad["own_base"]["details"] == {"exception": "Stop"}
    assert bad["closes"]["reason"].startswith("metric raised GeneratorExit: closed (at "), bad["closes"]
    assert bad["grouped"]["reason"].startswith("metric raised Stop: first; GeneratorExit: second (at "), bad["grouped"]
    # A `CancelledError` the metric raised (the run's task group took it for a cancellation: no results, "the
    # dataset is empty"), or one of something it awaited that was cancelled under it.
    assert bad["cancels"]["reason"].startswith("metric raised CancelledError: raised by the metric (at "), bad["cancels"]
    if "aown_base" in metrics:
        assert bad["aown_base"]["reason"].startswith("metric raised Stop: async (at "), bad["aown_base"]
        assert bad["acancels"]["reason"].startswith("metric raised CancelledError"), bad["acancels"]


def test_a_stop_while_an_async_metric_is_awaited_is_still_a_stop(tmp_path: Path) -> None:
    # The run's own cancellation of an awaited metric is no metric failure: the run stops as interrupted.
    _write(tmp_path, ["waits"], 1)
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", "eval.yaml", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "waiting").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (tmp_path / "waiting").exists() and proc.returncode == 130, out + err
    assert "metric raised" not in out + err and "verdict: INTERRUPTED" in out, out + err


@pytest.mark.parametrize("processes", [1, 2])
def test_nan_and_infinity_in_details_are_written_as_what_they_are(tmp_path: Path, processes: int) -> None:
    proc, run_dir = _run(tmp_path, ["odd_numbers"], processes)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdict: PASS" in proc.stdout
    lines = (run_dir / "results.jsonl").read_text()
    assert "NaN" in lines and "Infinity" in lines
    results = _results(run_dir)
    bad = results["bad-1"]["scores"]["odd_numbers"]
    assert bad["value"] == 0.75 and bad["passed"] is False and bad["reason"] == "computed"  # the score is as given
    assert bad["details"] == {"ratio": "NaN", "spread": ["Infinity", "-Infinity", 0.5], "shared": {"ratio": "NaN"},
                              "model": {"ratio": "Infinity"}, "tags": ["x"]}
    assert results["ok-0"]["scores"]["odd_numbers"]["details"] == {"ratio": 0.25}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert not summary["metrics"]["odd_numbers"].get("raised")
    assert math.isclose(summary["metrics"]["odd_numbers"]["mean"], 0.875)
    # Read back as written: the report rebuilt from results.jsonl says the same.
    again = _tj(tmp_path, "report", "runs/eval")
    assert again.returncode == 0 and "verdict: PASS" in again.stdout, again.stdout + again.stderr


def test_os_exit_in_a_worker_is_a_worker_error_that_fails_and_is_retried(tmp_path: Path) -> None:
    proc, run_dir = _run(tmp_path, ["hard_exit"], 2)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "verdict: FAIL" in proc.stdout and "FAIL worker errors: 2 of 4 results" in proc.stdout, proc.stdout
    results = _results(run_dir)
    for cid in ("bad-1", "bad-3"):
        assert results[cid]["error"]["kind"] == "worker_error", results[cid]
        assert results[cid]["error"]["message"] == "the worker process died while scoring this case: exit code 0"
    assert results["ok-0"]["status"] == "ok" and results["ok-0"]["scores"]["hard_exit"]["value"] == 1.0
    # The same command retries the two (and fails the same way); `report` on the directory says FAIL too.
    again = _tj(tmp_path, "run", "eval.yaml", "--no-progress")
    assert again.returncode == 1 and "2 retried after the worker process scoring them died" in again.stdout, again.stdout
    report = _tj(tmp_path, "report", "runs/eval")
    assert report.returncode == 1 and "verdict: FAIL" in report.stdout, report.stdout + report.stderr


def test_os_exit_in_the_main_process_never_reads_as_a_pass(tmp_path: Path) -> None:
    proc, run_dir = _run(tmp_path, ["hard_exit"], 1)
    # Nothing in the process can catch `os._exit`: the run ends with the metric's status, and says nothing (README).
    assert proc.returncode == 0 and "verdict" not in proc.stdout, proc.stdout + proc.stderr
    assert not (run_dir / "summary.json").exists()
    for _ in range(2):  # `report` on what it left, then again once the same command stopped the same way
        report = _tj(tmp_path, "report", "runs/eval")
        assert report.returncode == 130, report.stdout + report.stderr
        assert "verdict: INTERRUPTED" in report.stdout and "PASS" not in report.stdout, report.stdout
        assert json.loads((run_dir / "summary.json").read_text())["complete"] is False
        rerun = _tj(tmp_path, "run", "eval.yaml", "--no-progress")
        assert rerun.returncode == 0 and "verdict" not in rerun.stdout, rerun.stdout + rerun.stderr
