"""A run with results the judge budget skipped is not complete: the gate fails it, says how many and how to finish it.

Before, a deterministic metric that scored every case carried such a run to PASS (exit 0) while every judge
score was missing, beside an "ok" judge error share computed over no judged result.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from test_judge_batch_api import write_cases
import _forkserver

CLI = str(Path(sys.executable).with_name("tracejudge"))


def _config(tmp: Path, metrics: list[dict[str, Any]], budget: dict[str, Any] | None = None) -> Path:
    cfg = tmp / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(write_cases(tmp / "c.jsonl", 3)), "format": "native"}, "metrics": metrics,
                               "judge": {"provider": "simulator"}, "budget": budget or {},
                               "cache": {"enabled": False}, "run": {"dir": str(tmp / "run")}}))
    return cfg


def _run(cfg: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([CLI, "run", str(cfg), "--no-progress", *more], capture_output=True, text=True, timeout=120)


def _checks(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in json.loads((run_dir / "summary.json").read_text())["verdict"]["checks"]}


def test_a_run_the_budget_left_unjudged_fails_and_says_how_to_finish_it(tmp_path: Path) -> None:
    cfg = _config(tmp_path, [{"type": "MaxToolCalls", "max_calls": 5}, {"type": "TaskCompletion"}], {"max_cost_usd": 0.0001})
    got = _run(cfg)
    out = " ".join(got.stdout.split())
    assert got.returncode == 1 and "verdict: FAIL" in out, got.stdout + got.stderr
    assert "3 still skipped for the judge budget" in out  # what the run line said before, beside a PASS
    budget = _checks(tmp_path / "run")["judge budget"]
    assert not budget["ok"]
    assert budget["detail"].startswith("3 of 3 results were skipped for the judge budget (budget.max_cost_usd $0.0001)"), budget
    assert "TaskCompletion 3" in budget["detail"] and "MaxToolCalls" not in budget["detail"], budget
    # The command that resumes this run (a `--fresh` run's own command would start over in a new directory).
    assert "raise the budget" in budget["detail"] and f"resume with: tracejudge run {cfg} --no-progress" in budget["detail"], budget
    assert "FAIL judge budget: 3 of 3 results" in out
    # No result was judged: the judge's error share over none is no evidence, not an "ok".
    share = _checks(tmp_path / "run")["judge max_error_share"]
    assert not share["ok"] and "no result was judged (3 skipped for the judge budget)" in share["detail"], share
    assert 'name="judge budget"' in (tmp_path / "run" / "junit.xml").read_text()
    # `report` reads the same verdict from the run directory.
    report = _forkserver.run([CLI, "report", str(tmp_path / "run")], capture_output=True, text=True, timeout=120)
    assert report.returncode == 1 and "FAIL judge budget" in report.stdout, report.stdout + report.stderr

    # A larger budget and the same command judge the skipped results: the run is complete and passes.
    done = _run(cfg, "--set", "budget.max_cost_usd=5")
    assert done.returncode == 0 and "verdict: PASS" in done.stdout, done.stdout + done.stderr
    checks = _checks(tmp_path / "run")
    assert "judge budget" not in checks
    assert checks["judge max_error_share"]["ok"] and "0 of 3 judged results = 0.0%" in checks["judge max_error_share"]["detail"]


def test_a_judge_section_without_judge_metrics_claims_no_judge_error_share(tmp_path: Path) -> None:
    got = _run(_config(tmp_path, [{"type": "MaxToolCalls", "max_calls": 5}]))
    assert got.returncode == 0 and "verdict: PASS" in got.stdout, got.stdout + got.stderr
    assert "judge max_error_share" not in got.stdout  # nothing went to the judge: no share to call "ok"


def test_the_summary_error_share_is_over_the_results_the_judge_answered_as_the_gate_takes_it(tmp_path: Path) -> None:
    # The demo's τ-bench runs: a judge that fails half its requests once each, and a budget that runs out part way.
    demo = Path(__file__).resolve().parent.parent / "configs" / "demo.yaml"
    got = _forkserver.run([CLI, "run", str(demo), "--no-progress", "--run-dir", str(tmp_path / "run"), "--set", "dataset.limit=40",
                          "--set", "metrics=[{type: TaskCompletion}]", "--set", "assertions={}", "--set", "cache.enabled=false", "--set", "judge.max_attempts=1",
                          "--set", "judge.simulator.error_rate=0.5", "--set", "judge.simulator.hang_s=0.2", "--set", "budget.max_judge_tokens=40000"],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 1, got.stdout + got.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    judge = summary["judge"]
    skipped, errors, judged = judge["skipped_budget"], judge["judge_error_results"], judge["judged_results"]
    assert skipped and errors and judged > skipped + errors, judge
    assert judge["error_share"] == round(errors / (judged - skipped), 6)
    detail = _checks(tmp_path / "run")["judge max_error_share"]["detail"]
    assert f"{errors} of {judged - skipped} judged results = {errors / (judged - skipped):.1%}" in detail
