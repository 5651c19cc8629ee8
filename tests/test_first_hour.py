"""What a new user meets first: a config without metrics, an unusable run.dir, where the results went."""

from __future__ import annotations

from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main


def _data(folder: Path) -> None:
    call = '{"name": "get_order", "arguments": {"order_id": 1}}'
    (folder / "cases.jsonl").write_text('{"id": "a", "expected_tool_calls": [' + call + '], "trace": {"steps": [{"tool_calls": [' + call + "]}]}}\n")


def test_a_config_without_metrics_is_a_config_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _data(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\n")
    assert main(["run", str(cfg), "--no-progress"]) == 2
    assert f"{cfg}: metrics: no metric configured" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_run_dir_that_cannot_be_created_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _data(tmp_path)
    (tmp_path / "a-file").write_text("")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\nrun: {dir: a-file/run}\n")
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"error: run.dir: cannot create {tmp_path / 'a-file' / 'run'}: Not a directory"]


def test_the_default_run_dir_is_printed_as_an_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "configs"
    folder.mkdir()
    _data(folder)
    (folder / "nightly.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "configs/nightly.yaml", "--no-progress"]) == 0
    assert f"run directory: {folder / 'runs' / 'nightly'}  (1 new results" in capsys.readouterr().out
