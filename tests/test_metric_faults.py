"""A metric's own failures are the metric's, counted as `raised` by the gate's `max_metric_error_share`.

- `sys.exit()` in a metric (or a library it calls: argparse's `parse_args()` failing) is a metric that raised
  `SystemExit`, never the run's exit, in the head and in worker processes, sync and async;
- a `KeyboardInterrupt` raised in a worker process (which ignores SIGINT: no Ctrl-C reaches it) is the metric's too;
  in the head it cannot be told from a Ctrl-C and stops the run as one;
- a value of the wrong type, a number outside [0, 1] or NaN, details that JSON (or pickle) cannot carry: the metric
  failed (`metric failed: …`), the case stays `ok` with its other scores; returning None stays "not computed";
- pass@k counts a trial whose metric raised as a failed trial, not as one left out.

Real runs of a real metric file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import _forkserver

CHECKS = '''\
import asyncio, sys, threading
import tracejudge as tj


class Weird:
    pass


def _bad(case):
    return case.id.startswith("bad")


@tj.metric
def quits(case, trace):
    if _bad(case):
        sys.exit(0)
    return 1.0


@tj.metric
def quits3(case, trace):
    if _bad(case):
        sys.exit(3)
    return 1.0


@tj.metric
async def aquits(case, trace):
    await asyncio.sleep(0)
    if _bad(case):
        raise SystemExit(2)
    return 1.0


@tj.metric
def interrupts(case, trace):
    if _bad(case):
        raise KeyboardInterrupt("raised by the metric")
    return 1.0


@tj.metric
def weird(case, trace):
    if _bad(case):
        return tj.Score(value=1.0, reason="ok", details={"s": {1, 2}, "o": Weird()})
    return tj.Score(value=1.0, reason="ok", details={"s": {1, 2}})


@tj.metric
def locked(case, trace):
    if _bad(case):
        return tj.Score(value=1.0, reason="ok", details={"o": threading.Lock()})
    return 1.0


@tj.metric
def wrong_type(case, trace):
    return "yes" if _bad(case) else 1.0


@tj.metric
def too_big(case, trace):
    return 1.5 if _bad(case) else 1.0


@tj.metric
def nan_score(case, trace):
    return tj.Score(value=float("nan")) if _bad(case) else 1.0


@tj.metric
def cannot_say(case, trace):
    return None if _bad(case) else 1.0


@tj.metric
def divides(case, trace):
    return 1 / 0 if _bad(case) else 1.0
'''

IDS = ["ok-0", "bad-1", "ok-2", "bad-3"]
FAULTS = ["quits", "quits3", "aquits", "weird", "locked", "wrong_type", "too_big", "nan_score"]


def _run(tmp_path: Path, metrics: list[str], run: str, extra: str = "", more: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess, Path]:
    (tmp_path / "checks.py").write_text(CHECKS)
    case = {"trace": {"steps": [{"tool_calls": [{"name": "t", "arguments": {"a": 1}}]}], "output": "ok"},
            "expected_tool_calls": [{"name": "t", "arguments": {"a": 1}}]}
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"id": i, **case}) + "\n" for i in IDS))
    specs = ", ".join(["{type: ToolCalls}", *(f'{{type: "checks:{m}"}}' for m in metrics), *more])
    (tmp_path / "eval.yaml").write_text(f"dataset: {{path: data.jsonl, format: native}}\nmetrics: [{specs}]\n"
                                        f"run: {{dir: runs/eval, {run}}}\n{extra}")
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "eval.yaml", "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    return proc, tmp_path / "runs" / "eval"


def _results(run_dir: Path) -> dict[str, dict]:
    return {r["case_id"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}


@pytest.mark.parametrize("processes", [1, 2])
def test_a_metric_that_exits_or_returns_garbage_is_a_metric_that_raised(tmp_path: Path, processes: int) -> None:
    metrics = FAULTS + ["cannot_say"]
    proc, run_dir = _run(tmp_path, metrics, f"processes: {processes}")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the gate's FAIL, not the metric's exit status
    assert "unhandled exception" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "verdict: FAIL" in proc.stdout
    results = _results(run_dir)
    assert sorted(results) == sorted(IDS)
    assert {r["status"] for r in results.values()} == {"ok"}  # the metric's failure, not the case's
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in [m for m in metrics if m != "cannot_say"]:
        assert summary["metrics"][key].get("raised") == 2, (key, summary["metrics"][key])
        assert f"FAIL {key} max_metric_error_share" in proc.stdout, key
        assert results["ok-0"]["scores"][key]["value"] == 1.0
    assert not summary["metrics"]["cannot_say"].get("raised")  # None: the case cannot be scored, no bug
    assert "FAIL cannot_say" not in proc.stdout
    bad = results["bad-1"]["scores"]
    assert bad["ToolCalls"]["value"] == 1.0
    assert bad["quits"]["reason"].startswith("metric raised SystemExit: 0 (at "), bad["quits"]
    assert bad["quits3"]["reason"].startswith("metric raised SystemExit: 3 (at ")
    assert bad["aquits"]["reason"].startswith("metric raised SystemExit: 2 (at ")
    assert bad["weird"]["reason"] == "metric failed: metric weird returned details that cannot be written as JSON: <class 'checks.Weird'>"
    assert bad["locked"]["reason"].startswith("metric failed: metric locked returned details that cannot be written as JSON: ")
    assert results["ok-0"]["scores"]["weird"]["details"] == {"s": [1, 2]}  # details JSON carries, as written before
    assert bad["wrong_type"]["reason"] == "metric failed: metric function wrong_type returned str; expected a float, bool, Score or None"
    assert bad["too_big"]["reason"] == "metric failed: metric function too_big returned 1.5, outside [0, 1]"
    assert bad["nan_score"]["reason"] == "metric failed: metric nan_score returned a Score with value nan, outside [0, 1]"
    assert bad["cannot_say"]["reason"] == "not computed: metric function cannot_say returned None"


def test_a_keyboard_interrupt_in_a_worker_process_is_the_metrics(tmp_path: Path) -> None:
    # A worker process ignores SIGINT (no Ctrl-C reaches it): a KeyboardInterrupt there can only be the metric's.
    # (Sync metrics only: a run with an async metric awaits it in the head.)
    proc, run_dir = _run(tmp_path, ["interrupts", "quits"], "processes: 2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metrics"]["interrupts"]["raised"] == 2 and summary["metrics"]["quits"]["raised"] == 2
    reason = _results(run_dir)["bad-3"]["scores"]["interrupts"]["reason"]
    assert reason.startswith("metric raised KeyboardInterrupt: raised by the metric (at "), reason


def test_a_keyboard_interrupt_in_the_head_still_stops_the_run(tmp_path: Path) -> None:
    # In the process the terminal's Ctrl-C reaches, a metric's KeyboardInterrupt cannot be told from the user's.
    proc, _ = _run(tmp_path, ["interrupts"], "processes: 1")
    assert proc.returncode == 130, proc.stdout + proc.stderr


def test_pass_at_k_counts_a_trial_whose_metric_raised_as_failed(tmp_path: Path) -> None:
    proc, run_dir = _run(tmp_path, ["divides"], "processes: 1, trials: 3", "assertions: {max_metric_error_share: 0.5}\n",
                         more=("{type: PassAtK, metric: divides, k: 3}",))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    # bad-1 and bad-3 raised on all 3 trials: two cases that failed every trial, not two left out.
    want = {"value": 0.5, "cases": 4, "no_scored_trial": 0, "too_few_trials": 0}
    figure = summary["pass_at_k"]["pass@3(divides)"]
    assert {k: figure[k] for k in want} == want, figure
    assert summary["metrics"]["divides"]["pass_at_k"]["3"] == want
    assert "pass@3(divides)  0.500      4                0" in proc.stdout, proc.stdout
