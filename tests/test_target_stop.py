"""A stop during a live-target run: no case is started after it, and every agent call already made is written.

The agent is a python target that logs each call; the second call blocks until the test has seen the run
say it is stopping, so what was started before the stop is known exactly, whatever the machine's load.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import _forkserver

AGENT = '''
import os, time
from pathlib import Path

def respond(request):
    with open("calls.log", "a") as fh:
        fh.write(request.case_id + "\\n")
    if request.case_id == "c1":
        while not Path("go").exists():  # held until the test has seen the stop taken
            time.sleep(0.05)
    return "done"
'''


def _config(tmp: Path, judged: bool) -> None:
    (tmp / "agent.py").write_text(AGENT)
    (tmp / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "hi"}) + "\n" for i in range(10)))
    judge = "  - {type: TaskCompletion}\njudge: {provider: simulator, model: gpt-4o-mini}\ncache: {dir: cache}\n" if judged else ""
    (tmp / "c.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics:\n  - {type: MaxToolCalls, max_calls: 5}\n" + judge +
                                "target: {kind: python, callable: 'agent:respond', pythonpath: ., concurrency: 1}\nrun: {dir: run}\n")


def _calls(tmp: Path) -> list[str]:
    path = tmp / "calls.log"
    return path.read_text().split() if path.exists() else []


def _stop_while_c1_is_held(tmp: Path, cmd: list[str]) -> None:
    """Run `cmd`; once c1 is at the agent, send SIGINT, wait for the run to say it is stopping, then let c1 go (exit 130)."""
    proc = _forkserver.popen(cmd, cwd=tmp, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    stopping = threading.Event()
    lines: list[str] = []

    def read() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            lines.append(line)
            if '"event": "stopping"' in line:
                stopping.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while _calls(tmp) != ["c0", "c1"]:
            assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        assert stopping.wait(60), "".join(lines)
        (tmp / "go").touch()
        assert proc.wait(120) == 130, "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(10)


@pytest.mark.parametrize("judged", [False, True], ids=["scored", "judged"])
def test_a_stop_starts_no_new_case_and_writes_every_agent_call_made(tmp_path: Path, judged: bool) -> None:
    # Judged: a case the agent answered is judged within the stop's grace, not dropped at the judge.
    _config(tmp_path, judged)
    cmd = [sys.executable, "-m", "tracejudge", "run", "c.yaml", "--progress-every", "0.2"]
    _stop_while_c1_is_held(tmp_path, cmd)
    # c2…c9 were queued behind c1 when the stop came: none was sent to the agent; c0 and c1, paid for, are written.
    assert _calls(tmp_path) == ["c0", "c1"]
    written = [json.loads(x)["case_id"] for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(written) == ["c0", "c1"]
    # The same command finishes the other eight, and no agent call is made twice.
    done = _forkserver.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(_calls(tmp_path)) == [f"c{i}" for i in range(10)]
    written = [json.loads(x)["case_id"] for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(written) == [f"c{i}" for i in range(10)]


def test_a_resume_takes_what_the_agent_answered_from_traces_jsonl_not_from_a_second_call(tmp_path: Path) -> None:
    # As a kill between a trace line and its result leaves it: traces.jsonl holds ten answers, results.jsonl three
    # (the derived checkpoint files are deleted, which is always safe). c9's case is edited (with --force): asked again.
    _config(tmp_path, judged=False)
    (tmp_path / "go").touch()
    cmd = [sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress"]
    first = _forkserver.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    run = tmp_path / "run"
    before = {json.loads(x)["case_id"]: json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()}
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    (run / "results.jsonl").write_text("".join(lines[:3]))
    for name in ("checkpoint.json", "results.idx", "cursor.json", "cursor.ids"):
        (run / name).unlink(missing_ok=True)
    cases = (tmp_path / "cases.jsonl").read_text().splitlines(keepends=True)
    cases[9] = json.dumps({"id": "c9", "input": "hello"}) + "\n"
    (tmp_path / "cases.jsonl").write_text("".join(cases))
    again = _forkserver.run([*cmd, "--force"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert sorted(_calls(tmp_path)) == sorted([f"c{i}" for i in range(10)] + ["c9"])  # only the edited case twice
    after = {json.loads(x)["case_id"]: json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()}
    assert sorted(after) == [f"c{i}" for i in range(10)]
    for cid in [f"c{i}" for i in range(3, 9)]:  # reused answers score as they did
        assert after[cid]["scores"] == before[cid]["scores"] and after[cid]["status"] == "ok"


FLAKY = '''
import time
from pathlib import Path
from tracejudge import TransientTargetError

def respond(request):
    with open("calls.log", "a") as fh:
        fh.write(request.case_id + "\\n")
    if request.case_id == "c1" and Path("flaky").exists():
        while not Path("go").exists():  # held until the test has seen the stop taken
            time.sleep(0.05)
        raise TransientTargetError("busy, try again")
    return "done"
'''


def test_a_retry_the_agent_asked_for_is_not_made_after_a_stop(tmp_path: Path) -> None:
    # c1's first call asks for a retry once the run is stopping: the retry is not made, c1 is not written, and the
    # resume asks the agent for it (and for c2…c9) again.
    _config(tmp_path, judged=False)
    (tmp_path / "agent.py").write_text(FLAKY)
    (tmp_path / "flaky").touch()
    (tmp_path / "c.yaml").write_text((tmp_path / "c.yaml").read_text().replace("concurrency: 1", "concurrency: 1, retries: 2"))
    cmd = [sys.executable, "-m", "tracejudge", "run", "c.yaml", "--progress-every", "0.2"]
    _stop_while_c1_is_held(tmp_path, cmd)
    assert _calls(tmp_path) == ["c0", "c1"]
    written = [json.loads(x)["case_id"] for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert written == ["c0"]
    (tmp_path / "flaky").unlink()
    done = _forkserver.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(_calls(tmp_path)) == sorted([f"c{i}" for i in range(10)] + ["c1"])
