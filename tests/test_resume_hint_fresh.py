"""The command a `--fresh` run says resumes it resumes it: no `--fresh` (which would start over in yet another directory,
leaving the results behind), every other option the user gave kept, wherever it is printed or recorded.

Through the real command line in subprocesses; the judge is a port nothing listens on, then the judge simulator on it
(127.0.0.1).
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
from pathlib import Path

from tracejudge.simulator.server import SimConfig, SimulatorThread
import _forkserver

FLAGS = ["--set", "dataset.limit=2", "--explain-cache", "--no-progress", "--progress-every", "3"]


def _tracejudge(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _setup(tmp: Path, port: int) -> None:
    with open(tmp / "c.jsonl", "w") as fh:
        for i in range(3):
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": [{"tool_calls": [
                {"id": f"c{i}", "name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}],
                "output": f"Item {i} is found."}}) + "\n")
    (tmp / "eval.yaml").write_text(
        "dataset: {path: c.jsonl, format: native}\n"
        "metrics: [{type: TaskCompletion}]\n"
        f"judge: {{provider: openai, model: gpt-4o-mini, base_url: 'http://127.0.0.1:{port}/v1', api_key_env: null, max_retry_wait_s: 1}}\n"
        "cache: {dir: cache}\n"
        "run: {dir: runs/eval}\n")


def _resume_line(text: str, after: str) -> str:
    """The command printed after `after` in `text`, up to the end of its line (or the closing parenthesis of a verdict)."""
    line = text[text.index(after) + len(after):].splitlines()[0].strip()
    return line[:-1] if line.endswith(")") else line


def test_a_fresh_run_stopped_by_an_unreachable_judge_names_the_command_that_resumes_it(tmp_path):
    port = _free_port()
    _setup(tmp_path, port)
    first = _tracejudge(tmp_path, "run", "eval.yaml", "--no-progress")  # the run directory the next one starts beside
    assert first.returncode == 3, first.stderr

    fresh = _tracejudge(tmp_path, "--log-level", "error", "run", "eval.yaml", "--fresh", *FLAGS)
    assert fresh.returncode == 3, fresh.stderr
    run_dir = (tmp_path / "runs" / "eval-2").resolve()
    assert f"fresh run directory: {run_dir}" in fresh.stderr
    (error,) = [line for line in fresh.stderr.splitlines() if line.startswith("error: judge:")]
    assert "the same command" not in error, error
    resume = _resume_line(error, "resume with: ")
    words = shlex.split(resume)
    assert "--fresh" not in words and "--force" not in words, resume
    assert words[:4] == ["tracejudge", "--log-level", "error", "run"] and words[4] == "eval.yaml", resume
    assert words[words.index("--run-dir") + 1] == str(run_dir)
    for flag in FLAGS:
        assert flag in words, (flag, resume)

    # `report` on that run, and what the run recorded for it, give the same command.
    report = _tracejudge(tmp_path, "report", str(run_dir))
    assert report.returncode == 130, report.stdout + report.stderr
    assert _resume_line(report.stdout, "verdict: INTERRUPTED (resume with: ") == resume
    assert "--fresh" not in (run_dir / "checkpoint.json").read_text()
    # The error the run saved (summary.json's `stopped`; junit.xml's `run` case, which CI shows) names it too.
    saved = json.loads((run_dir / "summary.json").read_text())["stopped"]["reason"]
    assert "the same command" not in saved and _resume_line(saved, "resume with: ") == resume, saved
    junit = (run_dir / "junit.xml").read_text()
    assert "the same command" not in junit and "resume with: " in junit

    # Run as printed once the judge is up, it finishes that run: no other directory is started.
    with SimulatorThread(SimConfig(), port=port):
        again = _forkserver.run([sys.executable, "-m", "tracejudge", *words[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "fresh run directory" not in again.stderr
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["eval", "eval-2"]
    assert len((run_dir / "results.jsonl").read_text().splitlines()) == 2


def test_the_resume_command_keeps_every_option_but_those_that_start_over():
    from tracejudge.entrypoints.commands.parser import build_parser
    from tracejudge.entrypoints.commands.run import resume_command

    args = build_parser().parse_args(["run", "eval.yaml", "--fresh", "--force", "--set", "a=1", "--shard", "1/2", "--explain-cache",
                                      "--no-progress", "--progress-every", "0.5", "--log-level", "info"])
    assert resume_command(args, Path("runs/eval-2")) == ("tracejudge --log-level info run eval.yaml --run-dir runs/eval-2 --set a=1 "
                                                         "--shard 1/2 --explain-cache --no-progress --progress-every 0.5")
    plain = build_parser().parse_args(["run", "eval.yaml"])
    assert resume_command(plain, None) == "tracejudge run eval.yaml"
