"""How a config error shows the key path and the `--set` option it names.

A zero-width space pasted into a `--set` key (or a key of the file) was printed raw: `c.yaml: assertions<U+200B>: unknown
key; did you mean assertions?` read on screen as "assertions: unknown key; did you mean assertions?". Such characters are
shown escaped, as `inert_text.visible` shows them, while `key_path` still writes what `parse_path` reads back. And an
error that a `--set` caused without setting its key (a gate on a metric the `--set` renamed) names that option too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import _forkserver
import pytest
from tracejudge.core.config import load_config
from tracejudge.core.errors import ConfigError
from tracejudge.core.field_paths import key_path, parse_path

ZWSP = "\u200b"


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "trace": {"steps": []}}\n')
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text, encoding="utf-8")
    return cfg


def _refused(cfg: Path, *overrides: str) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_config(cfg, list(overrides))
    return str(err.value).splitlines()


GATED = "dataset: {path: cases.jsonl}\nmetrics:\n  - type: ToolCalls\n    name: tool.acc\nassertions:\n  metrics:\n    tool.acc: {min_mean: 0.5}\n"


def test_an_invisible_character_in_a_set_key_is_shown_escaped_by_the_cli(tmp_path: Path) -> None:
    cfg = _write(tmp_path, GATED)
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--set", f"assertions{ZWSP}.metrics.x=1"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120, env=dict(os.environ))
    assert proc.returncode == 2, proc.stderr
    assert ZWSP not in proc.stderr
    assert f"{cfg}: assertions\\u{{200b}}: unknown key; did you mean assertions? (with --set assertions\\u{{200b}}.metrics.x=1)" in proc.stderr


@pytest.mark.parametrize(("override", "expected"), [
    (f"metrics.0.name{ZWSP}=x", "--set metrics.0.name\\u{200b}=x: metrics.0.name\\u{200b}: ToolCalls: unknown parameter"),
    (f"metrics.5{ZWSP}.name=x", "--set metrics.5\\u{200b}.name: metrics.5\\u{200b} is not an index of the list"),
    (f"dataset.path.x{ZWSP}=1", "--set dataset.path.x\\u{200b}: dataset.path is not a mapping"),
    (f"run{ZWSP}=[", "--set run\\u{200b}: value '[' is not valid YAML"),
])
def test_an_invisible_character_in_a_set_argument_is_shown_escaped(tmp_path: Path, override: str, expected: str) -> None:
    lines = _refused(_write(tmp_path, GATED), override)
    assert lines[0].startswith(expected), lines
    assert not any(ZWSP in line for line in lines), lines


def test_an_invisible_character_in_a_key_of_the_file_is_shown_escaped(tmp_path: Path) -> None:
    cfg = _write(tmp_path, f"dataset: {{path: cases.jsonl}}\nmetrics: [{{type: ToolCalls}}]\nrun{ZWSP}: {{}}\nrun{ZWSP}: {{}}\n")
    assert _refused(cfg)[0].startswith(f"{cfg}:4: run\\u{{200b}}: duplicate key"), _refused(cfg)


def test_key_path_still_parses_back_and_only_the_shown_path_escapes() -> None:
    from tracejudge.core.field_paths import shown_path

    keys = ("assertions", f"metrics{ZWSP}", f"tool{ZWSP}.acc", "\x1b[31m")
    assert [k for k, _ in parse_path(key_path(keys))] == list(keys)
    # (a control character in brackets is already a JSON escape; an invisible one is not: `visible` shows it)
    assert shown_path(keys) == 'assertions.metrics\\u{200b}["tool\\u{200b}.acc"]["\\u001b[31m"]'
    assert shown_path(("metrics", 0, "name")) == key_path(("metrics", 0, "name")) == "metrics.0.name"


@pytest.mark.parametrize("override", ["metrics.0.name=a.b", "metrics.0={type: ToolCalls, name: a.b}", "metrics=[{type: ToolCalls, name: a.b}]"])
def test_a_gate_on_a_metric_a_set_renamed_names_the_set(tmp_path: Path, override: str) -> None:
    cfg = _write(tmp_path, GATED)
    lines = _refused(cfg, override)
    assert lines == [f'{cfg}:7: assertions.metrics["tool.acc"]: no metric \'tool.acc\' in this run; expected one of: a.b '
                     f"(with --set {override})"], lines


def test_a_gate_on_a_metric_the_file_lacks_names_no_set_that_did_not_rename(tmp_path: Path) -> None:
    cfg = _write(tmp_path, GATED.replace("    tool.acc: {", "    tool.ac: {"))
    lines = _refused(cfg, "metrics.0.order=in_order", "run.trials=2")
    assert lines == [f"{cfg}:7: assertions.metrics[\"tool.ac\"]: no metric 'tool.ac' in this run; expected one of: tool.acc; "
                     "did you mean tool.acc?"], lines
