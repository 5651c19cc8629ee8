"""User adapters named by import path: `dataset.format: mypkg.adapters:from_langsmith`.

The named attribute is either

- a function `record -> Case | dict` (or `(record, options) -> ...` when it
  takes two parameters; `options` is `dataset.options` as a dict). The
  dataset is read as JSONL, one JSON object per line; a returned dict is
  validated as a native case, with `id` defaulting to `"<file>:<line>"`.
  Whatever the function raises costs that one record (`invalid_input`); or
- a `tracejudge.core.registry.Format`, for full control over reading.

The module must be importable: installed, on `PYTHONPATH`, in the config's
folder or in the current directory (tried last, as `python -m` would).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from tracejudge.core.records import Case
from tracejudge.core.registry import Format, FormatError, import_user_module
from tracejudge.core.user_code import AnotherConfigsModule
from tracejudge.core.user_code import where_imported
from tracejudge.stages.extract.common import build_case, decode_line, fail, read_lines

__all__ = ["load_adapter"]


def _import(module: str, spec: str) -> Any:
    try:
        return import_user_module(module)
    except AnotherConfigsModule as exc:
        raise FormatError(f"cannot import adapter {spec!r}: {exc}") from None
    except ModuleNotFoundError as exc:
        raise FormatError(f"cannot import adapter {spec!r}: {exc} (searched PYTHONPATH, the config's folder and the current directory)"
                          f"{where_imported(module, shadowed_only=True)}") from None
    except Exception as exc:  # a user module that fails on import must be a config error, not a crash
        raise FormatError(f"cannot import adapter {spec!r}: importing {module!r} raised {type(exc).__name__}: {exc}") from None


def _wrap(fn: Any, spec: str) -> Format:
    try:
        takes_options = len([p for p in inspect.signature(fn).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) >= 2
    except (TypeError, ValueError):
        takes_options = False

    def adapt(payload: Any, options: dict[str, Any] | None) -> Case:
        record, default_id = decode_line(payload)
        got = fn(record, dict(options or {})) if takes_options else fn(record)
        if isinstance(got, Case):
            return got
        if isinstance(got, dict):
            return build_case({"id": default_id, **got})
        fail(f"adapter {spec} returned {type(got).__name__}; expected a Case or a mapping in the case shape")

    return Format(spec, read=read_lines, adapt=adapt, prepare=lambda ds: ds.options)


def load_adapter(spec: str) -> Format:
    """Import the adapter `module.path:attribute` and return it as a `Format` named `spec`.

    Raises `FormatError` with a message fit for the user when the spec is
    malformed, the module cannot be imported (or raises while importing),
    the attribute is missing, or it is neither a `Format` nor callable.
    """
    module, _, attr = spec.partition(":")
    if not module or not attr or ":" in attr:
        raise FormatError(f"adapter {spec!r}: expected module.path:function")
    mod = _import(module, spec)
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise FormatError(f"cannot import adapter {spec!r}: module {module!r} has no attribute {attr!r}{where_imported(module)}")
        obj = getattr(obj, part)
    if isinstance(obj, Format):
        return dataclasses.replace(obj, name=spec)
    if not callable(obj):
        raise FormatError(f"adapter {spec!r} is a {type(obj).__name__}, not a function or a Format")
    return _wrap(obj, spec)
