"""A dataset rewritten in place while a run reads it: the run says so, naming the file and what it read.

Real processes: `tracejudge run` over 3,000 native cases with a metric that holds the run at its
first case until the test has cut the dataset file short (as `> file` or an export re-run does)
and then lets it go on. The run ends with fewer results than the file had at the start; its stderr
must carry one warning naming the file, the change and the records read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _runs import native_case, write_dataset  # noqa: E402

TJ = Path(sys.executable).with_name("tracejudge")
N = 3000
HOLD = """\
import os
import time

import tracejudge


@tracejudge.metric
def hold(case, trace) -> float:
    \"\"\"1.0, after holding the first case until the file TJ_TEST_GO exists (at most 60 s); TJ_TEST_GO.held says it holds.\"\"\"
    go = os.environ.get("TJ_TEST_GO")
    if go and case.id == "case-00000":
        open(go + ".held", "w").close()
        deadline = time.monotonic() + 60
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.01)
    return 1.0
"""


def _events(stderr: str, name: str) -> list[dict]:
    return [rec for line in stderr.splitlines() if line.startswith("{") and (rec := json.loads(line)).get("event", "").startswith(name)]


def test_a_dataset_cut_short_during_the_run_is_named_with_what_was_read(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(f"case-{i:05d}", ["a"], ["a"]) for i in range(N)])
    (tmp_path / "holdmetric.py").write_text(HOLD)
    (tmp_path / "config.yaml").write_text(
        "dataset: {path: cases.jsonl, format: native}\nmetrics:\n  - {type: ToolCorrectness}\n  - {type: 'holdmetric:hold'}\n"
        "run: {dir: out, processes: 1, queue_size: 8}\n")
    go = tmp_path / "go"
    proc = subprocess.Popen([str(TJ), "run", "config.yaml", "--no-progress"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "TJ_TEST_GO": str(go)})
    # Cut at a line boundary a third of the way in, once the run is held at its first case (so reading has begun).
    deadline = time.monotonic() + 120
    while not (tmp_path / "go.held").exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert proc.poll() is None, proc.communicate()[1][-2000:]
    text = data.read_bytes()
    keep = text[: text.index(b'{"id": "case-01000"')]
    with open(data, "r+b") as fh:
        fh.truncate(len(keep))
    go.write_text("")
    out, err = proc.communicate(timeout=240)
    results = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    assert 0 < len(results) < N, (len(results), err[-2000:])
    said = _events(err, "the dataset changed while the run read it")
    assert len(said) == 1, err[-3000:]
    assert said[0]["file"] == str(data) and "cut short" in said[0]["change"]
    assert said[0]["records_read"] == len(results) and said[0]["last_line"] == 1000
