"""`tracejudge report` rewrites summary.json in the order the run wrote it: a diff between the two shows changes only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
import _forkserver


def _tj(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_report_then_resume_keep_the_summary_keys_where_the_run_put_them(tmp_path: Path) -> None:
    cases = [{"id": f"c{i}", "trace": {"steps": [{"tool_calls": [{"name": "book", "arguments": {"n": i}}]}], "output": "a reservation"},
              "expected_tool_calls": [{"name": "book"}]} for i in range(4)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "c.yaml").write_text("dataset: {path: d.jsonl}\nmetrics: [{type: ToolCalls}, {type: Contains, value: reservation}]\n"
                                     "run: {dir: run}\n")
    assert _tj("run", "c.yaml", "--no-progress", cwd=tmp_path).returncode == 0
    summary = tmp_path / "run" / "summary.json"
    written = json.loads(summary.read_text())
    rebuilt = _tj("report", "run", cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    after_report = json.loads(summary.read_text())
    assert list(after_report) == list(written)  # before: usage, segments and judge moved up to the run's figures
    assert after_report == written
    assert _tj("run", "c.yaml", "--no-progress", cwd=tmp_path).returncode == 0  # nothing left: the resume changes nothing
    assert list(json.loads(summary.read_text())) == list(written)
