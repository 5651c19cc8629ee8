"""A result's `duration_s` for a record refused when admitted ends there, not where it was written.

An unreadable line behind a slow case (a live target taking its time, one case at a time) was written after it and
read as taking as long (177 s in a judged run): the viewer's "took" and junit's `time` said so too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
import _forkserver

EXE = os.path.join(os.path.dirname(sys.executable), "tracejudge")
SLEEP_S = 2.0


def test_an_unreadable_line_behind_a_slow_case_is_not_timed_by_it(tmp_path: Path) -> None:
    (tmp_path / "slow_agent.py").write_text(
        "import time\n\ndef respond(request):\n"
        f"    if request.case_id == 'slow':\n        time.sleep({SLEEP_S})\n"
        "    return {'output': 'done'}\n")
    lines = [json.dumps({"id": "slow", "input": "q"}), "{not json", json.dumps({"id": "fast", "input": "q"})]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\n"
                                     "target: {kind: python, callable: slow_agent:respond, concurrency: 1}\n"
                                     "metrics: [{type: Contains, value: done}]\nrun: {dir: run}\n")
    proc = _forkserver.run([EXE, "run", "c.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # (the unreadable line fails the default invalid-share gate)
    rows = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    bad = next(r for cid, r in rows.items() if cid.endswith("cases.jsonl:2"))
    assert bad["status"] == "invalid_input" and rows["slow"]["status"] == "ok"
    # The slow case is admitted with the unreadable line, in one chunk, and sleeps after that: whatever the machine's
    # speed, its duration exceeds the unreadable line's by the sleep.
    assert rows["slow"]["duration_s"] - bad["duration_s"] >= SLEEP_S - 0.01
