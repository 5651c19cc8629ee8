"""A dataset file deleted while a run starts: the problem is said once, and never by the count that only feeds the ETA."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from tracejudge.entrypoints.commands import failures
import _forkserver

# The run reads the file it opened; the count for the ETA opens the path again, after the file is gone. `read` waits for
# the count to have failed, so the run is still going when it does (the read runs in a thread: `engine.read_ahead`).
GONE_UNDER_THE_COUNT = '''
import dataclasses, errno, os, threading
from tracejudge.core import registry

counted = threading.Event()

def count(dataset):
    counted.set()
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(dataset.path))

def read(dataset):
    records = NATIVE.read(dataset)
    first = next(records)
    if not counted.wait(30):  # the read blocked the event loop, so the count's thread never started: the race was not run
        raise RuntimeError("the count for the ETA never ran while the read waited")
    yield first
    yield from records

NATIVE = registry.format_for("native")
gone = dataclasses.replace(NATIVE, name="gone:gone", read=read, count=count, peek_id=None)
'''


def test_a_count_for_the_eta_that_cannot_open_the_dataset_does_not_end_the_run(tmp_path: Path) -> None:
    (tmp_path / "gone.py").write_text(GONE_UNDER_THE_COUNT)
    case = {"trace": {"steps": [{"tool_calls": [{"name": "get"}]}]}, "expected_tool_calls": [{"name": "get"}]}
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", **case}) + "\n" for i in range(3)))
    (tmp_path / "c.yaml").write_text('dataset: {path: cases.jsonl, format: "gone:gone"}\nmetrics: [{type: ToolCalls}]\n'
                                     "run: {dir: run, processes: 1}\n")
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "No such file" not in proc.stderr
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 3


def test_one_missing_file_met_twice_is_one_line() -> None:
    # The run and its count met the deleted file in the same moment: both errors arrive in one exception group.
    missing = [FileNotFoundError(2, "No such file or directory", "cases.jsonl") for _ in range(2)]
    buf = io.StringIO()
    code = failures.unusable_path(BaseExceptionGroup("x", missing), Console(file=buf, width=200))
    assert code == 2 and buf.getvalue() == "error: cases.jsonl: No such file or directory\n"
