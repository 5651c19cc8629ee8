"""An `otel` file holding only a newline or white space: the same clear error for `run` and `extract`, whatever its suffix.

A `.json` file was read as one JSON value: `tracejudge extract` listed it as an invalid record ("invalid JSON: Expecting
value at line 2 column 1", exit status 1) where a `.jsonl` one was the dataset's "no records in it" (exit status 2), and
in a folder it was an `invalid_input` while a blank `.jsonl` beside it vanished without a word. Now a blank file of
either suffix holds no export: alone it is the empty-dataset config error naming it, in a folder one warning names it
and the other files' conversations are read.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import _forkserver

DATA = Path(__file__).parent / "data" / "otel-loop-faults"
EMPTY = "no records in it (an empty file, only blank lines or an empty array)"


def _tj(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _config(tmp_path: Path, data: str) -> Path:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {data}, format: otel}}\nmetrics: [{{type: MaxToolCalls, max_calls: 10}}]\nrun: {{dir: run}}\n")
    return cfg


@pytest.mark.parametrize("name", ["spans.json", "spans.jsonl"])
@pytest.mark.parametrize("text", ["\n", " \t\r\n\n  "])
def test_a_blank_otel_file_is_the_empty_dataset_error_for_extract_and_run(tmp_path: Path, name: str, text: str) -> None:
    data = tmp_path / name
    data.write_text(text)
    cfg = _config(tmp_path, name)
    said = f"dataset.path: {data}: {EMPTY}"
    got = _tj("extract", str(cfg), "-o", "-", cwd=tmp_path)
    assert got.returncode == 2 and got.stdout == "" and got.stderr.strip() == f"config error\n{cfg}:1: {said}", got.stderr
    assert "Traceback" not in got.stderr
    got = _tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert got.returncode == 2 and said in got.stderr, got.stdout + got.stderr
    assert not (tmp_path / "run").exists()


def test_blank_files_in_a_folder_are_named_in_a_warning_and_the_others_read(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(DATA / "oi-empty-result.jsonl", folder / "run.jsonl")  # a real OpenInference recording: one conversation
    (folder / "a.json").write_text("\n")
    (folder / "b.jsonl").write_text("  \n")
    cfg = _config(tmp_path, "traces")
    got = _tj("extract", str(cfg), "-o", "-", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    cases = [json.loads(line) for line in got.stdout.splitlines()]
    assert len(cases) == 1 and cases[0]["input"], got.stdout
    warned = [line for line in got.stderr.splitlines() if "hold no export" in line]
    assert len(warned) == 1 and "2 files under" in warned[0] and "a.json, b.jsonl" in warned[0], got.stderr
    assert "invalid" not in got.stderr


def test_a_folder_of_blank_files_only_is_the_empty_folder_error(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "a.json").write_text("\n")
    got = _tj("extract", str(_config(tmp_path, "traces")), "-o", "-", cwd=tmp_path)
    assert got.returncode == 2 and f"dataset.path: {folder}: no records in it (no file in the folder holds one)" in got.stderr, got.stderr
    assert "hold no export" in got.stderr and "Traceback" not in got.stderr
