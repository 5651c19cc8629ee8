"""A finished run on a disk that is full: `tracejudge view` still serves it (its index in memory) and `tracejudge
report` says in one line which file it could not write, why, and the command to run again.

Real parts: a run made by `tracejudge run`, copied onto a small tmpfs that is then filled (skipped where this process
may not mount one), the viewer as a process answering real HTTP on 127.0.0.1, `report` as a process.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _runs import copy_run, http_get, native_case, small_tmpfs, view_process, write_config, write_dataset
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")


@contextmanager
def _full_disk_run(tmp_path: Path, stale: tuple[str, ...]) -> Iterator[Path]:
    """A run of 30 cases on a 1 MiB tmpfs with no block left, the reports named in `stale` an earlier segment's (and
    large: removed, they free what a stand-in needs), and report.html an earlier segment's too."""
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i:02d}", ["lookup", "book"], ["lookup"]) for i in range(30)])
    made = _forkserver.run([str(TJ), "run", str(write_config(tmp_path / "c.yaml", data, tmp_path / "run")), "--no-progress"],
                           capture_output=True, text=True, timeout=300)
    assert made.returncode in (0, 1), made.stdout + made.stderr
    with small_tmpfs(tmp_path / "small", "1m") as mnt:
        run = copy_run(tmp_path / "run", mnt / "run")
        # An earlier segment's reports, saying PASS: what `report` replaces, and cannot write on this disk.
        for name in (*stale, "report.html"):
            old = (run / name).read_text(encoding="utf-8")
            (run / name).write_text(old + STALE * (2000 if name in stale else 1), encoding="utf-8")
        with open(mnt / "filler", "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * 4096)
            except OSError:
                pass  # (full: what the test wants)
        yield run


STALE = "<!-- an earlier segment's -->\n"


@pytest.fixture
def full_run(tmp_path: Path) -> Iterator[Path]:
    """A run of 30 cases on a 1 MiB tmpfs with no block left, its junit.xml and report.html an earlier segment's."""
    with _full_disk_run(tmp_path, ("junit.xml",)) as run:
        yield run


def test_the_viewer_serves_a_run_on_a_full_disk_from_an_index_in_memory(full_run: Path) -> None:
    with view_process(str(full_run)) as (url, proc):
        for page in ("/run/run", "/run/run/cases", "/run/run/cases?below=tc", "/run/run/case?id=c07"):
            status, body = http_get(url + page)
            assert status == 200, (page, body[:400])
        assert "c29" in http_get(url + "/run/run/cases?size=50")[1] and "c00" in http_get(url + "/run/run/cases?below=tc")[1]
        proc.terminate()
        err = proc.communicate(timeout=30)[1]
    assert f"tracejudge view: {full_run / 'view.idx'} cannot be written" in err and "kept in memory" in err, err
    assert "Traceback" not in err and not (full_run / "view.idx").exists()


def test_report_on_a_full_disk_names_the_file_the_cause_and_the_command(full_run: Path) -> None:
    proc = _forkserver.run([str(TJ), "report", str(full_run)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.match(rf"disk full: cannot write {re.escape(str(full_run))}/\S+ \(no space left on the device\); ", lines[0]), lines[0]
    assert lines[0].endswith(f"Free space, then run again: tracejudge report {full_run}"), lines[0]
    assert "resume" not in lines[0] and "redone" not in lines[0]
    # The earlier segment's junit.xml is not left to be read as this run's: one `run` error stands in its place.
    junit = (full_run / "junit.xml").read_text(encoding="utf-8")
    assert "earlier segment" not in junit and 'tests="1" failures="0" errors="1"' in junit
    assert f"{full_run / 'junit.xml'} could not be written (No space left on device)" in junit
    assert f"then write it with: tracejudge report {full_run}" in junit
    # Nor the earlier report.html, which this `report` never reached: a page saying why stands in for it.
    page = (full_run / "report.html").read_text(encoding="utf-8")
    assert "earlier segment" not in page and "verdict: ERROR" in page and "PASS" not in page, page
    assert f"{full_run / 'report.html'} was not written: {full_run / 'junit.xml'} could not be written before it (No space left on device)" in page
    (full_run.parent / "filler").unlink()
    again = _forkserver.run([str(TJ), "report", str(full_run)], capture_output=True, text=True, timeout=300)
    assert again.returncode in (0, 1) and (full_run / "junit.xml").exists(), again.stdout + again.stderr
    shutil.rmtree(full_run)


def test_a_report_md_that_cannot_be_written_leaves_no_report_of_an_earlier_segment(tmp_path: Path) -> None:
    # report.md is written first: when it failed, junit.xml and report.html were left as the earlier segment wrote them.
    with _full_disk_run(tmp_path, ("report.md", "junit.xml")) as run:
        proc = _forkserver.run([str(TJ), "report", str(run)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 3 and f"disk full: cannot write {run / 'report.md'} (no space left" in proc.stderr, proc.stderr
        md, junit, page = ((run / name).read_text(encoding="utf-8") for name in ("report.md", "junit.xml", "report.html"))
        assert f"{run / 'report.md'} could not be written (No space left on device); this file stands in for it" in md, md
        for text, name in ((junit, "junit.xml"), (page, "report.html")):
            assert f"{run / name} was not written: {run / 'report.md'} could not be written before it" in text, text
        assert all("earlier segment" not in text and "PASS" not in text for text in (md, junit, page))
        assert "verdict: ERROR" in md and f"then write it with: tracejudge report {run}" in md
        (run.parent / "filler").unlink()
        again = _forkserver.run([str(TJ), "report", str(run)], capture_output=True, text=True, timeout=300)
        assert again.returncode in (0, 1) and "Verdict: PASS" in (run / "report.md").read_text(encoding="utf-8"), again.stderr
        shutil.rmtree(run)
