"""Name → implementation tables for input formats and metrics.

The runner wires stages by the names a config gives; it never imports a
metric or adapter directly. Stages register themselves here when their
package is imported; the tables import `stages.extract` / `stages.score`
lazily on first use, so `pipeline` does not depend on `stages` at import time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

__all__ = [
    "Format",
    "SpecError",
    "build_metric",
    "format_for",
    "formats",
    "metric_types",
    "register_format",
    "register_metric",
]


@dataclass(frozen=True)
class Format:
    """An input format.

    - `read(dataset) -> Iterator[RawRecord]` streams raw records from disk;
    - `prepare(dataset) -> ctx` loads what every record needs (a tasks file),
      once per run;
    - `adapt(raw, ctx) -> Case` is a pure function from one raw record;
    - `peek_id(raw) -> str | None` (optional) returns, much faster than
      `adapt`, the id that `adapt` would give the record, or `None` when it
      cannot tell cheaply; a resume uses it to skip finished cases unparsed.
    """

    name: str
    read: Callable[[Any], Iterator[Any]]
    adapt: Callable[[Any, Any], Any]
    prepare: Callable[[Any], Any] = lambda dataset: None
    peek_id: Callable[[Any], str | None] | None = None


class SpecError(Exception):
    """A metric spec is invalid; `loc` is the key path inside the spec."""

    def __init__(self, loc: tuple[Any, ...], msg: str) -> None:
        super().__init__(msg)
        self.loc = loc
        self.msg = msg


_FORMATS: dict[str, Format] = {}
_METRICS: dict[str, type[BaseModel]] = {}


def register_format(fmt: Format) -> Format:
    """Add an input format under `fmt.name` (last registration wins)."""
    _FORMATS[fmt.name] = fmt
    return fmt


def register_metric(cls: type[BaseModel]) -> type[BaseModel]:
    """Class decorator: register a metric model under its class name."""
    _METRICS[cls.__name__] = cls
    return cls


def _ensure(package: str) -> None:
    importlib.import_module(package)


def formats() -> dict[str, Format]:
    """All registered input formats by name."""
    _ensure("stages.extract")
    return dict(_FORMATS)


def format_for(name: str) -> Format:
    """The format named `name`; `KeyError` if unknown."""
    return formats()[name]


def metric_types() -> dict[str, type[BaseModel]]:
    """All registered metric classes by their config `type` name."""
    _ensure("stages.score")
    return dict(_METRICS)


def build_metric(spec: dict[str, Any]) -> Any:
    """Turn a metric spec (`{"type": ..., **params}`) into a metric instance.

    Raises `SpecError` naming the offending key for an unknown type or
    invalid parameters.
    """
    if not isinstance(spec, dict):
        raise SpecError((), f"a metric spec must be a mapping, got {type(spec).__name__}")
    kind = spec.get("type")
    if not isinstance(kind, str):
        raise SpecError(("type",), "required key `type` is missing (a metric type name such as ToolCalls)")
    table = metric_types()
    cls = table.get(kind)
    if cls is None:
        known = ", ".join(sorted(table))
        raise SpecError(("type",), f"unknown metric type {kind!r}; expected one of: {known}")
    params = {k: v for k, v in spec.items() if k != "type"}
    try:
        return cls.model_validate(params)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = "unknown parameter" if err["type"] == "extra_forbidden" else err["msg"]
        if err["type"] == "missing":
            msg = "required parameter is missing"
        extra = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise SpecError(tuple(err["loc"]), f"{kind}: {msg}{extra}") from None
