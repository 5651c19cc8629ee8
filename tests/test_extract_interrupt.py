"""A Ctrl-C stops `tracejudge extract` between two records: exit 130, every line written a whole case, none reported invalid;
the file `-o` names is left as it was.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import DATA  # noqa: E402
import _forkserver


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


def _config(tmp_path: Path) -> Path:
    cases = tmp_path / "cases.jsonl"
    _dataset(cases, 6000)
    cfg = tmp_path / "x.yaml"
    cfg.write_text(f"dataset: {{path: {cases}, format: native}}\nmetrics: [{{type: MaxToolCalls, max_calls: 20}}]\n")
    return cfg


def _interrupted(args: list[str], size: Callable[[], int], **popen: Any) -> tuple[int, str]:
    """Run `tracejudge extract ARGS`, Ctrl-C it once `size()` passes 2 MB (about 250 cases written); exit status, stderr."""
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "extract", *args], stderr=subprocess.PIPE, text=True, **popen)
    try:
        deadline = time.monotonic() + 120
        # Well into the loop, where most of the time goes to writing cases.
        while proc.poll() is None and size() < 2_000_000 and time.monotonic() < deadline:
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
    return proc.returncode, stderr


def _size(paths: Callable[[], list[Path]]) -> Callable[[], int]:
    def size() -> int:
        return sum(p.stat().st_size for p in paths() if p.exists())
    return size


def test_ctrl_c_stops_extract_between_records(tmp_path):
    # To stdout the cases go out as they are made: what was written before the Ctrl-C is whole cases, in order.
    cfg = _config(tmp_path)
    out = tmp_path / "out.jsonl"
    with open(out, "w", encoding="utf-8") as stdout:
        code, stderr = _interrupted([str(cfg), "-o", "-"], _size(lambda: [out]), stdout=stdout)
    assert code == 130, stderr[-2000:]
    assert "invalid input" not in stderr, stderr[-2000:]
    written = out.read_text(encoding="utf-8").splitlines()
    assert 0 < len(written) < 6000
    for i, line in enumerate(written):  # whole cases, in order
        assert json.loads(line)["id"] == f"c-{i}"


def test_ctrl_c_leaves_the_previous_output_as_it_was(tmp_path):
    # The file -o names was opened for writing (emptied) at the start: a Ctrl-C left part of the new cases in place of
    # the old file. The cases now go to a temporary beside it, renamed onto it only at the end.
    cfg = _config(tmp_path)
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "old", "input": "kept"}\n', encoding="utf-8")
    before = out.read_bytes()
    temporaries = lambda: [p for p in tmp_path.iterdir() if p.name not in ("out.jsonl", "cases.jsonl", "x.yaml")]  # noqa: E731
    code, stderr = _interrupted([str(cfg), "-o", str(out), "--force"], _size(temporaries), stdout=subprocess.DEVNULL)
    assert code == 130, stderr[-2000:]
    assert stderr.strip().splitlines()[-2:] == [f"extract stopped before its end: {out} is left as it was", "interrupted"], stderr
    assert out.read_bytes() == before
    assert temporaries() == []  # the partial temporary is removed
    new = tmp_path / "new.jsonl"
    code, stderr = _interrupted([str(cfg), "-o", str(new)], _size(temporaries), stdout=subprocess.DEVNULL)
    assert code == 130 and f"{new} was not written" in stderr, stderr[-2000:]
    assert not new.exists() and temporaries() == []
