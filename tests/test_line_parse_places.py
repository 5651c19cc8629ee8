"""A line of results.jsonl or of a dataset that is not JSON is named by the file's line and the column in that line.

A line cut mid-way (a run killed as it wrote, a copy stopped short) was named `results.jsonl:2` beside the parser's
own place, "at line 2 column 0" (pydantic's parser counts the newline that ended the cut string as a second line),
or "at line 1 column 31" beside `cases.jsonl:2`: two line numbers for one line. Real run directories and real
processes, as a user meets them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from tracejudge.core.config import RunConfig
from tracejudge.engine import runner, store
from tracejudge.engine.store import iter_results
from tracejudge.stages.reports import rebuild
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")
CASE = {"input": "x", "trace": {"steps": [], "output": "done"}}
CUT_AT = 70  # characters of the second result line kept: inside its `case_id` string's neighbourhood, before the end
# What every reader says of it: json's words, the column in the line (where the cut text ends), and that it was cut.
SAID = f"(root): invalid JSON: Invalid control character at column {CUT_AT + 1}; the line ends early (it looks truncated)"


def _config(tmp_path: Path) -> dict[str, Any]:
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"id": f"c{i}", **CASE}) + "\n" for i in range(3)))
    return {"dataset": {"path": str(data)}, "metrics": [{"type": "Regex", "pattern": "done"}],
            "run": {"dir": str(tmp_path / "run"), "executor": "inprocess"}}


@pytest.fixture
def cut_run(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """A finished run whose second result line is cut inside a string (its newline kept, as a later write would)."""
    config = _config(tmp_path)
    anyio.run(lambda: runner.run(RunConfig.model_validate(config)))
    results = tmp_path / "run" / store.RESULTS
    lines = results.read_bytes().splitlines(keepends=True)
    assert len(lines) == 3 and lines[1][CUT_AT - 1:CUT_AT + 1] != b'",'  # (the cut falls inside a string)
    text = lines[1][:CUT_AT]
    assert text.count(b'"') % 2 == 1, text
    lines[1] = text + b"\n"
    results.write_bytes(b"".join(lines))
    return config, tmp_path / "run"


def test_report_and_the_readers_name_the_file_line_and_the_column_in_it(cut_run: tuple[dict[str, Any], Path]) -> None:
    _, run_dir = cut_run
    skipped: list[tuple[int, str]] = []
    rebuild(run_dir, write=False, on_skipped=lambda n, why: skipped.append((n, why)))
    assert skipped == [(2, SAID)]
    bad: list[tuple[int, str]] = []
    assert len(list(iter_results(run_dir, on_bad=lambda n, why: bad.append((n, why))))) == 2  # compare's and export's reader
    assert bad == [(2, SAID)]


def test_a_resume_names_the_cut_line_s_problem_not_pydantic_s_header(cut_run: tuple[dict[str, Any], Path]) -> None:
    config, run_dir = cut_run
    (run_dir / store.CHECKPOINT).unlink()  # (the tail after a checkpoint is what a resume reads line by line)
    cfg = run_dir.parent / "c.json"
    cfg.write_text(json.dumps(config))
    done = _forkserver.run([str(TJ), "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [warned] = [json.loads(line) for line in done.stderr.splitlines() if "damaged result line" in line]
    assert (warned["line"], warned["error"]) == (2, SAID), warned  # it was "1 validation error for CaseResult"


@pytest.mark.parametrize("fmt", ["openai-agents", "smolagents"])
def test_a_dataset_line_cut_short_is_named_by_its_column_only(tmp_path: Path, fmt: str) -> None:
    data = tmp_path / "traces.jsonl"
    data.write_text('{"id": "a", "steps": [\n{"id": "b", "steps": [{"x": "y\n')
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {data}, format: {fmt}}}\nmetrics: [{{type: Regex, pattern: done}}]\nrun: {{dir: {tmp_path / 'run'}}}\n")
    done = _forkserver.run([str(TJ), "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120)
    results = [json.loads(line) for line in (tmp_path / "run" / store.RESULTS).read_text().splitlines()]
    said = {r["case_id"].rpartition("/")[2]: r["error"]["message"] for r in results}  # (smolagents names the file alone)
    assert said == {"traces.jsonl:1": "invalid JSON: Expecting value at column 23; the line ends early (it looks truncated)",
                    "traces.jsonl:2": "invalid JSON: Invalid control character at column 31; the line ends early (it looks truncated)"}, (said, done.stderr)


def test_a_bfcl_answer_line_cut_short_is_named_by_its_column_only(tmp_path: Path) -> None:
    from tracejudge.core.registry import format_for

    name = "BFCL_v4_simple_python.json"
    (tmp_path / "possible_answer").mkdir()
    cut = '{"id": "simple_python_0", "ground_truth": [{"f": {"x": ["a'
    (tmp_path / "possible_answer" / name).write_text(cut + "\n")
    (tmp_path / name).write_text(json.dumps({"id": "simple_python_0", "question": [[{"role": "user", "content": "hi"}]],
                                             "function": [{"name": "f", "parameters": {"properties": {"x": {}}}}]}) + "\n")

    class Dataset:
        path, tasks, limit, options = tmp_path / name, None, None, {}

    ctx = format_for("bfcl").prepare(Dataset())
    assert ctx["bad_answers"] == {"simple_python_0": f"{tmp_path / 'possible_answer' / name}:1: invalid JSON: Invalid control character "
                                                     f"at column {len(cut) + 1}; the line ends early (it looks truncated)"}
