"""Runs that heal on resume: transient failures are redone, and a killed run's figures equal an unkilled one's.

Real parts only: the judge simulator over HTTP on 127.0.0.1, real run
directories, `tracejudge run` in subprocesses killed with SIGKILL.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from tracejudge.core.config import RunConfig
from tracejudge.engine import runner, store
from tracejudge.simulator.server import SimulatorThread
import _forkserver

pytestmark = pytest.mark.usefixtures("fresh_log")

REPO = Path(__file__).resolve().parent.parent
TJ = Path(sys.executable).with_name("tracejudge")
DEMO_DATA = REPO.parent / "shared" / "data" / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"


def _cases(path: Path, n: int) -> Path:
    lines = [json.dumps({"id": f"c{i}", "input": "q", "trace": {"steps": [], "output": "done"}}) for i in range(n)]
    path.write_text("\n".join([*lines, '{"id": "bad"']) + "\n")  # one invalid_input: never retried
    return path


def _config(tmp_path: Path, url: str, **run: Any) -> dict[str, Any]:
    return {"dataset": {"path": str(_cases(tmp_path / "cases.jsonl", 4)), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
            "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "max_attempts": 1},
            "cache": {"enabled": False}, "run": {"dir": str(tmp_path / "run"), **run},
            "assertions": {"max_invalid_share": 0.2}}  # the one invalid record of five is planted


def _run(config: dict[str, Any]) -> runner.RunOutcome:
    return anyio.run(lambda: runner.run(RunConfig.model_validate(config)))


def _standing(run_dir: Path) -> dict[tuple[str, int], str]:
    return {(r["case_id"], r["trial"]): r["status"] for r in map(json.loads, store.iter_current_result_lines(run_dir / store.RESULTS))}


def test_transient_failures_are_retried_by_the_same_command(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(script=["500"] * 3)  # the first three judge requests fail (max_attempts 1: no retry inside the run)
    config = _config(tmp_path, sim.url)
    first = _run(config)
    assert first.summary["status"] == {"invalid_input": 1, "judge_error": 3, "ok": 1}
    (tmp_path / "c.yaml").write_text(json.dumps(config))
    again = _forkserver.run([str(TJ), "run", str(tmp_path / "c.yaml"), "--no-progress"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "3 new results, 2 already finished, 3 retried after a transient failure" in again.stdout
    run_dir = tmp_path / "run"
    assert len((run_dir / store.RESULTS).read_text().splitlines()) == 8  # the 3 failures stay in the file, superseded
    assert sorted(_standing(run_dir).values()) == ["invalid_input", "ok", "ok", "ok", "ok"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == {"invalid_input": 1, "ok": 4} and summary["judge"]["judge_error_results"] == 0
    report = _forkserver.run([str(TJ), "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0 and json.loads((run_dir / "summary.json").read_text())["status"] == summary["status"]
    # The 3 retried cases ask the same judge prompt at once: single flight sends it once.
    assert sim.stats.requests == 4 + 1


def test_retries_stop_after_max_resume_retries(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(script=["500"] * 100)  # the judge keeps failing
    config = _config(tmp_path, sim.url, max_resume_retries=2)
    seen = [_run(config) for _ in range(4)]
    assert [o.retried for o in seen] == [0, 4, 4, 0]  # 1 try + 2 retries, then final
    assert [o.new_results for o in seen] == [5, 4, 4, 0]
    assert [o.pending_retries for o in seen] == [4, 4, 0, 0]
    assert sim.stats.requests == 12
    assert seen[-1].summary["status"] == {"invalid_input": 1, "judge_error": 4}


def test_a_standing_timeout_whose_requests_went_uncounted_still_says_to_raise_the_timeout() -> None:
    from tracejudge.stages.reports.judge_lines import judge_lines

    # What a segment killed before its summary leaves: the scores it wrote, not its requests' counters.
    lines = judge_lines({"judge": {"requests": 3, "timeouts": 0, "error_kinds": {"timeout": 2}, "timeout_s": 0.3}})
    assert "judge timeouts: 2 scores were left without a verdict by a timeout; raise judge.timeout_s (now 0.3 s) for a slow server" in lines


def test_raising_max_resume_retries_retries_the_failures_it_had_left_final(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(script=["500"] * 4)
    config = _config(tmp_path, sim.url, max_resume_retries=0)
    assert _run(config).pending_retries == 0  # no retry allowed: the 4 failures are final at once
    config["run"]["max_resume_retries"] = 1  # not in the config hash: the resume needs no --force
    raised = _run(config)
    assert raised.retried == 4 and raised.summary["status"] == {"invalid_input": 1, "ok": 4}


def _tj_run(config_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TJ), "run", str(config_path), "--no-progress", *extra], capture_output=True, text=True, timeout=120)


# The judge block's counts of standing results: a run whose timeouts a resume retried away has the figures of one never timed out.
STANDING = ("judge_errors", "error_kinds", "judged_results", "judge_error_results", "error_share", "gate_failed", "judged_items",
            "parse_failed_items", "parse_failure_rate")


def _distinct(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with each of its cases asking its own question (identical ones share one judge request)."""
    path = Path(config["dataset"]["path"])
    lines = path.read_text().splitlines()
    path.write_text("".join(x.replace('"input": "q"', f'"input": "q{i}"') + "\n" for i, x in enumerate(lines)))
    return config


def test_timeouts_a_resume_retried_away_are_no_longer_counted(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # The first judge request answered, the next two get no reply within timeout_s (a judge that never answered would stop
    # the run instead, marking no case).
    sim = simulator(script=["ok"] + ["timeout"] * 2, hang_s=1)
    config = _distinct(_config(tmp_path, sim.url))
    config["judge"]["timeout_s"] = 0.3
    first = _run(config)
    assert first.summary["judge"]["error_kinds"] == {"timeout": 2} and first.summary["judge"]["judge_errors"] == 2
    (tmp_path / "c.yaml").write_text(json.dumps(config))
    again = _tj_run(tmp_path / "c.yaml")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "2 retried after a transient failure" in again.stdout
    assert "judge errors: timeout" not in again.stdout and "raise judge.timeout_s" not in again.stdout
    assert "judge timeouts: 2 requests got no reply in time, all retried since" in again.stdout  # what the judge did, as history
    resumed = json.loads((tmp_path / "run" / "summary.json").read_text())
    (tmp_path / "ref").mkdir()
    never = _run(_distinct(_config(tmp_path / "ref", sim.url))).summary  # the same cases, no timeout
    assert {k: resumed["judge"][k] for k in STANDING} == {k: never["judge"][k] for k in STANDING}
    assert resumed["judge"]["error_kinds"] == {} and resumed["judge"]["judge_errors"] == 0
    assert (resumed["status"], resumed["metrics"]) == (never["status"], never["metrics"])
    assert (resumed["judge"]["timeouts"], never["judge"]["timeouts"]) == (2, 0)  # requests that timed out: history, kept


def test_failures_past_max_resume_retries_are_named_with_the_command_that_retries_them(
        simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(script=["500"] * 8)  # every case fails twice: once, then on its one retry
    config = _config(tmp_path, sim.url, max_resume_retries=1)
    (tmp_path / "c.yaml").write_text(json.dumps(config))
    assert _run(config).pending_retries == 4
    retried = _tj_run(tmp_path / "c.yaml")  # the one retry each fails too: the failures are final
    line = "4 failed results are not retried: run.max_resume_retries (1) retries of each are spent; to retry them anyway, raise it:"
    assert line in retried.stderr, retried.stderr
    again = _tj_run(tmp_path / "c.yaml")  # the same command: nothing retried, and it says why
    assert "(0 new results, 5 already finished)" in again.stdout
    assert line in again.stderr, again.stderr
    command = again.stderr.split(line + "\n", 1)[1].splitlines()[0].split()
    assert command[:2] == ["tracejudge", "run"] and "run.max_resume_retries=2" in command
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["retries_spent"] == {"results": 4, "max_resume_retries": 1}
    forced = _forkserver.run([str(TJ), *command[1:]], capture_output=True, text=True, timeout=120)  # the judge answers now
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "4 retried after a transient failure" in forced.stdout and "not retried" not in forced.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == {"invalid_input": 1, "ok": 4} and "retries_spent" not in summary


def test_judge_gate_is_counted_from_results_when_a_summary_is_lost(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    """A segment killed before writing summary.json must not make the judge-error gate pass."""
    sim = simulator(script=["500"] * 3)
    config = _config(tmp_path, sim.url, max_resume_retries=0)
    config["judge"]["max_error_share"] = 0.5
    first = _run(config)
    (tmp_path / "run" / "summary.json").unlink()  # what a SIGKILL leaves: no summary of the segments before
    again = _run(config)
    keys = ("judged_results", "judge_error_results", "error_share", "gate_failed")
    assert {k: again.summary["judge"][k] for k in keys} == {k: first.summary["judge"][k] for k in keys} == {
        "judged_results": 4, "judge_error_results": 3, "error_share": 0.75, "gate_failed": True}
    assert not again.verdict.passed


TIMING = {"elapsed_s_total", "elapsed_measured", "segments", "usage"}  # (elapsed_measured: what a killed segment's time covers)
JUDGE_TIMING = {"latency_p50_s", "latency_p95_s", "queued_s", "slept_s"}


def _comparable(summary: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in summary.items() if k not in TIMING}
    out["judge"] = {k: v for k, v in summary["judge"].items() if k not in JUDGE_TIMING}
    return out


@pytest.mark.skipif(not DEMO_DATA.exists(), reason="the τ-bench data is not beside the repository")
def test_kill_storm_summary_equals_the_unkilled_run(tmp_path: Path) -> None:
    # The demo config (tau-bench, deterministic metrics and two simulator judge metrics), 60 runs.
    # The judge cache is off: with it, answers paid for by a killed segment come back as cache
    # hits, and spend counted from results would rightly differ.
    def args(run_dir: Path) -> list[str]:
        return [str(TJ), "run", str(REPO / "configs" / "demo.yaml"), "--no-progress", "--set", f"run.dir={run_dir}",
                "--set", "cache.enabled=false", "--set", "dataset.limit=60", "--set", "run.flush_every=4"]

    ref = _forkserver.run(args(tmp_path / "ref"), capture_output=True, text=True, timeout=120)
    assert ref.returncode in (0, 1), ref.stderr
    storm = tmp_path / "storm"
    results = storm / store.RESULTS
    kills = 0
    for at_least in (8, 24, 40):
        proc = _forkserver.popen(args(storm), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline and (not results.exists() or results.read_bytes().count(b"\n") < at_least):
            time.sleep(0.005)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=30)
    assert kills >= 2
    final = _forkserver.run(args(storm), capture_output=True, text=True, timeout=120)
    assert final.returncode == ref.returncode, final.stderr
    a = json.loads((tmp_path / "ref" / "summary.json").read_text())
    b = json.loads((storm / "summary.json").read_text())
    assert sum(s["ended"] == "killed" for s in b["segments"]) == kills
    # Answers a killed segment paid for but had not written were paid again (no cache): that spend
    # was real and is counted (the spend journal), so spend may only be higher; all else is equal.
    # (`answered` too: every answer the judge gave, and was paid for, counts, a killed segment's as well.)
    spend = ("input_tokens", "output_tokens", "cost_usd", "sync_equivalent_usd", "requests", "answered")
    assert all(b["judge"][k] >= a["judge"][k] for k in spend)
    for s in (a, b):
        s["judge"] = {k: v for k, v in s["judge"].items() if k not in spend and k != "in_flight_at_stop"}
    # What the killed segments' judge did after their last checkpoints is not in the counters no line holds: said.
    partial = b["judge"].pop("partial_counters", None)
    assert partial is None or partial["segments"] and "judge counters cover" in partial["note"], partial
    assert _comparable(b) == _comparable(a)
