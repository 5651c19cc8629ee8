"""`tracejudge export` of a run directory whose results.jsonl is gone, or whose last line was cut off as it was written."""

from __future__ import annotations

from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

from _runs import seven_and_three, write_config


def _run(tmp_path: Path) -> Path:
    data = seven_and_three(tmp_path / "cases.jsonl")
    cfg = write_config(tmp_path / "cfg.yaml", data, tmp_path / "run", metrics=[{"type": "ToolCorrectness", "name": "tc"}])
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    return tmp_path / "run"


@pytest.mark.parametrize("to", [["csv", "-"], ["parquet", "out.parquet"], ["phoenix"], ["mlflow"]])
def test_a_run_without_results_jsonl_is_an_error_naming_the_file(tmp_path, capsys, to):
    run_dir = _run(tmp_path)
    (run_dir / "results.jsonl").unlink()
    capsys.readouterr()
    # (the stores' URLs answer nothing: the missing file is found before any store is asked)
    store = {"phoenix": ["--url", "http://127.0.0.1:1"], "mlflow": ["--tracking-uri", "http://127.0.0.1:1"]}.get(to[0], [])
    dest = [str(tmp_path / w) if w.endswith(".parquet") else w for w in to]
    assert main(["export", str(run_dir), "--to", *dest, *store]) == 2
    captured = capsys.readouterr()
    assert f"error: {run_dir / 'results.jsonl'}: no such file" in captured.err
    assert "exported" not in captured.err and captured.out == ""
    assert not (tmp_path / "out.parquet").exists()


def test_a_cut_off_last_line_is_named_as_left_out(tmp_path, capsys):
    run_dir = _run(tmp_path)
    results = run_dir / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])  # a run killed mid-write
    capsys.readouterr()
    assert main(["export", str(run_dir), "--to", "csv", "-"]) == 0
    captured = capsys.readouterr()
    assert f"{results}:{len(lines)}: (root): the last line ends without a line break" in captured.err
    assert "1 line(s) of results.jsonl are not results" in captured.err
    assert len(captured.out.splitlines()) == len(lines)  # the header, and one row per whole line (one metric each)
