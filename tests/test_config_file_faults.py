"""A config file that cannot be read as one YAML document is a config error naming the file (and the line and column
or the key), exit status 2: a FIFO, a character YAML refuses, a whole number Python will not read."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from tracejudge.core.config import load_config
from tracejudge.core.errors import ConfigError
import _forkserver

HEAD = "dataset: {path: cases.jsonl, format: openai-messages}\nmetrics: [{type: ToolCalls}]\n"


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "cases.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    return tmp_path


@pytest.mark.parametrize("command", [["run"], ["extract", "-o", "out.jsonl"], ["estimate"]])
def test_a_fifo_as_the_config_is_refused_without_waiting_for_a_writer(tmp_path, command):
    os.mkfifo(_folder(tmp_path) / "c.yaml")
    # (the timeout only turns a hang into a failure: before, the command waited for a writer for ever)
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", *command, "c.yaml"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "c.yaml: the config is a FIFO (named pipe), not a regular file" in proc.stderr
    assert "internal error" not in proc.stderr


@pytest.mark.parametrize(("text", "where"), [
    (HEAD + 'run: {dir: "a\0b"}\n', "3:14"),
    (HEAD.replace("ToolCalls", "Tool\0Calls"), "2:22"),
    ("\0\0\0", "1:1"),
    (HEAD + "run: {dir: \x07}\n", "3:12"),
])
def test_a_character_yaml_refuses_names_its_line_and_column(tmp_path, text, where):
    cfg = _folder(tmp_path) / "c.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert str(err.value).startswith(f"{cfg}:{where}: invalid YAML: character U+00")


def test_a_syntax_error_names_its_line_and_column(tmp_path):
    cfg = _folder(tmp_path) / "c.yaml"
    cfg.write_text(HEAD + "run:\n\tdir: x\n")
    with pytest.raises(ConfigError, match=rf"^{cfg}:4:1: invalid YAML: found character '\\t' that cannot start any token"):
        load_config(cfg)


def test_a_whole_number_of_too_many_digits_names_its_key(tmp_path):
    cfg = _folder(tmp_path) / "c.yaml"
    cfg.write_text(HEAD + "run:\n  dir: out\n" + f"judge: {{provider: simulator, extra_body: {{seed2: {'9' * 5000}}}}}\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert str(err.value) == f"{cfg}:5: judge.extra_body.seed2: a whole number of 5,000 digits; at most {sys.get_int_max_str_digits():,} are read"
    cfg.write_text(HEAD + f"run: {{dir: out}}\njudge: {{provider: simulator, extra_body: {{seed2: 0x{'f' * 5000}}}}}\n")
    assert load_config(cfg).judge.extra_body["seed2"] == 16 ** 5000 - 1  # (hexadecimal has no such limit)


def test_a_whole_number_of_too_many_digits_in_a_set_names_its_key(tmp_path):
    cfg = _folder(tmp_path) / "c.yaml"
    cfg.write_text(HEAD)
    with pytest.raises(ConfigError, match=r"^--set dataset\.limit=…: dataset\.limit: a whole number of more than [\d,]+ digits"):
        load_config(cfg, [f"dataset.limit={'9' * 5000}"])


def test_a_config_error_from_the_file_exits_2_without_a_crash_log(tmp_path):
    (_folder(tmp_path) / "c.yaml").write_text(HEAD + f"dataset: {{limit: {'9' * 5000}}}\0")
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "c.yaml:3:" in proc.stderr and "internal error" not in proc.stderr
