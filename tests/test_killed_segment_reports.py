"""A run segment killed after it wrote new results leaves no earlier PASS in its run directory.

A run finishes PASS; the dataset grows; `tracejudge run --force` writes results for the new cases and is killed (SIGKILL,
a CI timeout) or ends at once (`os._exit(0)` in a metric scored in the main process, `run.processes: 1`). Neither can
write a report. summary.json (`complete: true`, PASS), junit.xml (all passing) and report.md / report.html stayed the
first run's over a results.jsonl holding results none of them counted, so a CI step publishing junit.xml or reading
summary.json saw a PASS. Before the segment's first new result reaches the disk they are made to say that the run is
being written (junit.xml: one INTERRUPTED `run` case with the command that resumes; summary.json: not complete, the
verdict INTERRUPTED, every figure kept; report.md and report.html removed). `report` then says INTERRUPTED (exit 130),
and the same command finishes the run with reports that say PASS again.

Real processes only: `tracejudge run` and `report` in subprocesses, a real SIGKILL once the new results are on disk
(results.jsonl polled), a real `os._exit` in a metric.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from _runs import sigkill_when
import _forkserver

AGENT = '''
import os, time

def respond(request):
    if request.case_id == os.environ.get("HOLD"):  # held until the test lets it go
        while not os.path.exists(os.path.join(os.path.dirname(__file__), "release")):
            time.sleep(0.01)
    if request.case_id == os.environ.get("EXIT_ON"):  # answered once the cases before it are on disk
        results = os.path.join(os.path.dirname(__file__), "run", "results.jsonl")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sum(1 for _ in open(results, "rb")) < int(os.environ["EXIT_PAST"]) + 2:
            time.sleep(0.01)
    return {"output": "ok", "trace": {"steps": [{"tool_calls": [{"name": "a", "arguments": {}}]}], "output": "ok"}}
'''

EXITS = '''
import os
import tracejudge as tj

@tj.metric
def exits(case, trace):
    if case.id == os.environ.get("EXIT_ON"):  # (set for one run only)
        os._exit(0)  # ends the process on the spot: no handler, no report
    return 1.0
'''

SAID = ("complete", "verdict", "stopped")  # what says how the run stands; every other figure of summary.json is kept


def _tj(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(cwd), **(env or {})})


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def _cases(path: Path, ids: range, *, trace: bool = False) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for i in ids:
            case = {"id": f"c{i}", "input": f"Refund order {i}", "expected_tool_calls": [{"name": "a"}]}
            if trace:
                case["trace"] = {"steps": [{"tool_calls": [{"name": "a", "arguments": {}}]}], "output": "ok"}
            fh.write(json.dumps(case) + "\n")


def _run_error(run_dir: Path) -> str:
    """The message of junit.xml's `run` test case in `<error>` ('' when there is none)."""
    for case in ET.parse(run_dir / "junit.xml").getroot().iter("testcase"):
        if case.get("name") == "run" and (err := case.find("error")) is not None:
            return err.get("message") or ""
    return ""


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def _passed(run_dir: Path, results: int) -> None:
    """The run's files all say PASS over `results` results."""
    summary = _summary(run_dir)
    assert summary["complete"] is True and summary["verdict"]["verdict"] == "PASS" and "stopped" not in summary
    assert summary["results"] == results
    root = ET.parse(run_dir / "junit.xml").getroot()
    assert root.get("errors") == "0" and root.get("failures") == "0" and not _run_error(run_dir)
    assert "**Verdict: PASS**" in (run_dir / "report.md").read_text()
    assert 'id="verdict" class="badge PASS"' in (run_dir / "report.html").read_text()


def _no_pass_left(run_dir: Path, before: dict, resume: str) -> None:
    """What a killed segment leaves: no report says PASS; summary.json keeps its figures; junit.xml names the command."""
    assert not (run_dir / "report.md").exists() and not (run_dir / "report.html").exists()
    summary = _summary(run_dir)
    assert summary["complete"] is False and summary["verdict"]["verdict"] == "INTERRUPTED", summary.get("verdict")
    assert summary["stopped"]["how"] == "killed" and f"resume with: {resume}" in summary["stopped"]["reason"]
    assert {k: v for k, v in summary.items() if k not in SAID} == {k: v for k, v in before.items() if k not in SAID}
    root = ET.parse(run_dir / "junit.xml").getroot()
    assert root.get("tests") == "1" and root.get("errors") == "1", ET.tostring(root, encoding="unicode")
    why = _run_error(run_dir)
    assert why.startswith("verdict: INTERRUPTED: a later segment of this run") and "killed" in why, why
    assert why.endswith(f"resume with: {resume}"), why


def _reported_interrupted(tmp_path: Path, run_dir: Path, resume: str) -> None:
    rep = _tj("report", "run", cwd=tmp_path)
    assert rep.returncode == 130, rep.stdout + rep.stderr
    assert rep.stdout.splitlines()[-1] == f"verdict: INTERRUPTED (resume with: {resume})", rep.stdout
    assert _summary(run_dir)["verdict"]["verdict"] == "INTERRUPTED" and _run_error(run_dir).startswith("verdict: INTERRUPTED")
    assert "**Verdict: INTERRUPTED**" in (run_dir / "report.md").read_text()
    # How it ended stays said, as the resumed segment's first result said it: it was dropped, `stopped` written only
    # for a segment that recorded its own cause.
    stopped = _summary(run_dir)["stopped"]
    assert stopped["how"] == "killed" and stopped["reason"].endswith(f"resume with: {resume}"), stopped


def _finished_pass(tmp_path: Path, run: str) -> tuple[Path, dict]:
    """A finished PASS run of four cases answered by a python agent (`run`: the config's `run:` section); then the
    dataset grows by four (c4..c7). Returns the run directory and its summary."""
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "checks.py").write_text(EXITS)
    _cases(tmp_path / "cases.jsonl", range(4))
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\n"
                                     "target: {kind: python, callable: agent:respond, concurrency: 1}\n"
                                     f"metrics: [{{type: ToolCalls}}, {{type: 'checks:exits'}}]\nrun: {run}\n")
    first = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    run_dir = tmp_path / "run"
    _passed(run_dir, 4)
    _cases(tmp_path / "cases.jsonl", range(4, 8))  # the dataset grows
    return run_dir, _summary(run_dir)


RESUME = "tracejudge run c.yaml --no-progress"  # (what `run --force` records: a resume needs no --force again)


def _finishes(tmp_path: Path, run_dir: Path) -> None:
    """The command junit.xml gave (and `report` gives) finishes the run: every report says PASS again, over all 8 cases."""
    (tmp_path / "release").touch()
    done = _tj(*shlex.split(RESUME)[1:], cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "verdict: PASS", done.stdout + done.stderr
    _passed(run_dir, 8)


def test_a_resume_killed_with_sigkill_after_new_results_leaves_no_pass(tmp_path: Path) -> None:
    run_dir, before = _finished_pass(tmp_path, "{dir: run, flush_every: 1}")
    results = run_dir / "results.jsonl"
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--force", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(tmp_path), "HOLD": "c6"})
    try:
        sigkill_when(proc, lambda: _lines(results) >= 6, "c4 and c5 were not written", timeout_s=60)  # (c6 is held)
    finally:
        (tmp_path / "release").touch()
    assert _lines(results) >= 6
    _no_pass_left(run_dir, before, RESUME)
    _reported_interrupted(tmp_path, run_dir, RESUME)
    _finishes(tmp_path, run_dir)


def test_a_resume_ended_by_os_exit_in_a_metric_after_new_results_leaves_no_pass(tmp_path: Path) -> None:
    run_dir, before = _finished_pass(tmp_path, "{dir: run, processes: 1, flush_every: 1}")
    # The agent answers c6 once c4 and c5 are on disk; the metric scoring it, in the main process, calls os._exit(0).
    ended = _tj("run", "c.yaml", "--force", "--no-progress", cwd=tmp_path, env={"EXIT_ON": "c6", "EXIT_PAST": "4"})
    # Status 0 and no verdict printed (README, custom metrics).
    assert ended.returncode == 0 and "verdict" not in ended.stdout, ended.stdout + ended.stderr
    assert _lines(run_dir / "results.jsonl") == 6
    _no_pass_left(run_dir, before, RESUME)
    _reported_interrupted(tmp_path, run_dir, RESUME)
    _finishes(tmp_path, run_dir)
