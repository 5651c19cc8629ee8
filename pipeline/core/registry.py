"""Name → implementation tables for input formats and metrics.

The runner wires stages by the names a config gives; it never imports a
metric or adapter directly. Each built-in name is listed with the module
that defines it (`FORMAT_MODULES`, `METRIC_CLASSES`, in `builtin_names`), and a module registers
what it defines when it is imported; a look-up imports only the module of the
name asked for, so a run reading one native file does not import the MLflow,
Phoenix or Langfuse adapters, nor the judge's metrics. Names alone (`tracejudge
list`, "did you mean", the error listing known formats) come from the tables
without importing anything. A test checks the tables against what the modules
register. Names not in the tables (a user adapter `module:function`) go to the
resolvers the stages registered (`register_format_resolver`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from tracejudge.core import suggest
from tracejudge.core.builtin_names import FORMAT_MODULES, METRIC_CLASSES
from tracejudge.core.spec_messages import param_problems
from tracejudge.core.user_code import AnotherConfigsModule, add_search_dir, import_user_module, lazy_getattr, where_imported

__all__ = [
    "Format",
    "NoOptions",
    "FORMAT_MODULES",
    "FormatError",
    "METRIC_CLASSES",
    "SpecError",
    "add_search_dir",
    "build_metric",
    "format_for",
    "formats",
    "import_metric",
    "import_user_module",
    "lazy_getattr",
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
      when the config loads; without one every case would be `invalid_input`;
      `tracejudge extract`, which only converts, needs none).
    - `remote`: the records come from a server named in `dataset.options`
      (Phoenix, MLflow), not from `dataset.path`, which is then not given;
      the runner reads them in a thread so the event loop never waits on the network.
    - `bind(dataset, run_dir) -> dataset` (optional) fills in, before reading,
      what depends on the run directory (`start: last_run`).
    - `count(dataset) -> int` (optional) counts the records `read` yields, for
      an ETA, without the checks `read` makes as it goes (`json-path` warns at
      the end of a read about mappings that matched nothing: once per run).
    - `whole_file`: a file is one document in the format's own framing (a JSON
      array of runs, a results object, OTLP exports), not a record per line:
      when none of its records reads, the file is not of this format, and the
      run is refused before it starts (`stages/extract/first_records`).
    - `beside`: the name of a folder beside a file `dataset.path` that `read`
      reads too (τ²-bench's dir layout: `simulations/` beside `results.json`);
      the manifest fingerprints it as the dataset's `beside` role, so a resume
      notices a change in it as in the file (`engine.manifest.dataset_files`).
    - `folder_file`: with `beside`, the file a folder `dataset.path` holds beside
      that folder, which `read` reads (τ²-bench's `results.json`): a folder
      lacking either is no dataset of the format (`init` refuses it).
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
    count: Callable[[Any], int] | None = None
    whole_file: bool = False
    beside: str | None = None
    folder_file: str | None = None


class FormatError(ValueError):
    """`dataset.format` names no registered format and no importable adapter."""


class SpecError(Exception):
    """A metric spec is invalid; `loc` is the key path inside the spec, `msg` says what is wrong (the first mistake,
    with a count of the others). `problems` is every mistake as `(loc, msg)`, one each (a config lists them all)."""

    def __init__(self, loc: tuple[Any, ...], msg: str, problems: list[tuple[tuple[Any, ...], str]] | None = None) -> None:
        super().__init__(msg)
        self.loc = loc
        self.msg = msg
        self.problems = problems if problems else [(loc, msg)]


_FORMATS: dict[str, Format] = {}
_METRICS: dict[str, type[BaseModel]] = {}
_FORMAT_RESOLVERS: list[Callable[[str], Format | None]] = []

_V = TypeVar("_V")


class _Table(Mapping[str, _V], Generic[_V]):
    """A read-only view of registered items: every built-in name (from `modules`) and whatever else was registered.

    Iterating, `len` and `in` import nothing; getting a built-in name's value
    imports the module named for it first. Raises `KeyError` for an unknown name.
    """

    def __init__(self, registered: dict[str, _V], modules: dict[str, str]) -> None:
        self._registered = registered
        self._modules = modules

    def __getitem__(self, name: str) -> _V:
        if name not in self._registered and name in self._modules:
            importlib.import_module(self._modules[name].partition(":")[0])
        return self._registered[name]

    def __contains__(self, name: object) -> bool:
        return name in self._modules or name in self._registered

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._modules, *self._registered]))

    def __len__(self) -> int:
        return len(self._modules.keys() | self._registered.keys())


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


def formats() -> Mapping[str, Format]:
    """Every input format by name: the built-in ones and any registered since (a user adapter once used).

    A mapping that imports a format's module only when that format is looked up
    (see `_Table`); names alone cost nothing.
    """
    return _Table(_FORMATS, FORMAT_MODULES)


def format_for(name: str) -> Format:
    """The format named `name`, or a user adapter named `module.path:attribute`.

    A user adapter is imported on first use (see `tracejudge.stages.extract.custom`).
    Raises `KeyError` for an unknown plain name and `FormatError` when a
    dotted path cannot be imported or does not name an adapter.
    """
    table = formats()
    if name in table:
        return table[name]
    importlib.import_module("tracejudge.stages.extract")  # registers the resolver of user adapters
    for resolve in _FORMAT_RESOLVERS:
        found = resolve(name)
        if found is not None:
            return register_format(found)
    raise KeyError(name)


def metric_types() -> Mapping[str, type[BaseModel]]:
    """Every metric class by its config `type` name: the built-in ones and any registered since.

    A mapping that imports a metric's module only when that metric is looked
    up (see `_Table`); names alone cost nothing.
    """
    return _Table(_METRICS, METRIC_CLASSES)


def _misspelt_builtin(kind: str, table: Mapping[str, Any]) -> str | None:
    """`"did you mean …?"` when `kind`, which reads as `module:attribute`, names no module that can be found and is near a
    built-in type whose own name has a colon (promptfoo's `trajectory:tool-used`): `trajectory:tool-usd` is a typo,
    not a custom metric in a module `trajectory`. Else None (a custom metric: `import_metric` says what is wrong)."""
    import importlib.util

    module = kind.partition(":")[0] if ":" in kind else kind.rpartition(".")[0]
    hint = suggest.did_you_mean(kind, [name for name in table if ":" in name], n=1, typo=True)
    if not hint:
        return None
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # (no parent package, an empty or relative name: not a module either)
        found = False
    return None if found else hint


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
    except AnotherConfigsModule as exc:
        raise SpecError(("type",), f"custom metric {path!r}: {exc}") from None
    except ImportError as exc:
        raise SpecError(
            ("type",), f"custom metric {path!r}: cannot import module {module_name!r}: {exc} (searched PYTHONPATH, the config's folder and the current directory)"
            f"{where_imported(module_name, shadowed_only=True)}"
        ) from None
    except Exception as exc:  # the user's module raised while importing
        raise SpecError(("type",), f"custom metric {path!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            # The metrics the module does define, nearest first: a typo of one is the usual cause.
            metrics = [k for k, v in vars(obj).items() if isinstance(v, type) and issubclass(v, Metric)] if hasattr(obj, "__dict__") else []
            hint = suggest.did_you_mean(part, metrics)
            # Which file was imported (an installed package of the same name shadows a module beside the config), unless
            # the module has a metric of a near name: then it is the user's.
            where = where_imported(module_name, shadowed_only=bool(hint))
            raise SpecError(("type",), f"custom metric {path!r}: {module_name!r} has no attribute {attr!r}{where}" + (f"; {hint}" if hint else "")) from None
    if isinstance(obj, type) and issubclass(obj, Metric):
        return obj
    what = f"an instance of {type(obj).__name__}" if not isinstance(obj, type) else f"the class {obj.__name__}"
    if callable(obj) and not isinstance(obj, type):
        what = f"a plain {type(obj).__name__}"
    raise SpecError(
        ("type",),
        f"custom metric {path!r} is {what}, not a metric; decorate the function with @tracejudge.metric or subclass tracejudge.Metric",
    )


# The peers' own names for a metric (class names a config copied from deepeval or pydantic-evals holds), lower-cased:
# what takes their place here. A typing slip finds none of these, or the wrong one (`ToolCorrectnessMetric` is nearest
# `ToolCorrectness`, whose numbers are pydantic-evals'; `GEval` is nearest `equals`).
PEER_METRIC_TYPES: dict[str, tuple[str, str]] = {
    "toolcorrectnessmetric": ("DeepEvalToolCorrectness", "deepeval's ToolCorrectnessMetric is `type: DeepEvalToolCorrectness`, "
                              "with its options and its score"),
    "geval": ("Rubric", "deepeval's GEval is `type: Rubric`: its `criteria` as `criteria`, graded on `scale` (default [1, 5]) "
              "by the judge"),
    "llmjudge": ("Rubric", "pydantic-evals' LLMJudge is `type: Rubric`: its `rubric` as `criteria` (`scale: [0, 1]` for a pass "
                 "or a fail)"),
    "equalsexpected": ("ExactMatch", "pydantic-evals' EqualsExpected is `type: ExactMatch` (the output against the case's "
                       "expected_output)"),
}


def _type_typo(problem: tuple[tuple[Any, ...], str], kind: str) -> tuple[tuple[Any, ...], str]:
    """`problem` of a metric's parameters, with `did you mean type?` added when it is an unknown key a slip from `type`.

    `type` is the spec's key, not a parameter, so the parameters' own hint never offers it: `--set metrics.0.tpye=Regex`
    beside the file's `type` was "unknown parameter" and nothing more.
    """
    loc, message = problem
    if len(loc) == 1 and message.endswith("unknown parameter") and suggest.closest(str(loc[0]), ["type"], typo=True):
        return loc, f"{message}; did you mean type? (this metric's type is {kind})"
    return problem


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
        if "type" not in spec and (typo := suggest.missing_key_typo("type", spec)) is not None:
            raise SpecError((typo,), suggest.unknown_key_message(typo, "type"))
        raise SpecError(("type",), "required key `type` is missing (a metric type name such as ToolCalls)")
    table = metric_types()
    cls = table.get(kind)
    if cls is None and (":" in kind or "." in kind):
        if (hint := _misspelt_builtin(kind, table)) is not None:
            raise SpecError(("type",), f"unknown metric type {kind!r}; {hint} (`tracejudge list metrics` lists them all)")
        cls = import_metric(kind)
    if cls is None and (peer := PEER_METRIC_TYPES.get(kind.lower())) is not None:
        raise SpecError(("type",), f"unknown metric type {kind!r}; {peer[1]} (`tracejudge explain {peer[0]}`)")
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
        # (an unknown key beside a missing one is one problem, shown as one: the count says only what the line does not)
        each = [_type_typo(problem, kind) for problem in param_problems(exc.errors(), f"{kind}: ", cls)]
        extra = f" (and {len(each) - 1} more)" if len(each) > 1 else ""
        raise SpecError(each[0][0], each[0][1] + extra, each) from None
