"""User code (a metric, an agent, an adapter) raising an exception whose `__str__` itself raises: the failure is
described by the exception's type, never by the second error (which also made an adapter's bug a crash)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
import _forkserver

USER_CODE = '''
import tracejudge

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("the text broke")

@tracejudge.metric
def metric(case, trace):
    raise Unprintable()

def agent(request):
    raise Unprintable()

def adapter(record):
    raise Unprintable()

def read(dataset):
    raise Unprintable()
    yield

import dataclasses
from tracejudge.core import registry

reader = dataclasses.replace(registry.format_for("native"), name="usercode:reader", read=read, count=None, peek_id=None)
'''

CASE = {"id": "c1", "input": "hi", "trace": {"steps": [{"tool_calls": [{"name": "get"}]}], "output": "ok"}}
UNREADABLE = "Unprintable: (its message could not be read: its __str__ raised RuntimeError)"


def _run(tmp_path: Path, name: str, config: str) -> dict:
    (tmp_path / f"{name}.yaml").write_text(config + f"run: {{dir: {name}}}\n")
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", f"{name}.yaml", "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr  # a verdict (the gate fails on the null score or the failed case), not a crash
    assert "the text broke" not in proc.stderr + proc.stdout and "internal error" not in proc.stderr, proc.stderr
    [result] = [json.loads(line) for line in (tmp_path / name / "results.jsonl").read_text().splitlines()]
    return result


def test_an_exception_whose_text_cannot_be_read_is_named_by_its_type(tmp_path: Path) -> None:
    (tmp_path / "usercode.py").write_text(USER_CODE)
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")

    scored = _run(tmp_path, "metric", 'dataset: {path: cases.jsonl}\nmetrics: [{type: "usercode:metric"}]\n')
    reason = scored["scores"]["metric"]["reason"]
    assert reason.startswith(f"metric raised {UNREADABLE} (at "), reason

    target = _run(tmp_path, "target", 'dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\n'
                                      'target: {kind: python, callable: "usercode:agent"}\n')
    assert target["status"] == "target_error" and target["error"]["message"] == UNREADABLE, target

    adapted = _run(tmp_path, "adapter", 'dataset: {path: cases.jsonl, format: "usercode:adapter"}\nmetrics: [{type: ToolCalls}]\n')
    assert adapted["status"] == "invalid_input", adapted
    assert adapted["error"]["message"] == f"adapter usercode:adapter failed: {UNREADABLE}"


def test_a_crash_on_such_an_exception_is_still_one_line_and_a_crash_log(tmp_path: Path) -> None:
    # A reader of the user's own raising it ends the run (exit 3); the one line said nothing but a traceback of the
    # second error, raised while the first was being described.
    (tmp_path / "usercode.py").write_text(USER_CODE)
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    (tmp_path / "c.yaml").write_text('dataset: {path: cases.jsonl, format: "usercode:reader"}\nmetrics: [{type: ToolCalls}]\n'
                                     "run: {dir: run}\n")
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    crash = tmp_path / "run" / "crash.log"
    assert proc.stderr.strip().splitlines() == [f"internal error: {UNREADABLE} (traceback in {crash})"], proc.stderr
    assert "Unprintable" in crash.read_text()
