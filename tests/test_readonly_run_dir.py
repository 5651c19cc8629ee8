"""A run directory on a read-only file system is bad input (exit 2, one line naming the path), not a crash.

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
from _runs import native_case, write_dataset  # noqa: E402

TJ = Path(sys.executable).with_name("tracejudge")
CONFIG = "dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: ToolCorrectness}]\nrun: {dir: runs/main}\n"


def _namespaces_work(tmp: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--map-root-user", "--mount", "sh", "-c", f"mount --bind {tmp} {tmp}"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def _run_read_only(root: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """`tracejudge run` in `root` with `target` (a folder or file) bind-mounted read-only over itself."""
    t = shlex.quote(str(target))
    script = (f"mount --bind {t} {t} && mount -o remount,bind,ro {t} && "
              f"exec {shlex.quote(str(TJ))} run config.yaml --no-progress --force")
    return subprocess.run(["unshare", "--map-root-user", "--mount", "sh", "-c", script], cwd=root,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("what", ["run directory", "results file"])
def test_a_read_only_run_directory_or_results_file_is_one_line_and_exit_2(tmp_path: Path, what: str) -> None:
    if not _namespaces_work(tmp_path):
        pytest.skip("no unprivileged mount namespaces here (unshare --map-root-user --mount)")
    write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", ["a"], ["a"]) for i in range(3)])
    (tmp_path / "config.yaml").write_text(CONFIG)
    first = subprocess.run([str(TJ), "run", "config.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
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
