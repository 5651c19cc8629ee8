"""A run directory on a read-only file system is bad input (exit 2, one line naming the path), not a crash, for a
command that writes it; a finished run there is read as any other by `report`, `compare` and `view`.

Root, whom file modes do not stop, meets a directory it cannot write only on a read-only mount; so the
runs here are started in a private mount namespace (`unshare --map-root-user --mount`, no privileges
needed) where the run directory, or only its results file, is bind-mounted read-only. The mount goes
away with the process. Skipped where user namespaces are not available.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _runs import native_case, view_process, write_dataset  # noqa: E402
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")
CONFIG = "dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: ToolCorrectness}]\nrun: {dir: runs/main}\n"


def _namespaces_work(tmp: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = _forkserver.run(["unshare", "--map-root-user", "--mount", "sh", "-c", f"mount --bind {tmp} {tmp}"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def _read_only(target: Path, argv: list[str]) -> list[str]:
    """The command line that runs `argv` with `target` (a folder or file) bind-mounted read-only over itself."""
    t = shlex.quote(str(target))
    script = f"mount --bind {t} {t} && mount -o remount,bind,ro {t} && exec {shlex.join(argv)}"
    return ["unshare", "--map-root-user", "--mount", "sh", "-c", script]


def _run_read_only(root: Path, target: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`tracejudge ARGS` (default: run the config again) in `root` with `target` read-only."""
    argv = [str(TJ), *(args or ("run", "config.yaml", "--no-progress", "--force"))]
    return _forkserver.run(_read_only(target, argv), cwd=root, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("what", ["run directory", "results file"])
def test_a_read_only_run_directory_or_results_file_is_one_line_and_exit_2(tmp_path: Path, what: str) -> None:
    if not _namespaces_work(tmp_path):
        pytest.skip("no unprivileged mount namespaces here (unshare --map-root-user --mount)")
    write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", ["a"], ["a"]) for i in range(3)])
    (tmp_path / "config.yaml").write_text(CONFIG)
    first = _forkserver.run([str(TJ), "run", "config.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    with open(tmp_path / "cases.jsonl", "a", encoding="utf-8") as fh:  # a new case: the resume has a result to write (--force)
        fh.write('{"id": "c9", "trace": {"steps": []}}\n')
    run_dir = tmp_path / "runs" / "main"
    target = run_dir if what == "run directory" else run_dir / "results.jsonl"
    got = _run_read_only(tmp_path, target)
    assert got.returncode == 2, got.stdout + got.stderr
    assert "internal error" not in got.stderr and "Traceback" not in got.stderr, got.stderr
    lines = [line for line in got.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and str(run_dir) in lines[0] and "Read-only file system" in lines[0], got.stderr
    assert not (run_dir / "crash.log").exists()
    if what == "run directory":
        # With progress lines on (stderr not a terminal): no closing progress line for a run that never started, and the
        # one line names the setting (it named the lock file alone, after a `progress_done` line).
        got = _run_read_only(tmp_path, target, "run", "config.yaml", "--force")
        assert got.returncode == 2 and "progress_done" not in got.stderr, got.stderr
        assert got.stderr.strip().startswith(f"error: run.dir: cannot write in {run_dir}: Read-only file system"), got.stderr


def test_a_finished_run_on_read_only_media_is_read_by_report_compare_and_view(tmp_path: Path) -> None:
    # It used to be refused ("error: …/.summary.json.N.tmp: Read-only file system") by `report`, which rewrites
    # its summary and reports. Reading needs no write: the figures and verdict are computed, nothing is written.
    if not _namespaces_work(tmp_path):
        pytest.skip("no unprivileged mount namespaces here (unshare --map-root-user --mount)")
    import json
    import urllib.request

    write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", ["a"], ["a"] if i else ["b"]) for i in range(3)])
    (tmp_path / "config.yaml").write_text(CONFIG + "assertions: {metrics: {ToolCorrectness: {min_mean: 0.9}}}\n")
    for run_dir in ("runs/main", "runs/other"):
        _forkserver.run([str(TJ), "run", "config.yaml", "--no-progress", "--set", f"run.dir={run_dir}"], cwd=tmp_path, capture_output=True, timeout=300)
    run_dir = tmp_path / "runs" / "main"
    (run_dir / "summary.json").write_text((run_dir / "summary.json").read_text().replace('"verdict"', '"verdict_before"'))  # report would rewrite it
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in run_dir.iterdir()}

    got = _run_read_only(tmp_path, run_dir, "report", "runs/main", "--baseline", "runs/other")
    assert got.returncode == 1, got.stdout + got.stderr  # the verdict of the gate (mean 2/3 < 0.9), not a refusal
    text = " ".join(got.stdout.split())
    assert "FAIL ToolCorrectness min_mean: mean 0.6667 over 3 of 3 results" in text and "ok ToolCorrectness regression" in text, text
    assert "runs/main cannot be written (read-only), so summary.json and the reports there are left as they are" in text
    got = _run_read_only(tmp_path, run_dir, "compare", "runs/other", "runs/main", "--json")
    assert got.returncode == 0 and json.loads(got.stdout)["metrics"]["ToolCorrectness"]["pairs"] == 3, got.stderr
    got = _run_read_only(tmp_path, run_dir, "report", "runs/main", "--out", "copy")  # --out writes the reports to a copy
    assert got.returncode == 1 and (tmp_path / "copy" / "report.html").exists(), got.stderr
    with view_process(str(run_dir), wrap=lambda argv: _read_only(run_dir, argv)) as (url, _):
        for page in ("/run/main/cases", "/run/main/case?id=c0&trial=0"):
            with urllib.request.urlopen(url + page, timeout=60) as reply:
                assert reply.status == 200 and "c0" in reply.read().decode()
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in run_dir.iterdir()} == before  # nothing written, nothing touched
