"""Two configs in one process (a notebook running two experiments' folders), each beside its own `tj_exp_metrics.py`
that the config names. Python imports a module name once a process, so the second config got the first one's module
and scored with its code without a word. It is refused, naming both files and what to do; a config read again whose
module is the one imported, and one whose folder has no module of that name, import as before."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import tracejudge
from tracejudge.core import user_code
from tracejudge.core.errors import ConfigError

NAME = "tj_exp_metrics"


def _experiment(folder: Path, score: float) -> Path:
    folder.mkdir()
    (folder / f"{NAME}.py").write_text(f"import tracejudge\n\n\n@tracejudge.metric\ndef mine(case, trace):\n    return {score}\n")
    (folder / "cases.jsonl").write_text('{"id": "a", "trace": {"steps": [], "output": "x"}}\n')
    config = folder / "config.yaml"
    config.write_text(f"dataset: {{path: cases.jsonl, format: native}}\nmetrics: [{{type: '{NAME}:mine'}}]\n")
    return config


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(user_code, "_CONFIGS", [], raising=False)
    monkeypatch.chdir(tmp_path)
    yield _experiment(tmp_path / "exp1", 0.25), _experiment(tmp_path / "exp2", 0.75)
    sys.modules.pop(NAME, None)


def test_a_second_config_whose_own_module_has_the_first_ones_name_is_refused_naming_both(two) -> None:
    first, second = two
    tracejudge.load_config(first)
    assert sys.modules[NAME].__file__ == str(first.parent / f"{NAME}.py")
    with pytest.raises(ConfigError) as err:
        tracejudge.load_config(second)
    said = str(err.value)
    assert f"{NAME!r} is already imported in this process from {first.parent / (NAME + '.py')}" in said, said
    assert f"this config's folder has its own {second.parent / (NAME + '.py')}" in said and "rename one of the two" in said, said
    assert "config.yaml:2: metrics.0.type: custom metric 'tj_exp_metrics:mine': 'tj_exp_metrics' is already" in said, said
    assert "searched" not in said and "shadows" not in said, said  # (not the advice for a module not found or an installed one)


def test_the_same_config_read_again_and_a_config_without_a_module_of_its_own_import_as_before(two, tmp_path: Path) -> None:
    first, second = two
    tracejudge.load_config(first)
    tracejudge.load_config(first)
    (second.parent / f"{NAME}.py").unlink()  # its folder has none of its own: the one imported is the one Python finds
    tracejudge.load_config(second)
    tracejudge.load_config(first)


def test_a_target_and_an_adapter_of_another_configs_module_are_refused_alike(two) -> None:
    from tracejudge.core.registry import FormatError
    from tracejudge.stages.extract.custom import load_adapter
    from tracejudge.stages.target.python_target import load_callable

    first, second = two
    tracejudge.load_config(first)
    user_code.add_search_dir(second.parent)  # (as reading a config in the second folder does)
    with pytest.raises(ConfigError) as err:
        load_callable(f"{NAME}:mine")
    assert str(err.value).startswith(f"target.callable: {NAME!r} is already imported in this process from {first.parent}"), err.value
    with pytest.raises(FormatError) as err:
        load_adapter(f"{NAME}:mine")
    assert f"cannot import adapter '{NAME}:mine': {NAME!r} is already imported" in str(err.value), err.value
