"""A resume under another config that has nothing new to score ends a finished run, as `report` and `view` read it.

`--force` (or a config of the run's history) rewrites manifest.json with the config the resume ran with. A resume that
scores nothing recorded no segment, so the last recorded segment named the earlier config, and `tracejudge report`
took the manifest's config for one a killed resume had started: `verdict: INTERRUPTED`, exit 130, and the viewer
listed the run as interrupted, although the forced run had ended and said its verdict.

Real processes only: `tracejudge run` and `report` in subprocesses on a native dataset of four cases.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tracejudge.viewer.runs import load_runs
import _forkserver

CONFIG = "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls, arguments: exact}]\nrun: {dir: run, executor: inprocess}\n"


def _tj(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _dataset(tmp_path: Path) -> None:
    # Two cases call the tool as expected, two with another argument: ToolCalls' mean is 0.5 under any argument rule.
    lines = []
    for i in range(4):
        expected = {"name": "get_order", "arguments": {"order_id": i}}
        called = {"name": "get_order", "arguments": {"order_id": i if i < 2 else -1}}
        lines.append(json.dumps({"id": f"c{i}", "expected_tool_calls": [expected], "trace": {"steps": [{"tool_calls": [called]}], "output": "done"}}))
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")


def _verdict(proc: subprocess.CompletedProcess[str]) -> str:
    return next((line for line in proc.stdout.splitlines() if line.startswith("verdict:")), proc.stdout + proc.stderr)


def _segments(run_dir: Path) -> list[tuple[int, str, bool]]:
    segments = json.loads((run_dir / "checkpoint.json").read_text())["segments"]
    return [(s["results"], s["ended"], s["forced"]) for s in segments]


def test_a_forced_resume_with_nothing_to_score_reports_the_forced_configs_verdict(tmp_path: Path) -> None:
    _dataset(tmp_path)
    cfg, run_dir = tmp_path / "c.yaml", tmp_path / "run"
    cfg.write_text(CONFIG)
    first = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert first.returncode == 0 and _verdict(first) == "verdict: PASS", first.stdout + first.stderr

    # Another argument rule (refused without --force) and an assertion the kept results do not meet.
    cfg.write_text(CONFIG.replace("exact", "subset") + "assertions: {metrics: {ToolCalls: {min_mean: 0.9}}}\n")
    forced = _tj("run", "c.yaml", "--no-progress", "--force", cwd=tmp_path)
    assert forced.returncode == 1 and "0 new results, 4 already finished" in forced.stdout, forced.stdout + forced.stderr
    assert _verdict(forced) == "verdict: FAIL"

    report = _tj("report", "run", cwd=tmp_path)
    assert (report.returncode, _verdict(report)) == (1, "verdict: FAIL"), report.stdout + report.stderr
    assert "interrupted" not in report.stdout.lower()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is True and "stopped" not in summary
    # The forced segment is on record, with the config the manifest names.
    assert _segments(run_dir) == [(4, "finished", False), (0, "finished", True)]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    last = json.loads((run_dir / "checkpoint.json").read_text())["segments"][-1]
    assert last["config_hash"] == manifest["config_hash"]
    # `tracejudge view`'s runs list (the state it shows reads the summary `report` just rewrote).
    assert load_runs([run_dir])[0].state() == ("complete", "")

    # Resumed again with nothing to do: finished, no new segment.
    again = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert again.returncode == 1 and _verdict(again) == "verdict: FAIL", again.stdout + again.stderr
    assert len(_segments(run_dir)) == 2


def test_a_forced_resume_that_scores_then_the_first_config_with_nothing_to_score(tmp_path: Path) -> None:
    _dataset(tmp_path)
    cfg, run_dir = tmp_path / "c.yaml", tmp_path / "run"
    cfg.write_text(CONFIG)
    assert _tj("run", "c.yaml", "--no-progress", cwd=tmp_path).returncode == 0

    # Forced to another argument rule and a second trial: four new results.
    cfg.write_text(CONFIG.replace("exact", "subset").replace("inprocess}", "inprocess, trials: 2}"))
    forced = _tj("run", "c.yaml", "--no-progress", "--force", cwd=tmp_path)
    assert forced.returncode == 0 and "4 new results, 4 already finished" in forced.stdout, forced.stdout + forced.stderr
    report = _tj("report", "run", cwd=tmp_path)
    assert (report.returncode, _verdict(report)) == (0, "verdict: PASS"), report.stdout + report.stderr

    # The config the run started with resumes without --force (it is in the history) and has nothing to score.
    cfg.write_text(CONFIG)
    back = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert back.returncode == 0 and "0 new results, 4 already finished" in back.stdout, back.stdout + back.stderr
    report = _tj("report", "run", cwd=tmp_path)
    assert (report.returncode, _verdict(report)) == (0, "verdict: PASS"), report.stdout + report.stderr
    assert _segments(run_dir) == [(4, "finished", False), (4, "finished", True), (0, "finished", False)]
    assert load_runs([run_dir])[0].state() == ("complete", "")
