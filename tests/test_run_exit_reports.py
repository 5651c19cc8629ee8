"""The reports in a run directory say what the exit status says, however the run ended.

A run finishes PASS; the dataset grows; `tracejudge run --force` then stops on an error (a judge that cannot be
reached: exit 3) or is aborted (Ctrl-C twice: exit 130). junit.xml, report.md and report.html must not stay last
night's PASS: they are rewritten as INTERRUPTED, naming the cause. A run killed with SIGKILL cannot write anything;
`tracejudge report` on it then rewrites them from what is there. And `run` and `report` on one directory apply the
same assertions: those of the last `run`.

Real processes only: `tracejudge run` and `report` in subprocesses, real SIGINT and SIGKILL, a python target that holds
a case until the test lets it go, a judge URL on a loopback port nothing listens on.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _runs import sigkill_when
import _forkserver

AGENT = '''
import os, time

def respond(request):
    if request.case_id == os.environ.get("HELD", "c5"):  # held until the test lets it go (or the run is stopped)
        open(os.path.join(os.path.dirname(__file__), "holding"), "w").close()
        while not os.path.exists(os.path.join(os.path.dirname(__file__), "release")):
            time.sleep(0.01)
    return {"output": "ok", "trace": {"steps": [{"tool_calls": [{"name": "a", "arguments": {}}]}], "output": "ok"}}
'''


def _tj(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _junit(run_dir: Path) -> ET.Element:
    return ET.parse(run_dir / "junit.xml").getroot()


def _run_error(run_dir: Path) -> str:
    """The message of junit.xml's `run` test case in `<error>` ('' when there is none)."""
    for case in _junit(run_dir).iter("testcase"):
        if case.get("name") == "run" and (err := case.find("error")) is not None:
            return err.get("message") or ""
    return ""


def _verdict(run_dir: Path) -> str:
    return json.loads((run_dir / "summary.json").read_text())["verdict"]["verdict"]


def _cases(path: Path, ids: range) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for i in ids:
            fh.write(json.dumps({"id": f"c{i}", "input": f"Refund order {i}", "expected_tool_calls": [{"name": "a"}]}) + "\n")


def _agent_run(tmp_path: Path) -> Path:
    """A finished PASS run of four cases answered by a python agent; then the dataset grows by four (c4..c7)."""
    (tmp_path / "agent.py").write_text(AGENT)
    _cases(tmp_path / "cases.jsonl", range(4))
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\n"
                                     "target: {kind: python, callable: agent:respond, concurrency: 1}\n"
                                     "metrics: [{type: ToolCalls}]\nrun: {dir: run, flush_every: 1}\n")
    first = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert first.returncode == 0 and "verdict: PASS" in first.stdout, first.stdout + first.stderr
    run_dir = tmp_path / "run"
    assert _verdict(run_dir) == "PASS" and not _run_error(run_dir)
    _cases(tmp_path / "cases.jsonl", range(4, 8))  # tonight's data grew
    return run_dir


def _start_forced(tmp_path: Path, held: str = "c5") -> subprocess.Popen[str]:
    """`tracejudge run c.yaml --force` (the grown dataset), once the agent holds case `held`."""
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--force", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HELD": held})
    deadline = time.monotonic() + 60
    while not (tmp_path / "holding").exists():
        assert proc.poll() is None and time.monotonic() < deadline, f"the agent was not called on {held}"
        time.sleep(0.02)
    return proc


def test_a_resume_aborted_by_a_second_ctrl_c_leaves_no_pass_in_its_reports(tmp_path: Path) -> None:
    run_dir = _agent_run(tmp_path)
    proc = _start_forced(tmp_path)
    try:
        proc.send_signal(signal.SIGINT)  # no new cases; the held one is waited for (a live target's cases are not cut)...
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)  # ... and the second one aborts
        out, err = proc.communicate(timeout=60)
    finally:
        (tmp_path / "release").touch()
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "verdict: INTERRUPTED (aborted" in out
    # What the exit status says, the reports say: no green junit.xml, no "**Verdict: PASS**" from the run before.
    assert _verdict(run_dir) == "INTERRUPTED"
    why = _run_error(run_dir)
    assert why.startswith("verdict: INTERRUPTED") and "aborted" in why and "exit status 130" in why, why
    assert int(_junit(run_dir).get("errors")) >= 1
    assert "**Verdict: INTERRUPTED**" in (run_dir / "report.md").read_text()
    assert 'id="verdict" class="badge INTERRUPTED"' in (run_dir / "report.html").read_text()
    # The cause stays with the run: `report` names it too, and the command that resumes.
    rep = _tj("report", "run", cwd=tmp_path)
    assert rep.returncode == 130, rep.stdout + rep.stderr
    assert "aborted" in _run_error(run_dir) and "aborted" in rep.stdout
    # Resumed to the end, the run and its reports say PASS again, with no trace of the abort.
    done = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0 and "verdict: PASS" in done.stdout, done.stdout + done.stderr
    assert _verdict(run_dir) == "PASS" and not _run_error(run_dir) and "stopped" not in json.loads((run_dir / "summary.json").read_text())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _judged(tmp_path: Path) -> tuple[Path, str]:
    """A config judging TaskCompletion with the simulator, and the `--set` that points the judge at a closed port."""
    _cases(tmp_path / "cases.jsonl", range(4))
    for line in (tmp_path / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        case["trace"] = {"steps": [{"tool_calls": [{"name": "a", "arguments": {}}]}], "output": "Refunded."}
        with open(tmp_path / "data.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(case) + "\n")
    (tmp_path / "eval.yaml").write_text("dataset: {path: data.jsonl, format: native}\nmetrics: [{type: ToolCalls}, {type: TaskCompletion}]\n"
                                        "judge: {provider: simulator, model: gpt-4o-mini}\ncache: {dir: cache}\nrun: {dir: run}\n")
    down = (f'judge={{provider: openai, model: gpt-4o-mini, base_url: "http://127.0.0.1:{_closed_port()}/v1", api_key_env: null, '
            "max_retry_wait_s: 0.2}")
    return tmp_path / "run", down


def test_a_resume_stopped_by_an_unreachable_judge_leaves_no_pass_in_its_reports(tmp_path: Path) -> None:
    run_dir, down = _judged(tmp_path)
    first = _tj("run", "eval.yaml", "--no-progress", cwd=tmp_path)
    assert first.returncode == 0 and "verdict: PASS" in first.stdout, first.stdout + first.stderr
    with open(tmp_path / "data.jsonl", "a", encoding="utf-8") as fh:  # the dataset grows
        fh.write(json.dumps({"id": "c9", "input": "Refund order 9", "expected_tool_calls": [{"name": "a"}],
                             "trace": {"steps": [{"tool_calls": [{"name": "a", "arguments": {}}]}], "output": "Refunded."}}) + "\n")
    stopped = _tj("run", "eval.yaml", "--force", "--no-progress", "--set", down, cwd=tmp_path)
    assert stopped.returncode == 3 and "judge: unreachable" in stopped.stderr, stopped.stdout + stopped.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is False and summary["verdict"]["verdict"] == "INTERRUPTED"
    assert summary["stopped"]["exit_status"] == 3 and "judge: unreachable" in summary["stopped"]["reason"]
    why = _run_error(run_dir)
    assert "exit status 3" in why and "judge: unreachable" in why, why
    md = (run_dir / "report.md").read_text()
    assert "**Verdict: INTERRUPTED**" in md and "judge: unreachable" in md and "**Verdict: PASS**" not in md


def test_a_first_run_stopped_by_an_unreachable_judge_writes_a_junit_xml_naming_the_cause(tmp_path: Path) -> None:
    run_dir, down = _judged(tmp_path)
    stopped = _tj("run", "eval.yaml", "--no-progress", "--set", down, cwd=tmp_path)
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    # A CI step publishing junit.xml whatever the outcome shows the run red, with the reason (it found no file at all).
    root = _junit(run_dir)
    assert int(root.get("errors")) >= 1
    assert "judge: unreachable" in _run_error(run_dir)


@pytest.mark.parametrize("held", ["c4", "c6"])
def test_a_resume_killed_with_sigkill_is_reported_interrupted_by_the_next_report(tmp_path: Path, held: str) -> None:
    # A kill writes nothing: the reports stay the last segment's until `report` rebuilds them from the results there. Killed
    # before its first new result (c4 held) the resume left no record of its own in checkpoint.json, whose last segment
    # says `finished`: `report` read the run as finished and said PASS (exit 0) over 4 of the 8 cases.
    run_dir = _agent_run(tmp_path)
    proc = _start_forced(tmp_path, held)
    results = run_dir / "results.jsonl"
    sigkill_when(proc, lambda: held == "c4" or len(results.read_text().splitlines()) >= 6, "c4 and c5 were not written", timeout_s=60)
    rep = _tj("report", "run", cwd=tmp_path)
    assert rep.returncode == 130, rep.stdout + rep.stderr
    assert rep.stdout.splitlines()[-1] == "verdict: INTERRUPTED (resume with: tracejudge run c.yaml --no-progress)"
    assert _verdict(run_dir) == "INTERRUPTED" and _run_error(run_dir).startswith("verdict: INTERRUPTED")
    assert "**Verdict: INTERRUPTED**" in (run_dir / "report.md").read_text()
    # The kill is said as the resume's own first result says it (`how: killed`, the command that resumes); no cause is made
    # up for it, nor an earlier segment's taken for it.
    stopped = json.loads((run_dir / "summary.json").read_text())["stopped"]
    assert stopped["how"] == "killed" and "exit_status" not in stopped, stopped
    assert stopped["reason"].endswith("resume with: tracejudge run c.yaml --no-progress"), stopped


def test_report_applies_the_assertions_of_the_last_run_not_those_the_run_began_with(tmp_path: Path) -> None:
    lines = [{"id": f"c{i}", "expected_tool_calls": [{"name": "a"}],
              "trace": {"steps": [{"tool_calls": [{"name": "a" if i % 3 else "b", "arguments": {}}]}], "output": "ok"}} for i in range(6)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lines))  # ToolCalls mean 4/6

    def config(min_mean: float) -> None:
        (tmp_path / "eval.yaml").write_text("dataset: {path: data.jsonl, format: native}\nmetrics: [{type: ToolCalls}]\nrun: {dir: run}\n"
                                            f"assertions:\n  metrics:\n    ToolCalls: {{min_mean: {min_mean}}}\n")

    run_dir = tmp_path / "run"
    config(0.5)
    assert _tj("run", "eval.yaml", "--no-progress", cwd=tmp_path).returncode == 0
    config(0.9)  # tightened, and run again on the finished run
    tight = _tj("run", "eval.yaml", "--no-progress", cwd=tmp_path)
    assert tight.returncode == 1 and "required >= 0.9" in tight.stdout, tight.stdout + tight.stderr
    rep = _tj("report", "run", cwd=tmp_path)
    assert rep.returncode == 1 and "required >= 0.9" in rep.stdout and rep.stdout.splitlines()[-1] == "verdict: FAIL", rep.stdout + rep.stderr
    assert _verdict(run_dir) == "FAIL" and int(_junit(run_dir).get("failures")) == 1
    config(0.5)  # and loosened again
    assert _tj("run", "eval.yaml", "--no-progress", cwd=tmp_path).returncode == 0
    again = _tj("report", "run", cwd=tmp_path)
    assert again.returncode == 0 and "required >= 0.5" in again.stdout, again.stdout + again.stderr
