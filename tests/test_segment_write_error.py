"""A segment stopped by a write error records that error (`ended: error`), not `killed`; the resume finishes the run.

The write error is real: the run's process gets a file size limit (`RLIMIT_FSIZE`, SIGXFSZ ignored), so
`results.jsonl` cannot grow past it and the write fails with EFBIG, as a full disk fails with ENOSPC.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

from _runs import native_case, write_config, write_dataset
import _forkserver

EXE = os.path.join(os.path.dirname(sys.executable), "tracejudge")


def _limited(max_bytes: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write then fails with EFBIG instead of killing the process
        # Bytecode the command compiles under the limit (numpy's largest, on a cold cache) would be cut at it and then
        # shared with every later command through the suite's bytecode cache (`conftest._share_bytecode`).
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))
    return apply


def test_a_segment_stopped_by_a_failed_write_ends_error_with_the_cause(tmp_path: Path) -> None:
    n = 3000
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i:05d}", ["a", "b"], ["a", "b"]) for i in range(n)])
    cfg = write_config(tmp_path / "cfg.yaml", data, tmp_path / "run")
    first = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300, preexec_fn=_limited(200_000))
    assert first.returncode == 3 and "file size limit" in first.stderr, first.stderr
    results = tmp_path / "run" / "results.jsonl"
    written = len(results.read_text().splitlines())
    assert 0 < written < n
    (seg,) = json.loads((tmp_path / "run" / "checkpoint.json").read_text())["segments"]
    assert seg["ended"] == "error" and seg["error"] == "OSError: [Errno 27] File too large" and seg["lines_at_end"] == written
    # junit.xml says it plainly, naming the file, as the command's own line does (it read "internal error: OSError: …").
    junit = (tmp_path / "run" / "junit.xml").read_text(encoding="utf-8")
    assert f"disk full: cannot write {results} (file size limit reached); the results already written are kept. Free space, then " \
           f"resume with: tracejudge run {cfg} --no-progress" in junit and "internal error" not in junit and "Errno" not in junit, junit

    again = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    segments = json.loads((tmp_path / "run" / "summary.json").read_text())["segments"]
    assert [s["ended"] for s in segments] == ["error", "finished"]
    assert segments[0]["results"] == written and "lines_at_end" not in segments[0]
    assert sum(s["results"] for s in segments) == n == len(results.read_text().splitlines())


def _report_stopped(run_dir: Path) -> dict:
    shown = _forkserver.run([EXE, "report", str(run_dir)], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 130, shown.stdout + shown.stderr
    assert "killed" not in shown.stdout and "disk full: cannot write" in shown.stdout and "(file size limit reached)" in shown.stdout, shown.stdout
    return json.loads((run_dir / "summary.json").read_text())["stopped"]


def test_report_names_the_write_error_of_a_segment_that_wrote_no_summary(tmp_path: Path) -> None:
    # Stopped by a failed write of results.jsonl: no summary may claim what it holds, so none is written; `report`
    # reads the cause from the segment's record, not a kill.
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i:05d}", ["a", "b"], ["a", "b"]) for i in range(3000)])
    cfg = write_config(tmp_path / "cfg.yaml", data, tmp_path / "run")
    first = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300, preexec_fn=_limited(200_000))
    assert first.returncode == 3 and not (tmp_path / "run" / "summary.json").exists(), first.stderr
    stopped = _report_stopped(tmp_path / "run")
    assert stopped["how"] == "error" and stopped["segment"] == 1 and stopped["exit_status"] == 3
    # (plainly, naming the file the segment's record keeps, as the run's own reports say it)
    assert stopped["reason"].startswith(f"disk full: cannot write {tmp_path / 'run' / 'results.jsonl'} (file size limit reached); the "
                                        "results already written are kept. Free space, then resume with: "), stopped["reason"]


def test_a_segment_whose_last_results_fail_as_it_closes_records_the_error(tmp_path: Path) -> None:
    # Under a 6 kB limit the first write that fails is a report's spool file, mid-run, and then the results' last group
    # as the segment closes: that failure used to rise from the close before the segment's record was written, so the
    # checkpoint still said `running` and both `report` and the resume called the segment killed.
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i:05d}", ["a", "b"], ["a", "b"]) for i in range(3000)])
    cfg = write_config(tmp_path / "cfg.yaml", data, tmp_path / "run")
    first = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300, preexec_fn=_limited(6_000))
    assert first.returncode == 3 and "file size limit" in first.stderr, first.stderr
    (seg,) = json.loads((tmp_path / "run" / "checkpoint.json").read_text())["segments"]
    assert seg["ended"] == "error" and seg["error"] == "OSError: [Errno 27] File too large"
    assert _report_stopped(tmp_path / "run")["how"] == "error"

    again = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    segments = json.loads((tmp_path / "run" / "summary.json").read_text())["segments"]
    assert [(s["ended"], s.get("error")) for s in segments] == [("error", "OSError: [Errno 27] File too large"), ("finished", None)]


def test_a_closing_checkpoint_that_cannot_be_written_records_the_error(tmp_path: Path) -> None:
    # Grouped by a value each case has alone, the closing checkpoint (the fold's state, ~50 kB) outgrows a 40 kB limit
    # that results.jsonl (~11 kB) stays under: its failed write used to rise from the close before the segment's record
    # was written, and left its half-written temporary file. Now the earlier checkpoint on disk is rewritten to say why.
    n = 20
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i:03d}", ["a", "b"], ["a", "b"][:1 + i % 2], tags=[f"t{i}"],
                                                                 metadata={"k": f"v{i}"}) for i in range(n)])
    cfg = write_config(tmp_path / "cfg.yaml", data, tmp_path / "run", aggregate={"group_by": ["k"]})
    first = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300, preexec_fn=_limited(40_000))
    assert first.returncode == 3 and "file size limit" in first.stderr, first.stderr
    run = tmp_path / "run"
    assert len((run / "results.jsonl").read_text().splitlines()) == n
    assert not list(run.glob(".*.tmp"))
    (seg,) = json.loads((run / "checkpoint.json").read_text())["segments"]
    assert seg["ended"] == "error" and seg["error"] == "OSError: [Errno 27] File too large" and seg["lines_at_end"] == n
    assert _report_stopped(run)["how"] == "error"

    again = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    segments = json.loads((run / "summary.json").read_text())["segments"]
    assert [(s["ended"], s["results"]) for s in segments] == [("error", n), ("finished", 0)]


def test_a_run_complete_before_a_report_fails_says_so(tmp_path: Path) -> None:
    # Under a 25 kB limit results.jsonl (~21 kB), the checkpoint, summary.json and junit.xml fit and report.html (~35 kB)
    # does not: the segment closed `finished`, every result written, so the last line says the run is complete and that
    # `report` writes what is missing, not that results will be redone on a resume.
    n = 40
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i:03d}", ["a", "b"], ["a", "b"][:1 + i % 2]) for i in range(n)])
    cfg = write_config(tmp_path / "cfg.yaml", data, tmp_path / "run")
    run = tmp_path / "run"
    first = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300, preexec_fn=_limited(25_000))
    assert first.returncode == 3, first.stdout + first.stderr
    assert first.stderr.startswith(f"disk full: the run is complete, its {n} results all in ") and "redone" not in first.stderr, first.stderr
    assert first.stderr.rstrip().endswith(f"then write them with: tracejudge report {run}"), first.stderr
    (seg,) = json.loads((run / "checkpoint.json").read_text())["segments"]
    assert seg["ended"] == "finished" and seg["results"] == n
    # (a page saying why stands in for report.html: small, it fits under the limit the report did not)
    assert f"{run / 'report.html'} could not be written (File too large)" in (run / "report.html").read_text(encoding="utf-8")

    shown = _forkserver.run([EXE, "report", str(run)], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0 and "verdict: PASS" in shown.stdout, shown.stdout + shown.stderr
    assert (run / "report.html").exists() and json.loads((run / "summary.json").read_text())["complete"] is True
