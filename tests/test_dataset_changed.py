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
import _forkserver

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
    proc = _forkserver.popen([str(TJ), "run", "config.yaml", "--no-progress"], cwd=tmp_path, stdout=subprocess.PIPE,
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



def _read_then(path: Path, records: int, then, caplog) -> tuple[int, list]:
    """`read_jsonl(path)` taking `records` records, then `then()`, then the rest and the read's end (where the file is
    looked at again): (records read, the change warnings logged)."""
    import logging

    from tracejudge.stages.load import read_jsonl

    caplog.clear()
    caplog.set_level(logging.WARNING, logger="tracejudge")
    reader = read_jsonl(path)
    got = [r for _, r in zip(range(records), reader)]  # (range first: the reader is not asked for one more)
    then()
    got += list(reader)
    said = [r for r in caplog.records if getattr(r, "tracejudge_event", "").startswith("the dataset changed while the run read it")]
    return len(got), said


def test_a_dataset_removed_once_opened_is_read_whole_and_no_change_unless_it_was_rewritten(tmp_path: Path, caplog) -> None:
    lines = [json.dumps(native_case(f"c{i}", ["a"], ["a"])) + "\n" for i in range(50)]
    data = tmp_path / "cases.jsonl"

    data.write_text("".join(lines))  # a wrapper's temporary file, removed once read: every record was scored
    assert _read_then(data, 50, data.unlink, caplog) == (50, [])

    # Removed while read (past the reader's 64 KiB buffer): the open descriptor still reads it to its end.
    big = tmp_path / "big.jsonl"
    big.write_text("".join(lines) * 60)
    assert _read_then(big, 3, big.unlink, caplog) == (3000, [])

    def cut_then_remove() -> None:  # cut short at a line's end, then removed: read to the cut, the rest lost
        import os

        os.truncate(big, len("".join(lines) * 30))
        big.unlink()
    big.write_text("".join(lines) * 60)
    read, said = _read_then(big, 3, cut_then_remove, caplog)
    assert read == 1500 and len(said) == 1 and said[0].tracejudge["records_read"] == 1500

    def rewrite_then_remove() -> None:  # rewritten in place, then removed: what was read is not what the file held
        with open(data, "r+b") as fh:
            fh.write(b'{"id":"other"' + b" " * 20)
        data.unlink()
    data.write_text("".join(lines))
    read, said = _read_then(data, 50, rewrite_then_remove, caplog)
    assert read == 50 and len(said) == 1 and said[0].tracejudge["change"] == "it was deleted or moved away"


def test_a_removed_dataset_warns_only_when_something_read_differs_from_what_it_held(tmp_path: Path, caplog) -> None:
    import os

    from tracejudge.stages.load import read_json_array

    lines = [json.dumps(native_case(f"c{i}", ["a"], ["a"])) + "\n" for i in range(50)]
    data = tmp_path / "cases.jsonl"

    def append_then_remove() -> None:  # grown before the reader's end (read too), then removed: nothing lost
        with open(data, "a") as fh:
            fh.write(lines[0].replace('"c0"', '"more"'))
        data.unlink()
    data.write_text("".join(lines))
    assert _read_then(data, 50, append_then_remove, caplog) == (51, [])

    def touch_then_remove() -> None:  # its time changed, not its bytes
        os.utime(data, ns=(time.time_ns(), time.time_ns() + 10**9))
        data.unlink()
    data.write_text("".join(lines))
    assert _read_then(data, 50, touch_then_remove, caplog) == (50, [])

    # A JSON array (τ-bench's runs): read to its closing bracket, then removed: no warning; cut short first: said.
    array = tmp_path / "runs.json"
    for cut, warned in ((False, 0), (True, 1)):
        array.write_text(json.dumps([{"id": f"r{i}", "x": "y" * 100} for i in range(20)]))
        caplog.clear()
        reader = read_json_array(array)
        got = [r for _, r in zip(range(20), reader)]
        if cut:
            os.truncate(array, 10)
        array.unlink()
        got += list(reader)
        said = [r for r in caplog.records if getattr(r, "tracejudge_event", "").startswith("the dataset changed while the run read it")]
        assert (len(got), len(said)) == (20, warned)


def test_the_refusal_of_a_changed_dataset_says_a_fixed_invalid_record_needs_fresh(tmp_path: Path) -> None:
    # A user fixed the one bad line and resumed with --force, as the refusal offered: the case stayed invalid_input
    # (never retried), and nothing had said that only --fresh reads it again.
    good = '{"id": "a", "expected_tool_calls": [{"name": "x"}], "trace": {"steps": [{"tool_calls": [{"name": "x"}]}]}}'
    data = tmp_path / "d.jsonl"
    data.write_text(good + '\n{"id": "b", "trace": {"steps": [], "bogus": 1}}\n')
    (tmp_path / "c.yaml").write_text("dataset: {path: d.jsonl}\nmetrics: [{type: ToolCalls}]\nrun: {dir: run}\nassertions: {max_invalid_share: 0.6}\n")
    tj = [sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress"]
    assert _forkserver.run(tj, cwd=tmp_path, capture_output=True, timeout=120).returncode == 0
    data.write_text(good + '\n{"id": "b", "trace": {"steps": []}}\n')
    refused = _forkserver.run(tj, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "an invalid_input one too: a record fixed since is read again only with --fresh" in refused.stderr, refused.stderr
