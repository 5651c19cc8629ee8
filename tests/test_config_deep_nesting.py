"""A config nested deeper than any real one is a config error naming where, never an internal error.

`judge.extra_body` is sent and recorded as JSON: past 64 levels it is refused at its key (pydantic's serializer of the
run's manifest stopped at about 255, an internal error). Thousands of levels anywhere (a file, a `--set` value) end
PyYAML's recursion: refused naming the file or the option.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tracejudge.core.config import load_config
from tracejudge.core.errors import ConfigError



def _config(tmp_path: Path, extra: str = "") -> Path:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {tmp_path / 'd.jsonl'}, format: native}}\nmetrics: [{{type: ToolCallAccuracy}}]\n"
                   f"judge: {{provider: simulator{extra}}}\nrun: {{dir: {tmp_path / 'run'}}}\n")
    (tmp_path / "d.jsonl").write_text("")
    return cfg


def test_extra_body_nested_past_64_levels_is_refused_at_its_key(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    load_config(cfg, ["judge.extra_body={\"x\": " + "[" * 64 + "]" * 64 + "}"])  # 65 levels with the mapping: kept
    with pytest.raises(ConfigError) as got:
        load_config(cfg, ["judge.extra_body={\"x\": " + "[" * 300 + "]" * 300 + "}"])
    assert "judge.extra_body.x: nested too deeply: more than 64 levels" in str(got.value)


@pytest.mark.parametrize("where", ["file", "set"])
def test_thousands_of_levels_are_a_config_error(tmp_path: Path, where: str) -> None:
    deep = "[" * 5000 + "]" * 5000
    cfg = _config(tmp_path)
    if where == "file":
        cfg.write_text(cfg.read_text() + f"extra: {deep}\n")
    with pytest.raises(ConfigError) as got:
        load_config(cfg, [f"judge.extra_body={{\"x\": {deep}}}"] if where == "set" else [])
    assert "nested too deeply" in str(got.value)
