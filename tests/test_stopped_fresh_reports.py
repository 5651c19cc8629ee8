"""A `--fresh` run stopped by SIGTERM (a CI job's timeout) saves the command that resumes it, not only prints it.

Stopped once (the cases under way finish) or aborted (a second SIGTERM while stopping), `summary.json`'s `stopped` and
`junit.xml` name the `--run-dir` command without `--fresh`, as the terminal does: re-running the job's own `--fresh`
command would start over in yet another directory. Through the real command line in a subprocess, with a python agent
that answers the first two cases at once and holds the others until the test lets them go; no timing is asserted.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
import _forkserver

AGENT = """\
import os, time

def agent(request):
    if request.case_id not in ("c0", "c1"):
        while not os.path.exists("release"):
            time.sleep(0.02)
    return {"output": "ok", "trace": {"steps": [{"tool_calls": [{"name": "echo", "arguments": {}}]}]}}
"""


def _setup(tmp: Path) -> None:
    (tmp / "slow_agent.py").write_text(AGENT, encoding="utf-8")
    (tmp / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "q"}) + "\n" for i in range(6)), encoding="utf-8")
    (tmp / "eval.yaml").write_text(
        "dataset: {path: cases.jsonl, format: native}\n"
        "metrics: [{type: ToolCalls}]\n"
        "target: {kind: python, callable: 'slow_agent:agent', pythonpath: '.', retries: 0, concurrency: 1}\n"
        "run: {dir: runs/eval, flush_every: 1}\n", encoding="utf-8")
    # A first run, so that `--fresh` starts beside it (`runs/eval-2`), as a CI job re-running its command does.
    (tmp / "release").touch()
    first = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "eval.yaml", "--no-progress"], cwd=tmp, capture_output=True,
                           text=True, timeout=300)
    assert first.returncode in (0, 1), first.stderr
    (tmp / "release").unlink()


def _wait_for(check, what: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while not check():
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"no {what}"
        time.sleep(0.05)


def _stopped_run(tmp: Path, aborted: bool) -> tuple[Path, str, str]:
    """Start the `--fresh` run, SIGTERM it once it has written results (twice when `aborted`); its dir, stderr, resume command."""
    _setup(tmp)
    err_path = tmp / "stderr.txt"
    with open(err_path, "w") as err, open(tmp / "stdout.txt", "w") as out:
        proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", "eval.yaml", "--fresh", "--no-progress"], cwd=tmp,
                                stdout=out, stderr=err)
    run_dir = (tmp / "runs" / "eval-2").resolve()
    results = run_dir / "results.jsonl"
    try:
        _wait_for(lambda: results.exists() and len(results.read_text().splitlines()) >= 2, "results", proc)
        proc.send_signal(signal.SIGTERM)
        if aborted:
            _wait_for(lambda: "SIGTERM: no new cases" in err_path.read_text(), "stop notice", proc)
            proc.send_signal(signal.SIGTERM)
            _wait_for(lambda: "aborted" in err_path.read_text(), "abort notice", proc)
        (tmp / "release").touch()
        assert proc.wait(timeout=120) == 130, err_path.read_text()
    finally:
        (tmp / "release").touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = err_path.read_text()
    resume = stderr[stderr.index("Resume with:\n") + len("Resume with:\n"):].splitlines()[0].strip()
    words = shlex.split(resume)
    assert "--fresh" not in words and words[words.index("--run-dir") + 1] == str(run_dir), resume
    return run_dir, stderr, resume


def _check_saved(run_dir: Path, resume: str, how: str) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is False and summary["verdict"]["verdict"] == "INTERRUPTED"
    stopped = summary["stopped"]
    assert stopped["how"] == how and stopped["exit_status"] == 130, stopped
    assert stopped["reason"].endswith(f"resume with: {resume}"), stopped
    detail = next(c["detail"] for c in summary["verdict"]["checks"] if c["name"] == "run complete")
    assert detail.endswith(f"resume with: {resume}"), detail
    junit = (run_dir / "junit.xml").read_text()
    assert f"resume with: {resume}" in junit and "resume it to finish the remaining cases" not in junit, junit
    assert "--fresh" not in junit


def test_a_fresh_run_stopped_by_sigterm_saves_the_command_that_resumes_it(tmp_path):
    run_dir, stderr, resume = _stopped_run(tmp_path, aborted=False)
    assert "SIGTERM: no new cases" in stderr
    _check_saved(run_dir, resume, "stopped")
    # `report` on it rebuilds the same; the resume as printed (and saved) finishes that run, in that directory.
    report = _forkserver.run([sys.executable, "-m", "tracejudge", "report", str(run_dir)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    assert report.returncode == 130, report.stdout + report.stderr
    _check_saved(run_dir, resume, "stopped")
    again = _forkserver.run([sys.executable, "-m", "tracejudge", *shlex.split(resume)[1:]], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode in (0, 1), again.stdout + again.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is True and "stopped" not in summary and summary["results"] == 6
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["eval", "eval-2"]


def test_a_fresh_run_aborted_by_a_second_sigterm_saves_the_command_that_resumes_it(tmp_path):
    run_dir, stderr, resume = _stopped_run(tmp_path, aborted=True)
    assert "aborted; results already written are kept" in stderr
    _check_saved(run_dir, resume, "aborted")
