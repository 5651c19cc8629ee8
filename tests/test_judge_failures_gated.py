"""A judge that failed is named and gated by `compare --judge` and `calibrate`, as `tracejudge run` gates it.

Both printed figures over the verdicts the judge gave and exited 0: a judge failing every request left "0 pairs
judged in both orders, 20 not judged" (and `--json` "verdict": "PASS" beside `judge.gate_failed: true`), or "n/a"
everywhere; no error kind, no message, and a partly failed judge was never gated.

Real `tracejudge` processes against the simulator over HTTP on 127.0.0.1, its `script` failing the requests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from tracejudge.simulator.server import SimulatorThread
import _forkserver

N = 6


def tracejudge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, "COLUMNS": "400"})


def write_cases(path: Path, variant: str) -> Path:
    with open(path, "w") as fh:
        for i in range(N):
            steps = [{"tool_calls": [{"name": "search", "arguments": {"day": i}, "result": f"{variant} flights {i}"}]},
                     {"output": f"{variant} booked {i}"}]
            fh.write(json.dumps({"id": f"c{i}", "input": f"Book a flight on day {i}", "expected_output": f"booked {i}",
                                 "trace": {"steps": steps}}) + "\n")
    return path


def write_config(tmp: Path, name: str, url: str, **judge: Any) -> Path:
    """A config judging with the simulator at `url`, one attempt a request (a 500 is a judge error at once)."""
    cfg = {"dataset": {"path": str(write_cases(tmp / f"{name}.jsonl", "alpha"))}, "metrics": [{"type": "TaskCompletion"}],
           "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "api_key_env": None, "max_attempts": 1,
                     "pairwise": {"rubric": "Which run booked the flight the user asked for?"}, **judge},
           "cache": {"dir": str(tmp / f"cache-{name}"), "enabled": False}, "run": {"dir": str(tmp / f"run-{name}")}}
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def two_runs(tmp: Path) -> tuple[Path, Path]:
    for name in ("a", "b"):
        cfg = {"dataset": {"path": str(write_cases(tmp / f"{name}-cases.jsonl", name))}, "metrics": [{"type": "Contains"}],
               "run": {"dir": str(tmp / name)}}
        (tmp / f"{name}-run.yaml").write_text(yaml.safe_dump(cfg))
        proc = tracejudge("run", str(tmp / f"{name}-run.yaml"), "--no-progress", cwd=tmp)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "a", tmp / "b"


def test_compare_judge_fails_naming_the_error_when_the_judge_failed_every_request(
        simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    a, b = two_runs(tmp_path)
    sim = simulator(script=["500"] * (4 * N))
    cfg = write_config(tmp_path, "all", sim.url)
    proc = tracejudge("compare", str(a), "--vs", str(b), "--judge", str(cfg), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"0 pairs judged in both orders, {N} not judged (verdicts not given: judge_error {2 * N})" in out, out
    assert (f"judge errors: provider_error {2 * N}; the first (case c0 trial 0, A shown first): provider_error: HTTP 500 "
            "server_error: simulated server error") in out, out
    assert (f"FAIL judge max_error_share: judge errors: {2 * N} of {2 * N} judged results = 100.0%, allowed <= 0.0% "
            "(judge.max_error_share)") in out, out
    assert "FAIL pairs judged: no pair was judged in both orders" in out and out.rstrip().endswith("verdict: FAIL"), out
    as_json = tracejudge("compare", str(a), "--vs", str(b), "--judge", str(cfg), "--json", cwd=tmp_path)
    got = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and got["verdict"] == "FAIL" and got["judge"]["gate_failed"] is True, got
    assert [c["name"] for c in got["checks"] if not c["ok"]] == ["judge max_error_share", "pairs judged"]
    assert got["first_error"]["message"].startswith("provider_error: HTTP 500") and got["not_judged_verdicts"] == {"judge_error": 2 * N}


def test_compare_judge_gates_a_partly_failed_judge_with_the_runs_setting(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    a, b = two_runs(tmp_path)
    sim = simulator(script=["500"])  # one request of 2N fails, the rest are answered
    proc = tracejudge("compare", str(a), "--vs", str(b), "--judge", str(write_config(tmp_path, "strict", sim.url)), "--json", cwd=tmp_path)
    got = json.loads(proc.stdout)
    assert proc.returncode == 1 and got["verdict"] == "FAIL" and got["pairs"] == N - 1 and got["not_judged"] == 1, got
    share = next(c for c in got["checks"] if c["name"] == "judge max_error_share")
    assert not share["ok"] and share["detail"].startswith(f"judge errors: 1 of {2 * N} judged results = 8.3%"), share
    # judge.max_error_share allows it, as it would in a run: the comparison stands.
    sim.set_script(["500"])
    lenient = write_config(tmp_path, "lenient", sim.url, max_error_share=0.1)
    proc = tracejudge("compare", str(a), "--vs", str(b), "--judge", str(lenient), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"ok   judge max_error_share: judge errors: 1 of {2 * N} judged results = 8.3%, allowed <= 10.0%" in proc.stdout
    assert "judge errors: provider_error 1; the first (case " in proc.stdout and proc.stdout.rstrip().endswith("verdict: PASS")


def labels_file(tmp: Path) -> Path:
    path = tmp / "labels.jsonl"
    path.write_text("".join(json.dumps({"case_id": f"c{i}", "metric": "TaskCompletion", "label": i % 2 == 0}) + "\n" for i in range(N)))
    return path


def test_calibrate_fails_naming_the_error_when_the_judge_failed_every_request(
        simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(script=["500"] * N)
    proc = tracejudge("calibrate", str(write_config(tmp_path, "cal", sim.url)), "--labels", str(labels_file(tmp_path)),
                      "--json", str(tmp_path / "cal.json"), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert (f"judge errors: provider_error {N}; the first (case c0 trial 0, TaskCompletion): provider_error: HTTP 500 server_error: "
            "simulated server error") in out, out
    assert f"  FAIL judge max_error_share: judge errors: {N} of {N} judged results = 100.0%, allowed <= 0.0%" in out, out
    got = json.loads((tmp_path / "cal.json").read_text())
    assert got["verdict"] == "FAIL" and got["judge_errors"]["error_kinds"] == {"provider_error": N}, got
    assert got["judge_errors"]["first"]["case_id"] == "c0" and got["judge_errors"]["first"]["metric"] == "TaskCompletion"


def test_calibrate_gates_a_partly_failed_judge_with_the_runs_setting(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(script=["500"])
    labels = labels_file(tmp_path)
    proc = tracejudge("calibrate", str(write_config(tmp_path, "strict", sim.url)), "--labels", str(labels), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"  FAIL judge max_error_share: judge errors: 1 of {N} judged results = 16.7%" in proc.stdout, proc.stdout
    sim.set_script(["500"])
    proc = tracejudge("calibrate", str(write_config(tmp_path, "lenient", sim.url)), "--labels", str(labels),
                      "--set", "judge.max_error_share=0.2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "judge errors: provider_error 1; the first (case " in proc.stdout
    assert f"  ok   judge max_error_share: judge errors: 1 of {N} judged results = 16.7%, allowed <= 20.0%" in proc.stdout


def test_report_on_a_run_without_its_summary_counts_the_judge_gate_from_the_results(simulator: Callable[..., SimulatorThread],
                                                                                      tmp_path: Path) -> None:
    # A run killed before its first summary.json, or one whose summary was deleted: `report` rebuilt the figures from
    # results.jsonl but took the judge's block from the summary only, so a run the judge failed was reported PASS, exit 0.
    sim = simulator(script=["500"] * (4 * N))
    cfg = write_config(tmp_path, "lost", sim.url)
    ran = tracejudge("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert ran.returncode == 1 and "FAIL judge max_error_share" in ran.stdout, ran.stdout + ran.stderr
    (tmp_path / "run-lost" / "summary.json").unlink()
    again = tracejudge("report", str(tmp_path / "run-lost"), cwd=tmp_path)
    assert again.returncode == 1 and "verdict: FAIL" in again.stdout, again.stdout + again.stderr
    assert f"FAIL judge max_error_share: judge errors: {N} of {N} judged results" in again.stdout, again.stdout
    judge = json.loads((tmp_path / "run-lost" / "summary.json").read_text())["judge"]
    assert (judge["judged_results"], judge["judge_error_results"], judge["gate_failed"]) == (N, N, True)
