"""`tracejudge export --to csv|parquet PATH` never writes into a run it reads nor over a file without --force; `-` is stdout; a FIFO or device is written into, a symlink followed."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from _runs import seven_and_three, write_config
import _forkserver

TRACEJUDGE = str(Path(sys.executable).with_name("tracejudge"))


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    cfg = write_config(tmp_path / "cfg.yaml", seven_and_three(tmp_path / "cases.jsonl"), tmp_path / "run")
    assert _forkserver.run([TRACEJUDGE, "run", str(cfg), "--no-progress"], capture_output=True, timeout=120).returncode in (0, 1)
    return tmp_path / "run"


def export(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([TRACEJUDGE, "export", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_a_file_of_a_run_being_read_is_refused_even_with_force(run_dir: Path) -> None:
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    for name in ("results.jsonl", "summary.json", "manifest.json", "new.csv"):
        for force in ([], ["--force"]):
            got = export(run_dir.parent, str(run_dir), "--to", "csv", str(run_dir / name), *force)
            assert got.returncode == 2 and got.stderr.strip() == (
                f"error: --to csv {run_dir / name}: lies in the run {run_dir}, which export only reads; give a path outside it"), got.stderr
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before  # the run is as it was
    assert export(run_dir.parent, "run", "--to", "parquet", "run/v.parquet").returncode == 2  # relative paths alike


def test_an_existing_file_is_kept_unless_force_is_given(run_dir: Path) -> None:
    cfg = run_dir.parent / "cfg.yaml"
    text = cfg.read_text()
    got = export(run_dir.parent, str(run_dir), "--to", "csv", str(cfg))
    assert got.returncode == 2 and got.stderr.strip() == f"error: --to csv {cfg}: exists; give another path, or --force to overwrite it"
    assert cfg.read_text() == text
    out = run_dir.parent / "v.csv"
    assert export(run_dir.parent, str(run_dir), "--to", "csv", str(out)).returncode == 0
    assert export(run_dir.parent, str(run_dir), "--to", "csv", str(out)).returncode == 2
    assert export(run_dir.parent, str(run_dir), "--to", "csv", str(out), "--force").returncode == 0


def test_a_dash_writes_csv_to_stdout_and_parquet_refuses_it(run_dir: Path) -> None:
    work = run_dir.parent
    assert export(work, str(run_dir), "--to", "csv", str(work / "v.csv")).returncode == 0
    got = export(work, str(run_dir), "--to", "csv", "-")
    assert got.returncode == 0 and got.stdout == (work / "v.csv").read_text(encoding="utf-8") and not (work / "-").exists()
    assert "rows to stdout" in got.stderr
    refused = export(work, str(run_dir), "--to", "parquet", "-")
    assert refused.returncode == 2 and "give a file" in refused.stderr and not (work / "-").exists()


def test_a_run_named_twice_is_read_once(run_dir: Path) -> None:
    work = run_dir.parent
    assert export(work, str(run_dir), "--to", "csv", "once.csv").returncode == 0
    assert export(work, str(run_dir), "run", f"{run_dir}/", "--to", "csv", "thrice.csv").returncode == 0
    assert (work / "thrice.csv").read_text() == (work / "once.csv").read_text()  # the same rows, and no `run` column


def test_a_fifo_is_written_into_and_a_symlink_is_followed(run_dir: Path) -> None:
    work = run_dir.parent
    assert export(work, str(run_dir), "--to", "csv", "v.csv").returncode == 0
    fifo = work / "pipe.csv"
    os.mkfifo(fifo)
    got: dict[str, bytes] = {}

    def read() -> None:
        with open(fifo, "rb") as fh:
            got["bytes"] = fh.read()

    reader = threading.Thread(target=read, daemon=True)  # left blocked if the FIFO was replaced
    reader.start()
    done = export(work, str(run_dir), "--to", "csv", str(fifo), "--force")
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and got["bytes"] == (work / "v.csv").read_bytes()
    refused = export(work, str(run_dir), "--to", "parquet", str(fifo), "--force")
    assert refused.returncode == 2 and refused.stderr.strip() == (
        f"error: --to parquet {fifo}: is a FIFO, and Parquet needs a seekable file; give a file (or --to csv)")
    (work / "other.txt").write_text("hi\n")
    (work / "lnk.csv").symlink_to("other.txt")
    assert export(work, str(run_dir), "--to", "csv", "lnk.csv").returncode == 2  # its target is a file to protect
    assert export(work, str(run_dir), "--to", "csv", "lnk.csv", "--force").returncode == 0
    assert (work / "lnk.csv").is_symlink() and os.readlink(work / "lnk.csv") == "other.txt"
    assert (work / "other.txt").read_bytes() == (work / "v.csv").read_bytes()


def test_dev_null_is_not_an_existing_file_to_protect(run_dir: Path) -> None:
    for kind in ("csv", "parquet"):
        got = export(run_dir.parent, str(run_dir), "--to", kind, os.devnull)
        assert got.returncode == 0, got.stderr
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_file_named_like_the_temporary_is_left_alone(run_dir: Path) -> None:
    # The table was written to PATH.tmp and renamed onto PATH: a file of that name (the user's) was replaced, then gone.
    work = run_dir.parent
    (work / "v.csv.tmp").write_text("mine\n")
    assert export(work, str(run_dir), "--to", "csv", "v.csv").returncode == 0
    assert (work / "v.csv.tmp").read_text() == "mine\n" and (work / "v.csv").read_text().startswith("case_id,")
    assert not [p for p in work.iterdir() if p.name.startswith(".v.csv")]  # no temporary of its own left either


def test_run_directories_after_the_to_option_are_read_not_taken_for_its_path(run_dir: Path) -> None:
    # `--to KIND PATH` takes one or two words, so argparse hands it every word after it: the run directories
    # written last (`export --to csv v.csv runs/a`) are run directories, as they are written first.
    work = run_dir.parent
    assert export(work, str(run_dir), "--to", "csv", "first.csv").returncode == 0
    got = export(work, "--to", "csv", "last.csv", str(run_dir))
    assert got.returncode == 0, got.stderr
    assert (work / "last.csv").read_text() == (work / "first.csv").read_text()
    none = export(work, "--to", "csv", "none.csv")
    assert none.returncode == 2 and none.stderr.strip() == "error: no run directory given: tracejudge export RUN_DIR --to csv PATH"
    stray = export(work, str(run_dir), "--to", "mlflow", "v.csv")
    assert stray.returncode == 2 and "--to mlflow takes no path (got v.csv)" in stray.stderr
