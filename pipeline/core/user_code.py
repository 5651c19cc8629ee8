"""User code a config names (a custom metric's or adapter's module, a python target), imported as `python -m` would find it,
and modules whose names are imported on first use (PEP 562)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["add_search_dir", "import_user_module", "lazy_getattr"]


def lazy_getattr(namespace: dict[str, Any], table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module's `__getattr__` (PEP 562) importing each name of `table` on first use.

    `table` maps an exported name to `module:attribute` (or to a module
    holding an attribute of the same name); `namespace` is the module's
    `globals()`, where the value is stored so later look-ups skip the
    function. Other names raise `AttributeError`, as for any module.
    """

    def __getattr__(name: str) -> Any:
        path = table.get(name)
        if path is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        module, _, attr = path.partition(":")
        value = getattr(importlib.import_module(module), attr or name)
        namespace[name] = value
        return value

    return __getattr__


def add_search_dir(folder: os.PathLike[str] | str) -> None:
    """Append `folder` (a config's folder) to `sys.path` for user code the config names; no-op if present.

    Appended, not prepended: an installed package of the same name wins.
    """
    path = os.fspath(folder)
    if path not in sys.path:
        sys.path.append(path)


def import_user_module(module_name: str) -> Any:
    """Import a module of the user's (an adapter, metric or python target), as `python -m` would find it.

    Searched: `sys.path` (installed packages, `PYTHONPATH`, folders added by
    `add_search_dir`), then the current directory, which the `tracejudge`
    console script does not put on `sys.path` itself (`python -m` does).
    Raises what the import raises (`ModuleNotFoundError` when nowhere).
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        if not (exc.name and module_name.split(".")[0] == exc.name.split(".")[0]) or cwd in sys.path or "" in sys.path:
            raise  # a module missing *inside* the user's module, or the cwd was searched already
        add_search_dir(cwd)
        return importlib.import_module(module_name)
