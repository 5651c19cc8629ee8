"""Storage damage and a full disk: detected, named, redone; never a traceback, never a line written twice.

Real files and processes: a run directory damaged in place, `tracejudge run`
and `tracejudge report` in subprocesses, a write limit set with
`RLIMIT_FSIZE` in the child (the kernel's `EFBIG`, after a partial write)
and, when this process may mount, a 256 KiB tmpfs that really fills (`ENOSPC`).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from tracejudge.core.config import RunConfig
from tracejudge.engine import runner, store
from tracejudge.engine.manifest import ManifestMismatch
from _runs import small_tmpfs
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")
N = 300

pytestmark = pytest.mark.usefixtures("fresh_log")


def _dataset(folder: Path, n: int = N) -> Path:
    path = folder / "cases.jsonl"
    case = {"trace": {"steps": [{"tool_calls": [{"name": "a", "arguments": {"x": "y" * 50}}]}], "output": "done"}, "expected_tool_calls": [{"name": "a"}]}
    path.write_text("".join(json.dumps({"id": f"c{i}", **case}) + "\n" for i in range(n)))
    return path


def _dataset_lines(folder: Path, records: list[dict[str, Any]]) -> Path:
    path = folder / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _config(folder: Path, run_dir: Path, **run: Any) -> dict[str, Any]:
    return {"dataset": {"path": str(_dataset(folder)), "format": "native"}, "metrics": [{"type": "ToolCorrectness"}],
            "run": {"dir": str(run_dir), "flush_every": 8, **run}}


def _run(config: dict[str, Any], **kw: Any) -> runner.RunOutcome:
    return anyio.run(lambda: runner.run(RunConfig.model_validate(config), **kw))


def _keys(run_dir: Path) -> Counter[tuple[str, int]]:
    out: Counter[tuple[str, int]] = Counter()
    for line in store.iter_result_lines(run_dir / store.RESULTS):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        out[(r["case_id"], r["trial"])] += 1
    return out


def _run_and_damage(tmp_path: Path, index: int, damage: Callable[[bytes], bytes]) -> tuple[dict[str, Any], Path, bytes]:
    """Run the config, then replace line `index` of results.jsonl by `damage(line)`: (config, results path, the original line)."""
    run_dir = tmp_path / "run"
    config = _config(tmp_path, run_dir)
    _run(config)
    results = run_dir / store.RESULTS
    lines = results.read_bytes().splitlines(keepends=True)
    original, lines[index] = lines[index], damage(lines[index])
    results.write_bytes(b"".join(lines))
    return config, results, original


def test_a_damaged_line_inside_results_is_named_and_redone(tmp_path: Path) -> None:
    # the same size: only the bytes tell
    config, results, original = _run_and_damage(tmp_path, 149, lambda line: b"#" * (len(line) - 1) + b"\n")
    run_dir = results.parent
    victim = json.loads(original)["case_id"]
    (tmp_path / "c.yaml").write_text(json.dumps(config))

    again = _forkserver.run([str(TJ), "run", str(tmp_path / "c.yaml"), "--no-progress"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "damaged result line" in again.stderr and '"line": 150' in again.stderr.replace('"line":150', '"line": 150')
    assert "1 new results" in again.stdout
    assert json.loads(results.read_bytes().splitlines()[-1])["case_id"] == victim  # redone, appended
    assert json.loads((run_dir / "summary.json").read_text())["results"] == N
    assert all(n == 1 for n in _keys(run_dir).values()) and len(_keys(run_dir)) == N

    report = _forkserver.run([str(TJ), "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    assert f"{results}:150: not a valid result" in report.stderr
    # What is wrong with it, not pydantic's header ("1 validation error for CaseResult"), which says nothing of it.
    named = next(line for line in report.stderr.splitlines() if ":150: not a valid result" in line)
    assert named.endswith("(root): invalid JSON: Expecting value at column 1)"), named
    assert json.loads((run_dir / "summary.json").read_text())["results"] == N
    # A second resume finds the checkpoint consistent again: nothing redone, nothing named.
    assert _run(config).new_results == 0


def test_report_fails_the_gate_while_a_damaged_line_holds_a_counted_result(tmp_path: Path) -> None:
    config, results, _ = _run_and_damage(tmp_path, 9, lambda line: line[:30] + b"\n")  # cut short by a disk error
    run_dir = results.parent
    for _ in range(2):  # a rebuilt summary remembers what the run had counted
        report = _forkserver.run([str(TJ), "report", str(run_dir)], capture_output=True, text=True, timeout=120)
        assert report.returncode == 1, report.stdout + report.stderr
        assert f"FAIL results readable: 1 of the {N} results the run counted are missing from 1 damaged line(s)" in report.stdout
        assert "results.jsonl:10:" in report.stdout
        assert json.loads((run_dir / "summary.json").read_text())["lost_results"]["lost"] == 1
    assert _run(config).new_results == 1  # the same config redoes the case
    report = _forkserver.run([str(TJ), "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0 and "results readable" not in report.stdout, report.stdout


def test_report_tells_a_deleted_result_from_a_damaged_line(tmp_path: Path) -> None:
    # One line damaged and another deleted: it said both were "missing from 1 damaged line(s)".
    _, results, _ = _run_and_damage(tmp_path, 9, lambda line: line[:30] + b"\n")
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[:20] + lines[21:]))
    report = _forkserver.run([str(TJ), "report", str(results.parent)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 1, report.stdout + report.stderr
    assert (f"FAIL results readable: 2 of the {N} results the run counted are missing from results.jsonl (1 in damaged line(s), "
            "the other 1 cut short or deleted)") in " ".join(report.stdout.split()), report.stdout


def test_report_names_a_last_line_cut_off_mid_write(tmp_path: Path) -> None:
    # A kill mid-write leaves the last line without its line break: report said the result was "cut short or deleted"
    # and named no line, while it named every other damaged line. It names it, as compare does.
    config, results, _ = _run_and_damage(tmp_path, N - 1, lambda line: line[: len(line) // 2])
    report = _forkserver.run([str(TJ), "report", str(results.parent)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 1, report.stdout + report.stderr
    out = " ".join(report.stdout.split())
    assert f"FAIL results readable: 1 of the {N} results the run counted are missing from 1 damaged line(s) of results.jsonl" in out, out
    assert f"results.jsonl:{N}: (root): the last line ends without a line break (cut off as it was written)" in out
    assert "the line ends early (it looks truncated)" in out
    assert _run(config).new_results == 1  # the same config redoes the case


def test_report_fails_the_gate_on_a_results_file_cut_short(tmp_path: Path) -> None:
    config, results, _ = _run_and_damage(tmp_path, N - 1, lambda line: line[: len(line) // 2])  # the last line torn
    run_dir = results.parent
    data = results.read_bytes()
    results.write_bytes(data[: data.index(b"\n", len(data) // 2) + 1])  # and the second half of the file gone
    for _ in range(2):
        report = _forkserver.run([str(TJ), "report", str(run_dir)], capture_output=True, text=True, timeout=120)
        assert report.returncode == 1, report.stdout + report.stderr
        assert "results the run counted are missing from results.jsonl (cut short or edited)" in report.stdout
    assert _run(config).new_results > 0  # the same config redoes what is missing
    report = _forkserver.run([str(TJ), "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0 and "results readable" not in report.stdout, report.stdout



def test_report_on_an_emptied_results_file_says_they_are_lost_not_that_the_dataset_is_empty(tmp_path: Path) -> None:
    # It printed "the run has no results: the dataset is empty or nothing was read" beside the lost results' check.
    _, results, _ = _run_and_damage(tmp_path, 0, lambda line: line)
    results.write_bytes(b"")
    report = _forkserver.run([str(TJ), "report", str(results.parent)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 1, report.stdout + report.stderr
    assert "results the run counted are missing from results.jsonl" in report.stdout, report.stdout
    assert "dataset is empty" not in report.stdout and "no readable results" in report.stdout, report.stdout

def test_report_counts_a_case_edited_into_a_repeat_once_and_fails(tmp_path: Path) -> None:
    def repeat_the_first(line: bytes) -> bytes:
        first = json.loads((tmp_path / "run" / store.RESULTS).read_bytes().splitlines()[0])
        return json.dumps({**json.loads(line), "case_id": first["case_id"], "trial": first["trial"]}).encode() + b"\n"

    _, results, _ = _run_and_damage(tmp_path, 99, repeat_the_first)
    report = _forkserver.run([str(TJ), "report", str(results.parent)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 1, report.stdout + report.stderr
    assert "results.jsonl:100: (case" in report.stdout and "repeats an earlier line" in report.stdout
    assert json.loads((results.parent / "summary.json").read_text())["results"] == N - 1


def test_report_names_every_unreadable_line_and_never_crashes(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _run(_config(tmp_path, run_dir))
    with open(run_dir / store.RESULTS, "ab") as fh:
        fh.write(b"\xff\xfe not utf-8\n[]\n{\"case_id\": 5}\n" + b"[" * 50_000 + b"\n")
    report = _forkserver.run([str(TJ), "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    named = [line for line in report.stderr.splitlines() if "not a valid result" in line]
    assert [line.split(": not a valid")[0].rsplit(":", 1)[1] for line in named] == [str(N + k) for k in (1, 2, 3, 4)]


def test_a_deleted_or_garbled_manifest_still_refuses_a_config_change(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    config = _config(tmp_path, run_dir)
    _run(config)
    changed = {**config, "metrics": [{"type": "ToolCorrectness", "allow_extra": True}]}
    for damage in (b"", b"{garbled"):
        manifest = run_dir / store.MANIFEST
        if damage:
            manifest.write_bytes(damage)
        else:
            manifest.unlink()
        with pytest.raises(ManifestMismatch, match="allow_extra"):  # the diff, from configs.jsonl
            _run(changed)
        assert _run(config).new_results == 0  # the same config resumes, and the manifest is written again
        assert json.loads(manifest.read_text())["config_hash"] == json.loads((run_dir / "summary.json").read_text())["config_hash"]
    manifest.unlink()
    assert _run(changed, force=True).new_results == 0  # --force still resumes


def _assert_disk_full_then_resume(proc: subprocess.CompletedProcess[str], run_dir: Path, config: dict[str, Any]) -> None:
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("disk full: cannot write"), proc.stderr
    assert "are intact" in lines[0] and "resume with: tracejudge run" in lines[0]
    assert "Traceback" not in proc.stderr and "ExceptionGroup" not in proc.stderr
    kept = _keys(run_dir)
    assert 0 < len(kept) < N and all(n == 1 for n in kept.values())  # whole lines only, none twice
    assert all(line.endswith(b"\n") for line in (run_dir / store.RESULTS).read_bytes().splitlines(keepends=True))
    outcome = _run(config)
    assert outcome.new_results == N - len(kept)
    assert len(_keys(run_dir)) == N and all(n == 1 for n in _keys(run_dir).values())
    assert outcome.summary["results"] == N


def test_disk_full_by_file_size_limit_ends_with_one_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    config = _config(tmp_path, run_dir)
    (tmp_path / "c.yaml").write_text(json.dumps(config))

    def limit() -> None:  # in the child only: results.jsonl hits EFBIG mid-group
        resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, 30_000))

    proc = _forkserver.run([str(TJ), "run", str(tmp_path / "c.yaml"), "--no-progress"], capture_output=True, text=True, timeout=120, preexec_fn=limit)
    _assert_disk_full_then_resume(proc, run_dir, config)


def test_disk_full_on_a_real_small_filesystem(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "small", "256k") as mnt:
        run_dir = mnt / "run"
        config = _config(tmp_path, run_dir, )
        config["dataset"]["path"] = str(_dataset(tmp_path, N))
        filler = mnt / "filler"
        filler.write_bytes(b"\0" * (256 * 1024 - 48 * 1024))  # leave ~48 KiB: the run fills it
        (tmp_path / "c.yaml").write_text(json.dumps(config))
        proc = _forkserver.run([str(TJ), "run", str(tmp_path / "c.yaml"), "--no-progress"], capture_output=True, text=True, timeout=120)
        filler.unlink()  # space is freed: the resume finishes
        _forkserver.run(["mount", "-o", "remount,size=4m", str(mnt)], check=True)
        _assert_disk_full_then_resume(proc, run_dir, config)


def test_a_segment_whose_checkpoint_cannot_record_its_full_disk_is_not_read_as_killed(tmp_path: Path) -> None:
    # Grouped by a value each case has alone, the checkpoint takes two pages: on a tmpfs left full, its rewrite saying
    # why the segment ended cannot be written (cutting the failed group off frees one page at most), and the resume and
    # `report` called the segment killed. An empty file (no data block) records the end instead.
    with small_tmpfs(tmp_path / "small", "256k") as mnt:
        run_dir = mnt / "run"
        config = {**_config(tmp_path, run_dir), "aggregate": {"group_by": ["k"]}}
        lines = (json.loads(line) for line in Path(config["dataset"]["path"]).read_text().splitlines())
        config["dataset"]["path"] = str(_dataset_lines(tmp_path, [{**r, "metadata": {"k": r["id"]}} for r in lines]))
        filler = mnt / "filler"
        filler.write_bytes(b"\0" * (256 * 1024 - 48 * 1024))
        (tmp_path / "c.yaml").write_text(json.dumps(config))
        proc = _forkserver.run([str(TJ), "run", str(tmp_path / "c.yaml"), "--no-progress"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 3 and "disk full: cannot write" in proc.stderr, proc.stderr
        (seg,) = json.loads((run_dir / store.CHECKPOINT).read_text())["segments"]
        assert seg["ended"] == "running"  # (the rewrite did not fit: what was read as a kill)
        written = sum(_keys(run_dir).values())
        filler.unlink()
        _forkserver.run(["mount", "-o", "remount,size=4m", str(mnt)], check=True)
        shown = _forkserver.run([str(TJ), "report", str(run_dir)], capture_output=True, text=True, timeout=120)
        stopped = json.loads((run_dir / store.SUMMARY).read_text())["stopped"]
        assert stopped["how"] == "error" and stopped["reason"].startswith(f"disk full: cannot write a file in {run_dir} (no space left on "
                                                                          "the device)"), shown.stdout + shown.stderr
        outcome = _run(config)
        segments = outcome.summary["segments"]
        assert [(s["ended"], s.get("error"), s["results"]) for s in segments] == [
            ("error", "OSError: [Errno 28] No space left on device", written), ("finished", None, N - written)]
        _run(config)  # (the mark of a segment the checkpoint now records is removed by the next resume)
        assert not [p.name for p in run_dir.iterdir() if p.name.startswith(".ended")]
