"""The `judge.samples` and panel figures of a run stopped and resumed are those of the same run uninterrupted.

They are counted from the result lines (each score's `details.samples` and `details.panel`): a segment killed with
SIGKILL writes no summary, and adding up the last summary's counts left out every result it had judged (5 of 19 items
flaky where the uninterrupted run had 5 of 24; a panel's kappa over 84 questions of 96). `tracejudge report`, which
rebuilds the summary from results.jsonl, gave the same wrong figures. Real runs against the judge simulator.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from _runs import sigkill_when
from test_judge_samples_panel import write_cases
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
import _forkserver

TJ = [sys.executable, "-m", "tracejudge"]
CASES = 8


def _config(tmp: Path, name: str, judge: dict[str, Any], in_flight: int) -> dict[str, Any]:
    return {"dataset": {"path": str(write_cases(tmp / "cases.jsonl", CASES))}, "metrics": [{"type": "TaskCompletion"}, {"type": "TrajectoryEfficiency"}],
           "judge": {"provider": "simulator", "model": "gpt-4o-mini", "samples": 2, "temperature": 0.5,
                     "stop_grace_s": 0, **judge},  # (Ctrl-C: the cases being judged are cut, not finished)
           "limits": {"max_in_flight": in_flight}, "cache": {"enabled": False}, "run": {"dir": str(tmp / name), "flush_every": 1}}


def _lines(run: Path) -> int:
    results = run / "results.jsonl"
    return results.read_bytes().count(b"\n") if results.exists() else 0


def _run(config: Path) -> None:
    done = _forkserver.run([*TJ, "run", str(config), "--no-progress"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]


def _stopped(config: Path, run: Path, at: int, sig: signal.Signals) -> None:
    """Run `config` and send `sig` once `run` holds `at` results and one more than when it started (SIGKILL: at once;
    SIGINT: the run stops as Ctrl-C stops it). (A killed segment before it may have left `at` results already: the signal
    then reached the resume in its start-up, which ends it before it is a segment.)"""
    at = max(at, _lines(run) + 1)
    proc = _forkserver.popen([*TJ, "run", str(config), "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sigkill_when(proc, lambda: _lines(run) >= at, f"{at} results", sig=sig)


def _figures(judge: dict[str, Any]) -> tuple[Any, Any]:
    return judge.get("samples"), (judge.get("panel") or {}).get("metrics")


def _verdicts(run: Path) -> dict[str, Any]:
    """Each case's scores: value, flakiness, each panel member's. (The simulator's noise decides by how many times it has
    seen a request, and the samples of one are asked at once: which sample got which answer is not fixed, their set is.
    No cache: a resume asks a case's samples all again, as the uninterrupted run did, not the one the kill left unasked.)"""
    def one(s: dict[str, Any]) -> Any:
        samples, panel = s["details"].get("samples") or {}, s["details"].get("panel") or {}
        members = {m: (v["value"], v["answers"], v.get("samples")) for m, v in (panel.get("models") or {}).items()}
        return s["value"], samples.get("flaky"), samples.get("flip_rate"), members

    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    return {r["case_id"]: {k: one(s) for k, s in r["scores"].items()} for r in rows}


def _check(tmp: Path, judge: dict[str, Any], in_flight: int, stops: list[tuple[int, signal.Signals]]) -> dict[str, Any]:
    """Run `judge`'s config uninterrupted, and again stopped by each of `stops` (after how many results in all, the
    signal) and resumed to its end; assert the second run's judge figures are the first's, also once `report` rebuilt
    them. The uninterrupted run's judge block."""
    whole, stopped = tmp / "whole", tmp / "stopped"
    anyio.run(lambda: runner.run(validate_config(_config(tmp, "whole", judge, in_flight))))
    config = tmp / "stopped.json"
    config.write_text(json.dumps(_config(tmp, "stopped", judge, in_flight)))
    for at, sig in stops:
        _stopped(config, stopped, at, sig)
        assert _lines(stopped) < CASES, "the run ended before it was stopped"
    _run(config)
    want = json.loads((whole / "summary.json").read_text())["judge"]
    summary = json.loads((stopped / "summary.json").read_text())
    assert [s["ended"] for s in summary["segments"]] == [("killed" if sig is signal.SIGKILL else "interrupted") for _, sig in stops] + ["finished"]
    assert _verdicts(stopped) == _verdicts(whole)  # the same verdicts: the figures must be the same
    assert _figures(summary["judge"]) == _figures(want), (summary["judge"], want)
    report = _forkserver.run([*TJ, "report", str(stopped)], capture_output=True, text=True, timeout=180)
    assert report.returncode == 0, report.stderr[-2000:]
    assert _figures(json.loads((stopped / "summary.json").read_text())["judge"]) == _figures(want)
    return want


def test_samples_figures_of_a_killed_and_resumed_run_are_the_uninterrupted_runs(tmp_path: Path) -> None:
    want = _check(tmp_path, {"simulator": {"latency_ms": 50, "seed": 11, "noise": 0.3}}, 2, [(3, signal.SIGKILL)])
    assert {m: s["items"] for m, s in want["samples"].items()} == {"TaskCompletion": CASES, "TrajectoryEfficiency": CASES}


def test_panel_figures_after_a_kill_and_a_ctrl_c_are_the_uninterrupted_runs(tmp_path: Path) -> None:
    # A panel of three sampled models: each member's flakiness and the panel's kappa and agreement. The kill leaves
    # results no summary holds; the Ctrl-C a summary and a checkpoint holding them, which the last segment reads.
    judge = {"models": ["simulator:a", "simulator:b", "simulator:c"], "aggregate": "majority",
             "simulator": {"latency_ms": 30, "seed": 3, "noise": {"a": 0.1, "b": 0.3, "*": 0.5}}}
    want = _check(tmp_path, judge, 4, [(2, signal.SIGKILL), (4, signal.SIGINT)])
    assert want["panel"]["metrics"]["TaskCompletion"]["subjects"] > 0
    assert {m: s["items"] for m, s in want["samples"].items()} == {"TaskCompletion": 3 * CASES, "TrajectoryEfficiency": 3 * CASES}
