"""The resume cursor with real processes: `tracejudge run` killed with SIGKILL, then resumed from `cursor.json`.

The dataset is 2,400 small native cases with an unreadable line, an id
repeated far after its first place, and an invalid record, so error results
and duplicates go through the cursor too. A resume from the cursor must give
the results of one uninterrupted run; an edit of the dataset before the
cursor (a changed line, an inserted line, a file cut short) must make the
resume read from the start and still finish every case exactly once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tracejudge.stages.extract.native import peek_id

from _runs import native_case, write_dataset
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")
N = 2400
# Where the planted lines sit: an id repeated far after its first place, a record with an invalid trace; a killed run is held
# from HOLD_FROM on. SIGKILL lands once the cursor is past KILL_AT records, well before the hold.
REPEAT, INVALID, HOLD_FROM, KILL_AT = 1600, 2200, 1800, 200
CONFIG = """\
dataset: {path: cases.jsonl, format: native}
metrics:
  - {type: ToolCorrectness, name: tc}
  - {type: TrajectoryMatch, name: traj, order: in_order}
  - {type: "holdmetric:hold"}
run: {dir: runs/main, flush_every: 8}
assertions: {max_invalid_share: 0.01}
"""

# A run to be killed is held from case HOLD_FROM on (its env names where), so the kill lands mid-run
# however fast the machine gets through the cases before it; other runs are not held.
HOLD = """\
import os
import time

import tracejudge


@tracejudge.metric
def hold(case, trace) -> float:
    \"\"\"1.0, after holding the run for up to 120 s at the cases from TJ_TEST_HOLD_FROM on.\"\"\"
    start = os.environ.get("TJ_TEST_HOLD_FROM")
    if start and case.id.startswith("case-") and case.id[5:] >= start:
        time.sleep(120)
    return 1.0
"""


def _lines() -> list[object]:
    tools = ["a", "b", "c", "d"]
    lines: list[object] = [native_case(f"case-{i:05d}", tools[: 1 + i % 4], tools[: 1 + (i // 3) % 4]) for i in range(N)]
    lines[50] = "this line is not JSON"
    lines[REPEAT] = lines[20]  # a repeat of an id first seen long before: its own invalid_input result
    lines[INVALID] = {"id": "bad-trace", "trace": {"steps": "not a list"}}
    return lines


def _cmd(*args: str) -> list[str]:
    return [str(TJ), "--log-level", "info", "run", "config.yaml", "--no-progress", *args]


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run(_cmd(*args), cwd=root, capture_output=True, text=True, timeout=300)


def _events(stderr: str, name: str) -> list[dict]:
    return [rec for line in stderr.splitlines() if line.startswith("{") and (rec := json.loads(line)).get("event", "").startswith(name)]


def _by_key(run_dir: Path, moved: tuple[str, str] = ("", "")) -> dict[tuple[str, int], dict]:
    """Results by (case_id, trial), without `duration_s`; `moved` = (old, new) dataset path replaced in the text."""
    out = {}
    with open(run_dir / "results.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line.replace(*moved) if moved[0] else line)
            key = (r["case_id"], r["trial"])
            assert key not in out, f"two results for {key}"
            r.pop("duration_s")
            out[key] = r
    return out


def _killed(root: Path, run_dir: str, *args: str, records: int = KILL_AT, results: int = 0) -> dict:
    """Start a run, SIGKILL it once its cursor is past `records` records and `results` results are written; the cursor it left."""
    proc = _forkserver.popen(_cmd("--run-dir", run_dir, *args), cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TJ_TEST_HOLD_FROM": f"{HOLD_FROM:05d}"})
    where = root / run_dir
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        where = next(iter(sorted(root.glob(f"{run_dir}*"))), where)  # a shard writes to RUN_DIR-shard-I-of-N
        try:
            if json.loads((where / "cursor.json").read_text())["records"] >= records and (
                    not results or (where / "results.jsonl").read_bytes().count(b"\n") >= results):
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"the run ended before its kill\n{err[-2000:]}"
    return json.loads((where / "cursor.json").read_text())


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cursor")
    write_dataset(root / "cases.jsonl", _lines())
    (root / "config.yaml").write_text(CONFIG)
    (root / "holdmetric.py").write_text(HOLD)
    done = _run(root, "--run-dir", "runs/reference")
    assert done.returncode == 0, done.stderr
    return root


def _resume_from_cursor(root: Path, run_dir: str, *args: str, records: int = KILL_AT) -> tuple[dict, subprocess.CompletedProcess[str]]:
    cursor = _killed(root, run_dir, *args, records=records, results=2 * KILL_AT if records < KILL_AT else 0)
    done = _run(root, "--run-dir", run_dir, *args)
    assert done.returncode == 0, done.stderr
    used = _events(done.stderr, "resuming from the dataset cursor")
    assert used and used[0]["records"] == cursor["records"] and used[0]["line"] == cursor["line"], done.stderr[-2000:]
    return cursor, done


def test_a_resume_after_sigkill_starts_at_the_cursor_and_equals_the_uninterrupted_run(workspace: Path) -> None:
    cursor, done = _resume_from_cursor(workspace, "runs/killed")
    assert KILL_AT <= cursor["records"] < N
    assert f"{N} already finished" not in done.stdout and "new results" in done.stdout
    got, want = _by_key(workspace / "runs" / "killed"), _by_key(workspace / "runs" / "reference")
    assert got == want
    repeats = [r for k, r in got.items() if k[0].startswith("case-00020@")]
    assert len(repeats) == 1 and f"first at {workspace / 'cases.jsonl'}:21, again at" in repeats[0]["error"]["message"], repeats
    a = json.loads((workspace / "runs" / "killed" / "summary.json").read_text())
    b = json.loads((workspace / "runs" / "reference" / "summary.json").read_text())
    assert (a["results"], a["status"], a["metrics"]) == (b["results"], b["status"], b["metrics"])
    again = _run(workspace, "--run-dir", "runs/killed")  # finished: the cursor is at the end, nothing is read or written
    assert again.returncode == 0 and f"(0 new results, {N} already finished)" in again.stdout, again.stdout


def test_a_shard_resumes_from_its_cursor(workspace: Path) -> None:
    ref = _run(workspace, "--run-dir", "runs/sref", "--shard", "1/2")
    assert ref.returncode == 0, ref.stderr
    _resume_from_cursor(workspace, "runs/shard", "--shard", "1/2", records=1)  # (N/2 cases: the second checkpoint may come late)
    assert _by_key(workspace / "runs" / "shard") == _by_key(workspace / "runs" / "sref")  # (an explicit --run-dir is used as given)


def test_trials_resume_from_the_cursor(workspace: Path) -> None:
    ref = _run(workspace, "--run-dir", "runs/tref", "--set", "run.trials=2")
    assert ref.returncode == 0, ref.stderr
    cursor, _ = _resume_from_cursor(workspace, "runs/trials", "--set", "run.trials=2", records=1)
    singles = (cursor["line"] >= 51) + (cursor["line"] >= REPEAT + 1)  # the unreadable line and the repeat: one result each, not one per trial
    assert cursor["skipped"] == 2 * cursor["records"] - singles and cursor["line"] < INVALID + 1  # the invalid record with an id holds it back
    got = _by_key(workspace / "runs" / "trials")
    assert got == _by_key(workspace / "runs" / "tref") and len(got) == 2 * N - 3


def _edited(workspace: Path, name: str, edit: str) -> tuple[Path, dict]:
    """A copy of the workspace whose run was killed, then its dataset edited before the cursor."""
    root = workspace / name
    root.mkdir()
    shutil.copy(workspace / "cases.jsonl", root / "cases.jsonl")
    (root / "config.yaml").write_text(CONFIG)
    (root / "holdmetric.py").write_text(HOLD)
    cursor = _killed(root, "runs/main")
    lines = (root / "cases.jsonl").read_bytes().splitlines(keepends=True)
    assert cursor["line"] > 10
    if edit == "changed":
        lines[3] = json.dumps(native_case("edited-3", ["a"], ["a"])).encode() + b"\n"
    elif edit == "inserted":
        lines.insert(2, json.dumps(native_case("inserted", ["a"], ["b"])).encode() + b"\n")
    elif edit == "truncated":
        data = b"".join(lines)[: cursor["offset"] // 2]
        lines = [data]
    elif edit == "touched":
        pass
    elif edit == "in place, mtime kept":  # same size, and the mtime put back, as `cp -p` or `rsync -a` leave it
        old = lines[3]
        lines[3] = old.replace(b'"case-00003"', b'"edited-3"  ', 1) if b'"case-00003"' in old else old
        assert lines[3] != old and len(lines[3]) == len(old)
    elif edit == "appended":
        lines += [json.dumps(native_case(f"more-{i}", ["a"], ["a"])).encode() + b"\n" for i in range(5)]
    kept = (root / "cases.jsonl").stat()
    (root / "cases.jsonl").write_bytes(b"".join(lines))
    if edit == "in place, mtime kept":
        os.utime(root / "cases.jsonl", ns=(kept.st_atime_ns, kept.st_mtime_ns))
    else:
        os.utime(root / "cases.jsonl", ns=(time.time_ns(), time.time_ns() + 10**9))
    return root, cursor


def _dataset_keys(path: Path) -> set[str]:
    """The id each line's result is written under: its own (read as the resume reads it, a line cut short included), else `file:line`."""
    return {peek_id(line) or f"{path}:{no}" for no, line in enumerate(path.read_bytes().splitlines(), 1)}


@pytest.mark.parametrize("edit", ["changed", "inserted", "truncated", "in place, mtime kept"])
def test_an_edit_before_the_cursor_reads_from_the_start_and_finishes_every_case_once(workspace: Path, edit: str) -> None:
    root, _ = _edited(workspace, edit, edit)
    done = _run(root, "--force")
    assert done.returncode == 0, done.stderr
    assert not _events(done.stderr, "resuming from the dataset cursor")
    assert [e["reason"] for e in _events(done.stderr, "resume cursor not used")] == [
        "the dataset is shorter than the cursor's offset" if edit == "truncated" else "the dataset changed before the cursor"]
    got = _by_key(root / "runs" / "main")  # (no key twice)
    ids = {k[0].split("@")[0] for k in got}
    assert _dataset_keys(root / "cases.jsonl") <= ids
    if edit != "truncated":
        assert {"edited-3", "inserted"} & {k[0] for k in got}
    # The run saved a new cursor from the start with its first result: the next resume uses it and finds nothing to do.
    # (Cut short, the file holds no new case: the run writes no result, but it finishes a run whose last segment was
    # killed, so it records that segment, and its checkpoint saves the cursor all the same.)
    if edit == "truncated":
        segments = json.loads((root / "runs" / "main" / "checkpoint.json").read_text())["segments"]
        assert [(s["ended"], s["results"]) for s in segments][-2:] == [("killed", segments[-2]["results"]), ("finished", 0)]
    again = _run(root)
    assert again.returncode == 0 and "(0 new results" in again.stdout, again.stdout
    assert _events(again.stderr, "resuming from the dataset cursor")


@pytest.mark.parametrize("edit", ["touched", "appended"])
def test_a_dataset_touched_or_grown_keeps_its_cursor(workspace: Path, edit: str) -> None:
    root, cursor = _edited(workspace, edit, edit)
    done = _run(root, *(["--force"] if edit == "appended" else []))
    assert done.returncode == 0, done.stderr
    used = _events(done.stderr, "resuming from the dataset cursor")
    assert used and used[0]["records"] == cursor["records"]
    got = _by_key(root / "runs" / "main")
    want = _by_key(workspace / "runs" / "reference", moved=(str(workspace / "cases.jsonl"), str(root / "cases.jsonl")))
    assert {k: v for k, v in got.items() if not k[0].startswith("more-")} == want
    assert len(got) == N + (5 if edit == "appended" else 0)


def test_a_line_with_an_id_but_broken_json_does_not_stop_the_cursor(tmp_path: Path) -> None:
    # The load stage peeks `{"id": "torn", …` as case "torn", but the line's one invalid_input result is
    # filed under its place (file:line), as any unreadable line's: the cursor must pass it, not stop there.
    lines: list[object] = [native_case(f"case-{i}", ["a"], ["a"]) for i in range(8)]
    lines[3] = '{"id": "torn", "trace": {"steps": ['
    lines[6] = '{"id": "case-1", "trace": '  # and a torn repeat of an id seen before
    write_dataset(tmp_path / "cases.jsonl", lines)
    (tmp_path / "config.yaml").write_text(CONFIG.replace('  - {type: "holdmetric:hold"}\n', ""))
    first = _run(tmp_path)
    assert first.returncode == 1 and "invalid" in first.stdout, first.stdout + first.stderr  # 2 of 8 invalid: over the 1 % gate
    cursor = json.loads((tmp_path / "runs" / "main" / "cursor.json").read_text())
    assert (cursor["offset"], cursor["records"]) == ((tmp_path / "cases.jsonl").stat().st_size, 8)
    with open(tmp_path / "cases.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(native_case("torn", ["a"], ["a"])) + "\n")  # the id the torn line seemed to have: a case of its own
    again = _run(tmp_path, "--force")
    used = _events(again.stderr, "resuming from the dataset cursor")
    assert used and used[0]["records"] == 8, again.stderr[-2000:]
    got = _by_key(tmp_path / "runs" / "main")
    assert len(got) == 9 and got[("torn", 0)]["status"] == "ok"
    assert sorted(r["status"] for r in got.values()).count("invalid_input") == 2


def test_a_broken_line_showing_the_id_of_the_next_record_is_no_duplicate_on_resume(tmp_path: Path) -> None:
    # `{"id": "b", …` cut short, then the real record "b": the first reading files the broken line under its place and
    # scores "b". A resume past the cursor (here none: checkpoint and cursor deleted, which README calls safe) skipped the
    # broken line as the finished "b" and then read the real "b" as its duplicate: one invalid_input result too many.
    lines: list[object] = [native_case(f"case-{i}", ["a"], ["a"]) for i in range(6)]
    lines[2] = '{"id": "case-3", "input": "q",'
    write_dataset(tmp_path / "cases.jsonl", lines)
    (tmp_path / "config.yaml").write_text(CONFIG.replace('  - {type: "holdmetric:hold"}\n', ""))
    first = _run(tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr  # one line in six unreadable: over the 1 % gate
    run_dir = tmp_path / "runs" / "main"
    before = _by_key(run_dir)
    assert len(before) == 6 and before[("case-3", 0)]["status"] == "ok"
    for name in ("checkpoint.json", "cursor.json", "cursor.ids"):
        (run_dir / name).unlink()
    again = _run(tmp_path)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "duplicate case id" not in again.stdout + again.stderr
    assert _by_key(run_dir) == before


def test_the_cursor_stays_before_an_unterminated_last_line(tmp_path: Path) -> None:
    # Cases appended after a last line with no newline join it: the resume must read that line again and
    # give what a fresh run of the grown file gives, not score the first appended case on its own.
    lines: list[object] = [native_case(f"case-{i}", ["a"], ["a"]) for i in range(5)]
    write_dataset(tmp_path / "cases.jsonl", lines)
    data = tmp_path / "cases.jsonl"
    with open(data, "a", encoding="utf-8") as fh:
        fh.write('{"id": "cut", "input": "I want to cancel my res')
    (tmp_path / "config.yaml").write_text(CONFIG.replace('  - {type: "holdmetric:hold"}\n', "").replace("0.01", "0.5"))
    assert _run(tmp_path).returncode == 0
    cursor = json.loads((tmp_path / "runs" / "main" / "cursor.json").read_text())
    assert cursor["records"] == 5 and cursor["offset"] < data.stat().st_size
    with open(data, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(native_case("more-0", ["a"], ["a"])) + "\n" + json.dumps(native_case("more-1", ["a"], ["a"])) + "\n")
    again = _run(tmp_path, "--force")
    assert again.returncode == 0 and _events(again.stderr, "resuming from the dataset cursor"), again.stderr[-2000:]
    fresh = _run(tmp_path, "--run-dir", "runs/fresh")
    assert fresh.returncode == 0
    got, want = _standing(tmp_path / "runs" / "main"), _standing(tmp_path / "runs" / "fresh")
    # The joined line stays unreadable. Its result supersedes the provisional one the torn line had, so it
    # is filed under the id that one showed; a fresh run files it under its place, as any unreadable line.
    assert got.pop(("cut", 0)) == want.pop((f"{data}:6", 0)) == "invalid_input"
    assert got == want and len(got) == 6


def _standing(run_dir: Path) -> dict[tuple[str, int], str]:
    """Status by (case_id, trial) of the result lines that stand (a provisional line superseded by a later one is not)."""
    from tracejudge.engine.store import iter_current_result_lines

    out = {}
    for line in iter_current_result_lines(run_dir / "results.jsonl"):
        r = json.loads(line)
        assert (r["case_id"], r["trial"]) not in out
        out[(r["case_id"], r["trial"])] = r["status"]
    return out


def test_a_torn_last_line_completed_later_is_scored_and_its_invalid_result_retired(tmp_path: Path) -> None:
    # A dataset read while its writer is mid-record: the last line is cut and unterminated, so it is invalid
    # for now (provisionally). Once the writer finishes the line, the resumed run must score the case and
    # retire the stale invalid_input, giving what a fresh run of the finished file gives.
    lines: list[object] = [native_case(f"case-{i}", ["a"], ["a"]) for i in range(5)]
    data = write_dataset(tmp_path / "cases.jsonl", lines)
    whole = json.dumps(native_case("late", ["a"], ["a"])) + "\n"
    cut = len(whole) // 2
    with open(data, "a", encoding="utf-8") as fh:
        fh.write(whole[:cut])
    (tmp_path / "config.yaml").write_text(CONFIG.replace('  - {type: "holdmetric:hold"}\n', "").replace("0.01", "0.5"))
    first = _run(tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "transient failure" not in first.stdout  # (it is not one: the line is read again, not retried)
    torn = [r for r in _by_key(tmp_path / "runs" / "main").values() if r["status"] == "invalid_input"]
    assert len(torn) == 1 and torn[0]["error"]["line"] == 6 and "no newline" in torn[0]["error"]["message"]
    again = _run(tmp_path)  # still torn: read again, still provisional, one standing result
    assert again.returncode == 0 and _standing(tmp_path / "runs" / "main")[("late", 0)] == "invalid_input"
    with open(data, "a", encoding="utf-8") as fh:
        fh.write(whole[cut:])
    again = _run(tmp_path, "--force")  # (the dataset changed since the run began: resuming needs --force)
    assert again.returncode == 0, again.stderr[-2000:]
    fresh = _run(tmp_path, "--run-dir", "runs/fresh")
    assert fresh.returncode == 0
    want = _standing(tmp_path / "runs" / "fresh")
    assert want == {**{(f"case-{i}", 0): "ok" for i in range(5)}, ("late", 0): "ok"}
    assert _standing(tmp_path / "runs" / "main") == want
    summary = json.loads((tmp_path / "runs" / "main" / "summary.json").read_text())
    assert summary["results"] == 6 and summary["status"] == {"ok": 6}


def test_a_torn_last_line_repeating_an_earlier_id_stays_provisional(tmp_path: Path) -> None:
    # The cut line shows an id seen before: its result is the duplicate's (under ID@FILE:LINE), and still
    # provisional, so once the line is finished the resume gives what a fresh run of the finished file gives.
    lines: list[object] = [native_case(f"case-{i}", ["a"], ["a"]) for i in range(3)]
    data = write_dataset(tmp_path / "cases.jsonl", lines)
    whole = json.dumps(native_case("case-1", ["a"], ["b"])) + "\n"
    with open(data, "a", encoding="utf-8") as fh:
        fh.write(whole[: len(whole) // 2])
    (tmp_path / "config.yaml").write_text(CONFIG.replace('  - {type: "holdmetric:hold"}\n', "").replace("0.01", "0.5"))
    assert _run(tmp_path).returncode == 0
    key = (f"case-1@{data}:4", 0)
    first = _by_key(tmp_path / "runs" / "main")[key]
    assert first["error"]["kind"] == "unterminated_line" and "duplicate case id" in first["error"]["message"]
    with open(data, "a", encoding="utf-8") as fh:
        fh.write(whole[len(whole) // 2:])
    assert _run(tmp_path, "--force").returncode == 0
    assert _run(tmp_path, "--run-dir", "runs/fresh").returncode == 0
    got, want = _standing(tmp_path / "runs" / "main"), _standing(tmp_path / "runs" / "fresh")
    assert got == want and want[key] == "invalid_input"
    fresh = _by_key(tmp_path / "runs" / "fresh")[key]["error"]
    standing = [json.loads(x) for x in (tmp_path / "runs" / "main" / "results.jsonl").read_text().splitlines()][-1]
    assert (standing["case_id"], standing["error"]) == (key[0], fresh)
