"""User code a config names (a custom metric's or adapter's module, a python target), imported as `python -m` would find it,
and modules whose names are imported on first use (PEP 562)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["add_search_dir", "import_user_module", "lazy_getattr", "where_imported"]


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
    if path not in _ADDED:
        _ADDED.append(path)
    if path not in sys.path:
        sys.path.append(path)


_ADDED: list[str] = []  # the folders given to `add_search_dir` (configs' folders): where `where_imported` looks for a file shadowed


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


def where_imported(module_name: str, *, shadowed_only: bool = False) -> str:
    """What an error about the user's module `module_name` (already imported) adds: ` (imported from FILE)`, and, when a
    file or package of its top-level name sits in a config's folder (`add_search_dir`) or the current directory but
    another was imported (an installed package of that name comes first on `sys.path`), that it was not the one
    imported and to rename it. "" when the module is not imported or has no file, and with `shadowed_only` (a submodule
    not found in the package imported) unless such a file was shadowed."""
    top = module_name.partition(".")[0]
    module, package = sys.modules.get(module_name), sys.modules.get(top)
    origin = _origin(module) or _origin(package)
    if origin is None:
        return ""
    here = _origin(package)
    folders = dict.fromkeys(os.path.abspath(f or ".") for f in [*_ADDED, os.getcwd()])
    for folder in folders:
        for local in (os.path.join(folder, top + ".py"), os.path.join(folder, top)):
            if _module_at(local) and not (here and _inside(here, local)):
                said = (f"{top!r} was imported from {here or origin}, not from {local}: another module of that name, found first "
                        f"on the import path, shadows that file; rename {os.path.basename(local)} to a name no installed "
                        "package uses, and the module in the config with it")
                return f"; {said}" if shadowed_only else f" ({said})"
    return "" if shadowed_only else f" (imported from {origin})"


def _module_at(path: str) -> bool:
    # A module file, or a package folder (with `__init__.py`, or Python files of a namespace package): not a data folder.
    if os.path.isfile(path):
        return path.endswith(".py")
    try:
        return os.path.isdir(path) and any(name.endswith(".py") for name in os.listdir(path))
    except OSError:
        return False


def _origin(module: Any) -> str | None:
    # A module's file; a namespace package's first folder; None for a built-in or a module never imported.
    if module is None:
        return None
    file = getattr(module, "__file__", None)
    if file:
        return os.path.abspath(file)
    paths = list(getattr(module, "__path__", None) or [])
    return os.path.abspath(paths[0]) if paths else None


def _inside(origin: str, local: str) -> bool:
    # Whether the module imported from `origin` is the file or package `local` (symbolic links followed).
    real, target = os.path.realpath(origin), os.path.realpath(local)
    return real == target or real.startswith(target + os.sep)
