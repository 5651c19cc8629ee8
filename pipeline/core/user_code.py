"""User code a config names (a custom metric's or adapter's module, a python target), imported as `python -m` would find it,
and modules whose names are imported on first use (PEP 562)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["AnotherConfigsModule", "add_search_dir", "import_user_module", "lazy_getattr", "where_imported"]


class AnotherConfigsModule(ImportError):
    """The module imported under a name the config names is another config's (read earlier in this process), while the
    config's own folder holds a module of that name (`import_user_module`); the message names both files."""


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


def add_search_dir(folder: os.PathLike[str] | str, *, config: bool = True) -> None:
    """Append `folder` (a config's folder) to `sys.path` for user code the config names; no-op if present.

    Appended, not prepended: an installed package of the same name wins. `config`: `folder` is the folder of the config
    being read (the one whose modules `import_user_module` checks are not another config's of the same name).
    """
    path = os.fspath(folder)
    if config:  # (the last is the config being read)
        _CONFIGS[:] = [*(f for f in _CONFIGS if f != path), path]
    if path not in _ADDED:
        _ADDED.append(path)
    if path not in sys.path:
        sys.path.append(path)


_ADDED: list[str] = []  # the folders given to `add_search_dir` (configs' folders): where `where_imported` looks for a file shadowed
_CONFIGS: list[str] = []  # the folders of the configs read that name user code, the one read last last


def import_user_module(module_name: str) -> Any:
    """Import a module of the user's (an adapter, metric or python target), as `python -m` would find it.

    Searched: `sys.path` (installed packages, `PYTHONPATH`, folders added by
    `add_search_dir`), then the current directory, which the `tracejudge`
    console script does not put on `sys.path` itself (`python -m` does).
    Raises what the import raises (`ModuleNotFoundError` when nowhere), and `AnotherConfigsModule` when the module of that name
    imported is another config's (`_another_configs`): Python imports a name once a process, so a second config beside
    its own `metrics.py` (a notebook running two experiments' folders) would silently run the first one's code.
    """
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        if not (exc.name and module_name.split(".")[0] == exc.name.split(".")[0]) or cwd in sys.path or "" in sys.path:
            raise  # a module missing *inside* the user's module, or the cwd was searched already
        add_search_dir(cwd, config=False)
        module = importlib.import_module(module_name)
    stale = _another_configs(module_name)
    if stale:
        raise AnotherConfigsModule(stale)
    return module


def _another_configs(module_name: str) -> str:
    """Why the module imported under `module_name`'s top-level name is not the current config's own ("" when it is, or
    when that config's folder holds no module of the name): it came from the folder of a config read earlier in this
    process, while the current config's folder has its own. An installed package (or, under `python -m`, the current
    directory's file) that shadows the config's file is `where_imported`'s to name, not this."""
    top = module_name.partition(".")[0]
    here = _origin(sys.modules.get(top))
    if here is None or not _CONFIGS:
        return ""
    folder = os.path.abspath(_CONFIGS[-1])
    mine = [p for p in _places(folder, top) if _module_at(p)]
    if not mine or any(_inside(here, p) for p in mine):
        return ""
    earlier = dict.fromkeys(os.path.abspath(f) for f in _CONFIGS[:-1])
    theirs = [p for f in earlier if f != folder for p in _places(f, top) if _inside(here, p)]
    if not theirs:
        return ""
    return (f"{top!r} is already imported in this process from {here}, another config's module (read earlier); this config's "
            f"folder has its own {mine[0]}, which Python does not import a second time under the same name: rename one of the "
            "two (and the module in its config), or run this config in a process of its own")


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
        for local in _places(folder, top):
            if _module_at(local) and not (here and _inside(here, local)):
                said = (f"{top!r} was imported from {here or origin}, not from {local}: another module of that name, found first "
                        f"on the import path, shadows that file; rename {os.path.basename(local)} to a name no installed "
                        "package uses, and the module in the config with it")
                return f"; {said}" if shadowed_only else f" ({said})"
    return "" if shadowed_only else f" (imported from {origin})"


def _places(folder: str, top: str) -> tuple[str, str]:
    # Where a module named `top` would be in `folder`: its file, or its package's folder.
    return os.path.join(folder, top + ".py"), os.path.join(folder, top)


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
