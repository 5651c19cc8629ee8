"""A module of the user's named by a config (a python target, a custom metric, an adapter) that an installed package of
the same name shadows: `agents.py` beside the config, openai-agents' `agents` imported instead. The error named neither
file (`target.callable: 'agents' has no attribute 'good'`); it names the file imported and, when a file of that name
sits beside the config or in the current directory, that it was not the one imported and to rename it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tracejudge.core import user_code
from tracejudge.core.errors import ConfigError
from tracejudge.core.registry import FormatError, SpecError, import_metric
from tracejudge.stages.extract.custom import load_adapter
from tracejudge.stages.target.python_target import load_callable

NAME = "tj_shadowed_mod"
USERS = '''\
import tracejudge


def good(request):
    return "hi"


@tracejudge.metric
def mine(case, trace):
    return 1.0


def adapt(record):
    return {"id": record["id"], "trace": {"steps": [], "output": "x"}}
'''


@pytest.fixture
def shadowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """An "installed" package `NAME` first on sys.path, and the user's `NAME.py` in a config's folder; the current
    directory elsewhere. Returns (the package's __init__.py, the user's file)."""
    site, project, elsewhere = tmp_path / "site", tmp_path / "project", tmp_path / "elsewhere"
    for folder in (site / NAME, project, elsewhere):
        folder.mkdir(parents=True)
    (site / NAME / "__init__.py").write_text("VERSION = 1\n")
    (project / f"{NAME}.py").write_text(USERS)
    monkeypatch.syspath_prepend(str(site))  # (sys.path, the folder added below included, is restored afterwards)
    monkeypatch.setattr(user_code, "_ADDED", [])
    monkeypatch.chdir(elsewhere)
    user_code.add_search_dir(project)  # as loading a config in `project` does
    yield site / NAME / "__init__.py", project / f"{NAME}.py"
    sys.modules.pop(NAME, None)


def _said(imported: Path, shadowed: Path) -> str:
    return (f"{NAME!r} was imported from {imported}, not from {shadowed}: another module of that name, found first on the "
            f"import path, shadows that file; rename {NAME}.py to a name no installed package uses, and the module in the "
            "config with it")


def test_a_target_metric_and_adapter_shadowed_by_an_installed_package_say_which_file_and_to_rename(shadowed) -> None:
    imported, users = shadowed
    with pytest.raises(ConfigError) as err:
        load_callable(f"{NAME}:good")
    assert str(err.value) == f"target.callable: {NAME!r} has no attribute 'good' ({_said(imported, users)})"
    with pytest.raises(SpecError) as err:
        import_metric(f"{NAME}:mine")
    assert f"{NAME!r} has no attribute 'mine' ({_said(imported, users)})" in str(err.value)
    with pytest.raises(FormatError) as err:
        load_adapter(f"{NAME}:adapt")
    assert str(err.value).endswith(f"module {NAME!r} has no attribute 'adapt' ({_said(imported, users)})")
    with pytest.raises(ConfigError) as err:  # a submodule the installed package lacks
        load_callable(f"{NAME}.agents:good")
    assert str(err.value).endswith(f"the current directory); {_said(imported, users)}")


def test_a_file_in_the_current_directory_shadowed_is_said_too(shadowed, monkeypatch: pytest.MonkeyPatch) -> None:
    imported, users = shadowed
    monkeypatch.setattr(user_code, "_ADDED", [])  # (no config's folder: the console script run where the file is)
    monkeypatch.chdir(users.parent)
    with pytest.raises(ConfigError) as err:
        load_callable(f"{NAME}:good")
    assert str(err.value) == f"target.callable: {NAME!r} has no attribute 'good' ({_said(imported, users)})"


def test_a_missing_attribute_names_the_file_imported(shadowed) -> None:
    imported, users = shadowed
    users.unlink()
    with pytest.raises(ConfigError) as err:
        load_callable(f"{NAME}:good")
    assert str(err.value) == f"target.callable: {NAME!r} has no attribute 'good' (imported from {imported})"
