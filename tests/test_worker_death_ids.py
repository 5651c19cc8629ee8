"""A dead worker's results go under the ids the records' own results get, so the resume replaces every one.

A line that is not a readable record (JSON cut short, UTF-16 text) is reported under its file and
line; its dead worker's `worker_error` used to go under an id read from the line's first bytes
(`badjson`, `u16`), which no later run writes again: the run then held six results for four
records, and every resume retried the two phantoms (real processes, a metric that exits its worker).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")

METRIC = textwrap.dedent("""\
    import os
    import tracejudge as tj

    @tj.metric
    def crash_all(case: tj.Case, trace: tj.Trace) -> bool:
        if os.environ.get("CRASH") == "1":
            os._exit(9)  # the worker process dies on every case
        return True
""")


def _workspace(root: Path) -> None:
    root.mkdir()
    (root / "crashall.py").write_text(METRIC)
    good = '{{"id": "{}", "input": "x", "trace": {{"steps": []}}}}\n'
    (root / "d.jsonl").write_bytes(good.format("ok1").encode() + b'{"id": "badjson", "input": \n'
                                   + '{"id":"u16"}\n'.encode("utf-16-be") + good.format("ok2").encode())
    (root / "w.yaml").write_text('dataset: {path: d.jsonl, format: native}\nmetrics: [{type: "crashall:crash_all"}]\n'
                                 "run: {dir: out, processes: 2}\nassertions: {max_invalid_share: 1.0}\n")


def _run(root: Path, crash: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root), "CRASH": "1" if crash else "0"}
    return subprocess.run([str(TRACEJUDGE), "run", "w.yaml", "--no-progress"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=240)


def _state(root: Path) -> tuple[dict[str, tuple[str, str | None]], dict, int]:
    """(each case id's last result as (status, error kind), summary counts, junit test cases), places made relative."""
    last: dict[str, tuple[str, str | None]] = {}
    for line in (root / "out" / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        last[r["case_id"].replace(str(root), "")] = (r["status"], (r.get("error") or {}).get("kind"))
    summary = json.loads((root / "out" / "summary.json").read_text())
    cases = len(ET.parse(root / "out" / "junit.xml").getroot().findall(".//testcase"))
    return last, {"results": summary["results"], "status": summary["status"]}, cases


def test_a_resume_after_workers_died_on_unreadable_lines_ends_as_a_run_without_the_deaths(tmp_path: Path) -> None:
    healthy, crashed = tmp_path / "healthy", tmp_path / "crashed"
    _workspace(healthy)
    _workspace(crashed)
    assert _run(healthy, crash=False).returncode == 0
    want = _state(healthy)
    assert want[0] == {"ok1": ("ok", None), "/d.jsonl:2": ("invalid_input", "invalid_input"),
                       "/d.jsonl:3": ("invalid_input", "invalid_input"), "ok2": ("ok", None)}, want

    first = _run(crashed, crash=True)
    assert "worker process" in first.stderr + first.stdout, first.stderr[-2000:]
    died = _state(crashed)[0]
    assert set(died) == set(want[0]) and all(kind == "worker_error" for _, kind in died.values()), died

    _run(crashed, crash=False)
    assert _state(crashed) == want
    again = _run(crashed, crash=False)
    assert again.returncode == 0 and "worker process scoring them died" not in again.stderr + again.stdout, again.stderr[-2000:]
    assert _state(crashed) == want
