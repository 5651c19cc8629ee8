"""`tracejudge extract -o PATH` never destroys a file it should not.

It opened PATH for writing before reading anything: `-o` naming the dataset emptied it (and then said "no records in
it"), naming the config replaced it with cases, naming a run's results.jsonl replaced the run's results, and any
existing file was replaced without a word. Now a file the extract reads (symlinks and hard links included) and a path
in a run directory are refused even with --force, an existing file without --force (exit 2, one line, nothing
touched); the cases go to a temporary beside PATH, renamed onto it only when the extract has finished.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from _runs import seven_and_three, write_config, write_dataset
from helpers import DATA
import _forkserver

TRACEJUDGE = str(Path(sys.executable).with_name("tracejudge"))


def extract(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([TRACEJUDGE, "extract", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (links as what they point to), by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    write_config(tmp_path / "cfg.yaml", seven_and_three(tmp_path / "cases.jsonl"), tmp_path / "run")
    return tmp_path


def refused(got: subprocess.CompletedProcess[str], line: str) -> None:
    assert got.returncode == 2 and got.stderr.strip() == f"error: {line}", got.stderr


def test_a_file_the_extract_reads_is_refused_even_with_force(work: Path) -> None:
    cases, cfg = work / "cases.jsonl", work / "cfg.yaml"
    (work / "link.jsonl").symlink_to("cases.jsonl")
    os.link(cases, work / "hard.jsonl")
    before = files(work)
    for force in ([], ["--force"]):
        refused(extract(work, "cfg.yaml", "-o", "cases.jsonl", *force),
                f"-o cases.jsonl: is dataset.path ({cases}), which extract reads; give another path")
        refused(extract(work, "cfg.yaml", "-o", str(cfg), *force),
                f"-o {cfg}: is the config file (cfg.yaml), which extract reads; give another path")
        for alias in ("link.jsonl", "hard.jsonl"):  # a symlink to the dataset, a hard link of it
            refused(extract(work, "cfg.yaml", "-o", alias, *force),
                    f"-o {alias}: is dataset.path ({cases}), which extract reads; give another path")
    (work / "cfg-link.yaml").symlink_to("cfg.yaml")
    refused(extract(work, "cfg-link.yaml", "-o", "cfg.yaml", "--force"),
            "-o cfg.yaml: is the config file (cfg-link.yaml), which extract reads; give another path")
    assert files(work) == {**before, "cfg-link.yaml": before["cfg.yaml"]}  # nothing touched, no temporary left


def test_tasks_and_a_dataset_folder_are_refused(tmp_path: Path) -> None:
    tau = DATA / "tau_bench"
    cfg = tmp_path / "tau.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(tau / "historical_trajectories" / "gpt-4o-airline.json"), "format": "tau-bench",
                                               "tasks": str(tau / "tasks" / "tasks_airline_test.json"), "limit": 2},
                                   "metrics": [{"type": "MaxToolCalls", "max_calls": 20}]}))
    (tmp_path / "tasks.json").symlink_to(tau / "tasks" / "tasks_airline_test.json")
    refused(extract(tmp_path, "tau.yaml", "-o", "tasks.json", "--force"),
            f"-o tasks.json: is dataset.tasks ({tau / 'tasks' / 'tasks_airline_test.json'}), which extract reads; give another path")
    folder = tmp_path / "exports"
    folder.mkdir()
    shutil.copy(DATA / "otel_genai" / "hand" / "mcp_tool_call.json", folder / "a.json")
    os.link(folder / "a.json", tmp_path / "hard.json")
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(folder), "format": "otel"}, "metrics": [{"type": "MaxToolCalls", "max_calls": 20}]}))
    before = files(tmp_path)
    # A new file in the folder would be read as part of the dataset by the next run; a hard link is one of its files.
    for out in ("exports/new.jsonl", "exports/a.json", "hard.json"):
        refused(extract(tmp_path, "tau.yaml", "-o", out, "--force"),
                f"-o {out}: lies in the folder dataset.path ({folder}), which extract reads; give a path outside it")
    assert files(tmp_path) == before
    assert extract(tmp_path, "tau.yaml", "-o", "cases.jsonl").returncode in (0, 1)


def test_a_path_in_a_run_directory_is_refused_even_with_force(work: Path) -> None:
    run = work / "run"
    assert _forkserver.run([TRACEJUDGE, "run", "cfg.yaml", "--no-progress"], capture_output=True, timeout=120, cwd=work).returncode in (0, 1)
    other = work / "other"
    shutil.copytree(run, other)  # a run directory of another config is protected too
    before = files(work)
    for force in ([], ["--force"]):
        for out in ("run/results.jsonl", "run/new.jsonl", "run"):
            refused(extract(work, "cfg.yaml", "-o", out, *force),
                    f"-o {out}: lies in the run {run}, which extract never writes into; give a path outside it")
        refused(extract(work, "cfg.yaml", "-o", "other/manifest.json", *force),
                f"-o other/manifest.json: lies in the run {other}, which extract never writes into; give a path outside it")
    assert files(work) == before


def test_an_existing_file_is_kept_unless_force_is_given(work: Path) -> None:
    out = work / "out.jsonl"
    out.write_text("mine\n")
    out.chmod(0o640)
    refused(extract(work, "cfg.yaml", "-o", "out.jsonl"), "-o out.jsonl: exists; give another path, or --force to overwrite it")
    assert out.read_text() == "mine\n"
    got = extract(work, "cfg.yaml", "-o", "out.jsonl", "--force")
    assert got.returncode == 1 and "wrote 8 cases to out.jsonl" in got.stderr, got.stderr  # (2 records invalid: exit 1)
    assert len(out.read_text().splitlines()) == 8 and (out.stat().st_mode & 0o777) == 0o640  # replaced, its mode kept
    (work / "lnk.jsonl").symlink_to("target.jsonl")
    (work / "target.jsonl").write_text("theirs\n")
    refused(extract(work, "cfg.yaml", "-o", "lnk.jsonl"), "-o lnk.jsonl: exists; give another path, or --force to overwrite it")
    assert extract(work, "cfg.yaml", "-o", "lnk.jsonl", "--force").returncode == 1
    assert os.readlink(work / "lnk.jsonl") == "target.jsonl" and (work / "target.jsonl").read_text() == out.read_text()
    to_stdout = extract(work, "cfg.yaml", "-o", "-")
    assert to_stdout.returncode == 1 and to_stdout.stdout == out.read_text() and not (work / "-").exists()
    assert extract(work, "cfg.yaml", "-o", os.devnull).returncode == 1  # a device is written into, not protected


def test_a_failed_extract_leaves_the_previous_file(work: Path) -> None:
    out = work / "out.jsonl"
    out.write_text("mine\n")
    write_dataset(work / "cases.jsonl", [])  # no records: a config error, exit 2
    got = extract(work, "cfg.yaml", "-o", "out.jsonl", "--force")
    assert got.returncode == 2 and "no records in it" in got.stderr, got.stderr
    assert out.read_text() == "mine\n" and sorted(p.name for p in work.iterdir()) == ["cases.jsonl", "cfg.yaml", "out.jsonl"]
    assert extract(work, "cfg.yaml", "-o", "new.jsonl").returncode == 2 and not (work / "new.jsonl").exists()


def test_a_manifest_json_of_no_run_makes_no_run_directory(work: Path) -> None:
    # A web project's manifest.json beside the output is not a run's: the path is written as any other.
    (work / "site").mkdir()
    (work / "site" / "manifest.json").write_text('{"name": "app", "start_url": "/"}')
    assert extract(work, "cfg.yaml", "-o", "site/cases.jsonl").returncode == 1
    assert len((work / "site" / "cases.jsonl").read_text().splitlines()) == 8
