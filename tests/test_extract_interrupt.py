"""A Ctrl-C stops `tracejudge extract` between two records: exit 130, every line written a whole case, none reported invalid.

Python's default SIGINT handler raised `KeyboardInterrupt` wherever the interpreter was; inside pydantic's
JSON serializer it came out as a `ValueError`, which extract took for text UTF-8 cannot encode: the case
was listed as invalid input ("…: KeyboardInterrupt"), the rest of the dataset was written and the exit
was 1. The signal is sent once the loop is well under way, where it lands while a case is being
written more often than not: on the old code this test failed in most tries, not in every one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import DATA  # noqa: E402


def _dataset(path: Path, n: int) -> None:
    from tracejudge.stages.extract.tau_bench import adapt, load_tasks
    from tracejudge.stages.load import read_json_array

    tau = DATA / "tau_bench"
    tasks = load_tasks(tau / "tasks" / "tasks_airline_test.json")
    lines = [adapt(r.payload, tasks).model_dump_json(exclude_defaults=True) for r in
             read_json_array(tau / "historical_trajectories" / "gpt-4o-airline.json")]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            line = lines[i % len(lines)]
            fh.write(f'{{"id":"c-{i}"{line[line.index(","):]}\n')


def test_ctrl_c_stops_extract_between_records(tmp_path):
    cases = tmp_path / "cases.jsonl"
    _dataset(cases, 6000)
    cfg = tmp_path / "x.yaml"
    cfg.write_text(f"dataset: {{path: {cases}, format: native}}\nmetrics: [{{type: MaxToolCalls, max_calls: 20}}]\n")
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "tracejudge", "extract", str(cfg), "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        # Well into the loop (about 250 cases written), where most of the time goes to writing cases.
        while proc.poll() is None and (not out.exists() or out.stat().st_size < 2_000_000) and time.monotonic() < deadline:
            time.sleep(0.01)
        # One Ctrl-C, then the next only once the first had time to be handled (a second one aborts at once).
        sent = 0
        while proc.poll() is None and sent < 3:
            os.kill(proc.pid, signal.SIGINT)
            sent += 1
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr[-2000:]
    assert "invalid input" not in stderr, stderr[-2000:]
    written = out.read_text(encoding="utf-8").splitlines()
    assert 0 < len(written) < 6000
    for i, line in enumerate(written):  # whole cases, in order
        assert json.loads(line)["id"] == f"c-{i}"
