"""A config with several mistakes names every one of them in one go, each at its file, line and key, in the order of the
file's lines, with the exit code of one mistake (2) and one mistake's output as it always was.

Before, the schema's errors (an unknown key, a wrong type) hid the checks made after it: a missing dataset file, a
FIFO given as the dataset, a regression baseline that holds no run were named only once the first mistakes were fixed,
one rerun each.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from tracejudge.core.config import load_config
from tracejudge.core.errors import ConfigError
import _forkserver

THREE = """\
dataset:
  path: nowhere.jsonl
  format: native
metrics:
  - {type: ToolCalls}
limits: {rpm: lots}
colour: blue
"""


def _errors(cfg: Path) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    return str(err.value).splitlines()


def test_an_unknown_key_a_wrong_type_and_a_missing_file_are_named_at_once_in_line_order(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(THREE)
    assert _errors(cfg) == [
        f"{cfg}:2: dataset.path: file not found: {tmp_path / 'nowhere.jsonl'}",
        f"{cfg}:6: limits.rpm: Input should be a valid integer, unable to parse string as an integer (got \"lots\")",
        f"{cfg}:7: colour: unknown key",
    ]
    # The command says them all and exits 2, as it does for one mistake, before any work.
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    said = [x for x in proc.stderr.splitlines() if x.startswith(str(cfg))]
    assert [x.split(":")[1] for x in said] == ["2", "6", "7"], proc.stderr
    assert not (tmp_path / "runs").exists()


def test_a_special_file_and_a_missing_baseline_are_named_beside_the_schemas_errors(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"dataset:\n  path: {fifo}\n  tasks: nowhere.json\nrun: {{workers: many}}\nassertions:\n  regression:\n"
                   "    baseline: runs/last-night\n")
    got = _errors(cfg)
    assert [line.split(": ")[0].split(":", 1)[1] + ": " + line.split(": ")[1] for line in got] == [
        "2: dataset.path", "3: dataset.tasks", "4: run.workers", "7: assertions.regression.baseline"], got
    assert f"{fifo} is a FIFO (named pipe), not a regular file" in got[0]
    assert "baseline run not found" in got[3]


def test_a_file_key_the_schema_refused_is_named_once_and_one_mistake_reads_as_before(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("dataset:\n  path: [a, b]\nrun: {dir: out, speed: 11}\n")
    got = _errors(cfg)
    assert len(got) == 2 and got[0].startswith(f"{cfg}:2: dataset.path: ") and "file not found" not in got[0], got
    # One mistake: one line, exactly as before.
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "trace": {"steps": []}}\n')
    cfg.write_text("dataset: {path: cases.jsonl}\nrun: {dir: out, speed: 11}\n")
    assert _errors(cfg) == [f"{cfg}:2: run.speed: unknown key"]
    cfg.write_text("dataset: {path: nowhere.jsonl}\n")
    assert _errors(cfg) == [f"{cfg}:1: dataset.path: file not found: {tmp_path / 'nowhere.jsonl'}"]


def test_extra_bodys_problems_are_named_beside_another_mistake_of_the_judge_section(tmp_path: Path) -> None:
    # The section's own check of extra_body ran only once every judge field was valid: a typo hid a reserved key.
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "trace": {"steps": []}}\n')
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: TaskCompletion}]\njudge:\n  provider: openai\n  model: m\n"
                   "  timeout_s: -1\n  extra_body:\n    stream: false\n    max_tokens: 9\n")
    got = _errors(cfg)
    assert [line.split(": ")[1] for line in got] == ["judge.timeout_s", "judge.extra_body.stream", "judge.extra_body.max_tokens"], got
    assert got[1].startswith(f"{cfg}:8: ") and got[2].startswith(f"{cfg}:9: "), got
