"""The pytest plugin (loaded automatically through the `pytest11` entry point).

It provides the `tracejudge` fixture: an `Evaluator` whose judge cache lives
in pytest's cache folder (`.pytest_cache/d/tracejudge`; a session temporary
folder when the cache plugin is disabled), so judge answers paid for in one
test session are reused by the next. The judge, rate limits and budget come
from the YAML file named by the `tracejudge_config` ini option (its `judge`,
`limits` and `budget` sections, as in a run config), when set.

The assertions themselves (`assert_called_tool`, `assert_trajectory`,
`assert_score`) are plain functions in `tracejudge`; pytest shows their
messages with the assertion frames hidden.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tracejudge.entrypoints.api import Evaluator

__all__ = ["pytest_addoption", "tracejudge"]

_SECTIONS = ("judge", "limits", "budget")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the `tracejudge_config` ini option."""
    parser.addini(
        "tracejudge_config",
        "YAML file (relative to the rootdir) whose judge / limits / budget sections configure the `tracejudge` fixture",
        default="",
    )


def _settings(config: pytest.Config) -> dict[str, Any]:
    import yaml

    name = str(config.getini("tracejudge_config") or "")
    if not name:
        return {}
    path = Path(name) if Path(name).is_absolute() else config.rootpath / name
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise pytest.UsageError(f"tracejudge_config = {name}: cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise pytest.UsageError(f"tracejudge_config = {name}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise pytest.UsageError(f"tracejudge_config = {name}: expected a mapping of sections")
    return {k: data[k] for k in _SECTIONS if data.get(k) is not None}


@pytest.fixture(scope="session")
def tracejudge(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Evaluator:
    """An `Evaluator` (`.evaluate`, `.aevaluate`, `.evaluate_case`) with the judge cache in pytest's cache folder."""
    # Imported here: the plugin loads in every pytest session of an environment with tracejudge installed.
    from tracejudge.entrypoints.api import Evaluator

    cache = getattr(pytestconfig, "cache", None)
    cache_dir = cache.mkdir("tracejudge") if cache is not None else tmp_path_factory.mktemp("tracejudge-cache")
    return Evaluator(cache={"dir": str(cache_dir)}, **_settings(pytestconfig))
