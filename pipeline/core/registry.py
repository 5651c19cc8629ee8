"""Name → implementation tables for input formats and metrics.

The runner wires stages by the names a config gives; it never imports a
metric or adapter directly. Stages register themselves here when their
package is imported; the tables import `tracejudge.stages.extract` / `tracejudge.stages.score`
lazily on first use, so the core does not depend on the stages at import time.
Names this module cannot resolve itself (a user adapter `module:function`) go to
the resolvers the stages registered (`register_format_resolver`): the registry
never imports a stage module by name, so no stage module imports it back in a circle.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from tracejudge.core import suggest

__all__ = [
    "Format",
    "NoOptions",
    "FormatError",
    "SpecError",
    "add_search_dir",
    "build_metric",
    "format_for",
    "formats",
    "import_metric",
    "import_user_module",
    "metric_types",
    "register_format",
    "register_format_resolver",
    "register_metric",
]


class NoOptions(BaseModel):
    """`dataset.options` of a format that takes none: any key is refused when the config loads."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Format:
    """An input format.

    - `read(dataset) -> Iterator[RawRecord]` streams raw records from disk;
    - `prepare(dataset) -> ctx` loads what every record needs (a tasks file),
      once per run;
    - `adapt(raw, ctx) -> Case` is a pure function from one raw record;
    - `options`, when given, is the pydantic model that `dataset.options`
      must validate against (checked when the config loads).
    - `peek_id(raw) -> str | None` (optional) returns, much faster than
      `adapt`, the id that `adapt` would give the record, or `None` when it
      cannot tell cheaply; a resume uses it to skip finished cases unparsed.
    - `reads_dirs`: `dataset.path` may be a folder (else it must be a file,
      checked when the config loads).
    - `needs_target`: the records are tasks, not runs (they carry no trace):
      the config must have a `target` that produces each trace (checked
      when the config loads; without one every case would be `invalid_input`).
    - `remote`: the records come from a server named in `dataset.options`
      (Phoenix, MLflow), not from `dataset.path`, which is then not given;
      the runner reads them in a thread so the event loop never waits on the network.
    - `bind(dataset, run_dir) -> dataset` (optional) fills in, before reading,
      what depends on the run directory (`start: last_run`).
    """

    name: str
    read: Callable[[Any], Iterator[Any]]
    adapt: Callable[[Any, Any], Any]
    prepare: Callable[[Any], Any] = lambda dataset: None
    options: type[BaseModel] | None = None
    peek_id: Callable[[Any], str | None] | None = None
    reads_dirs: bool = False
    needs_target: bool = False
    remote: bool = False
    bind: Callable[[Any, Any], Any] | None = None


class FormatError(ValueError):
    """`dataset.format` names no registered format and no importable adapter."""


class SpecError(Exception):
    """A metric spec is invalid; `loc` is the key path inside the spec."""

    def __init__(self, loc: tuple[Any, ...], msg: str) -> None:
        super().__init__(msg)
        self.loc = loc
        self.msg = msg


_FORMATS: dict[str, Format] = {}
_METRICS: dict[str, type[BaseModel]] = {}
_FORMAT_RESOLVERS: list[Callable[[str], Format | None]] = []


def register_format(fmt: Format) -> Format:
    """Add an input format under `fmt.name` (last registration wins)."""
    _FORMATS[fmt.name] = fmt
    return fmt


def register_format_resolver(resolver: Callable[[str], Format | None]) -> None:
    """Add a fallback for format names not in the table (tried in order of registration).

    A resolver returns a `Format` for a name it understands, `None` for one it
    does not, and raises `FormatError` for one it understands but cannot load.
    """
    if resolver not in _FORMAT_RESOLVERS:
        _FORMAT_RESOLVERS.append(resolver)


def register_metric(cls: type[BaseModel]) -> type[BaseModel]:
    """Class decorator: register a metric model under its class name."""
    _METRICS[cls.__name__] = cls
    return cls


def _ensure(package: str) -> None:
    importlib.import_module(package)


def formats() -> dict[str, Format]:
    """All registered input formats by name."""
    _ensure("tracejudge.stages.extract")
    return dict(_FORMATS)


def format_for(name: str) -> Format:
    """The format named `name`, or a user adapter named `module.path:attribute`.

    A user adapter is imported on first use (see `tracejudge.stages.extract.custom`).
    Raises `KeyError` for an unknown plain name and `FormatError` when a
    dotted path cannot be imported or does not name an adapter.
    """
    table = formats()
    if name in table:
        return table[name]
    for resolve in _FORMAT_RESOLVERS:
        found = resolve(name)
        if found is not None:
            return register_format(found)
    raise KeyError(name)


def metric_types() -> dict[str, type[BaseModel]]:
    """All registered metric classes by their config `type` name."""
    _ensure("tracejudge.stages.score")
    _ensure("tracejudge.stages.judge")
    return dict(_METRICS)


def import_metric(path: str) -> type[BaseModel]:
    """Import a custom metric class from `module:attribute` (or `module.attribute`).

    The module is searched on `sys.path` and in the current directory, as
    `python -m` would.

    The object must be a metric class: a subclass of `tracejudge.stages.score.base.Metric`,
    such as one made by `@tracejudge.metric`. Raises `SpecError` at `("type",)`
    when the module does not import (or raises while importing), the
    attribute is missing, or the object is not a metric class.
    """
    from tracejudge.stages.score.base import Metric

    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise SpecError(("type",), f"custom metric {path!r}: expected `module:attribute`, e.g. `mypkg.metrics:no_failed_tools`")
    try:
        obj: Any = import_user_module(module_name)
    except ImportError as exc:
        raise SpecError(
            ("type",), f"custom metric {path!r}: cannot import module {module_name!r}: {exc} (searched PYTHONPATH, the config's folder and the current directory)"
        ) from None
    except Exception as exc:  # the user's module raised while importing
        raise SpecError(("type",), f"custom metric {path!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SpecError(("type",), f"custom metric {path!r}: {module_name!r} has no attribute {attr!r}") from None
    if isinstance(obj, type) and issubclass(obj, Metric):
        return obj
    what = f"an instance of {type(obj).__name__}" if not isinstance(obj, type) else f"the class {obj.__name__}"
    if callable(obj) and not isinstance(obj, type):
        what = f"a plain {type(obj).__name__}"
    raise SpecError(
        ("type",),
        f"custom metric {path!r} is {what}, not a metric; decorate the function with @tracejudge.metric or subclass tracejudge.Metric",
    )


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


def build_metric(spec: dict[str, Any]) -> Any:
    """Turn a metric spec (`{"type": ..., **params}`) into a metric instance.

    `type` is a registered name (`ToolCalls`) or the dotted path of a custom
    metric class (`mypkg.metrics:no_failed_tools`, see `import_metric`).
    Raises `SpecError` naming the offending key for an unknown type, a path
    that does not import or names no metric, or invalid parameters.
    """
    if not isinstance(spec, dict):
        raise SpecError((), f"a metric spec must be a mapping, got {type(spec).__name__}")
    kind = spec.get("type")
    if not isinstance(kind, str):
        raise SpecError(("type",), "required key `type` is missing (a metric type name such as ToolCalls)")
    table = metric_types()
    cls = table.get(kind)
    if cls is None and (":" in kind or "." in kind):
        cls = import_metric(kind)
    if cls is None:
        if hint := suggest.did_you_mean(kind, table):
            raise SpecError(("type",), f"unknown metric type {kind!r}; {hint} (`tracejudge list metrics` lists them all)")
        known = ", ".join(sorted(table))
        raise SpecError(
            ("type",),
            f"unknown metric type {kind!r}; expected one of: {known}, or a custom metric as `module:attribute`",
        )
    params = {k: v for k, v in spec.items() if k != "type"}
    try:
        return cls.model_validate(params)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = "unknown parameter" + suggest.key_hint(cls, tuple(err["loc"])) if err["type"] == "extra_forbidden" else err["msg"]
        if err["type"] == "missing":
            msg = "required parameter is missing"
        extra = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise SpecError(tuple(err["loc"]), f"{kind}: {msg}{extra}") from None
