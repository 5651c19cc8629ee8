"""`tracejudge init --dataset PATH` without `--format` writes the format the data's first records read as (the trial read
a run's config check makes), says so in one line, and the config it writes runs; `--format` given is never second-guessed.

Over the real files beside the repository (τ-bench, τ²-bench, the OTel exports, BFCL) and files written here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tracejudge.entrypoints.cli import main

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
TAU = DATA / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"
TAU2 = DATA / "tau2_bench" / "model_training_results" / "gpt-4.1_airline_default_gpt-4.1_1trials.json"
NATIVE = {"id": "c1", "input": "hi", "trace": {"steps": [{"tool_calls": [{"name": "lookup", "arguments": {}}]}], "output": "done"}}


def _init(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str | None]:
    """(exit status, what init said, the format it wrote or None)."""
    out = tmp_path / "c.yaml"
    code = main(["init", *args, "-o", str(out), "--force"])
    said = capsys.readouterr().err
    written = yaml.safe_load(out.read_text())["dataset"]["format"] if code == 0 else None
    return code, said, written


@pytest.mark.parametrize(("path", "fmt"), [(TAU, "tau-bench"), (TAU2, "tau2-bench"), (DATA / "otel_genai", "otel"),
                                           (DATA / "otel_genai" / "hand", "otel")])
def test_the_format_the_data_reads_as_is_written_and_said(tmp_path, capsys, path, fmt):
    code, said, written = _init(tmp_path, capsys, "--dataset", str(path))
    assert (code, written) == (0, fmt), said
    assert f"format: {fmt} (" in said and "give --format for another" in said
    assert main(["run", str(tmp_path / "c.yaml"), "--no-progress", "--set", "dataset.limit=3",
                 "--set", f"run.dir={tmp_path / 'run'}"]) in (0, 1)  # (a config that runs: 1 is a gate, not an error)
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["results"] > 0


def test_native_records_stay_native_without_a_word(tmp_path, capsys):
    (tmp_path / "cases.jsonl").write_text(json.dumps(NATIVE) + "\n")
    code, said, written = _init(tmp_path, capsys, "--dataset", str(tmp_path / "cases.jsonl"))
    assert (code, written) == (0, "native") and "format:" not in said


def test_a_given_format_is_written_as_given(tmp_path, capsys):
    code, said, written = _init(tmp_path, capsys, "--format", "native", "--dataset", str(TAU))
    assert (code, written) == (0, "native") and "format:" not in said  # (the run's check then names tau-bench)


def test_data_only_a_live_target_can_score_is_refused_with_where_to_start(tmp_path, capsys):
    bfcl = sorted((DATA / "bfcl").glob("BFCL_v4_*.json"))[0]
    code, said, _ = _init(tmp_path, capsys, "--dataset", str(bfcl))
    assert code == 2 and "read as bfcl" in said and "examples/agents/bfcl.yaml" in said


def test_records_no_format_reads_are_native_with_a_word_saying_so(tmp_path, capsys):
    (tmp_path / "odd.jsonl").write_text('"just a string"\n')
    code, said, written = _init(tmp_path, capsys, "--dataset", str(tmp_path / "odd.jsonl"))
    assert (code, written) == (0, "native") and "no format reads its first records" in said


def test_a_folder_of_no_format_is_the_folder_error(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("hello\n")
    code, said, _ = _init(tmp_path, capsys, "--dataset", str(tmp_path / "data"))
    assert code == 2 and "is a folder; format 'native' reads one file" in said
