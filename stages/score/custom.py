"""Custom metrics: turn a plain function into a metric class.

    @tracejudge.metric(threshold=1.0)
    def no_failed_tools(case: Case, trace: Trace, *, allowed: int = 0) -> bool:
        return sum(c.failed for c in trace.tool_calls()) <= allowed

`no_failed_tools` is then a metric class like `ToolCalls`: `no_failed_tools()`
or `no_failed_tools(allowed=1, name="few_failures")` make instances, and a
config names it by dotted path (`type: mypkg.metrics:no_failed_tools`).
The function's keyword-only parameters are the metric's parameters: their
annotations and defaults become a pydantic model, so a config with an
unknown or mistyped parameter is refused when it loads, like any metric's.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
import os
import traceback
import typing
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeAlias, overload

import anyio
from pydantic import Field, create_model
from tracejudge.core.errors import describe, leaves
from tracejudge.core.records import Case, Score
from tracejudge.core.utf8 import safe_text
from tracejudge.stages.score.base import FAILED, Metric, metric_fault, no_trace

__all__ = ["FunctionMetric", "MetricFunction", "MetricValue", "metric"]

MetricValue: TypeAlias = "float | bool | Score | None"
"""What a metric function may return (or, when async, resolve to)."""

MetricFunction: TypeAlias = "Callable[..., MetricValue | Awaitable[MetricValue]]"
"""`(case, trace, **params) -> MetricValue`, sync or async."""

_RESERVED = frozenset({"name", "threshold", "key", "cutoff", "verdict", "evaluate", "aevaluate", "fn", "params"})


class FunctionMetric(Metric):
    """Base class of metrics made by `@metric`; one subclass per decorated function.

    `evaluate(case)` calls the function with `(case, case.trace, **params)`
    and turns what it returns into a `Score`:

    - a `Score` is kept; when it has a value but `passed` is `None`, the
      threshold decides `passed`;
    - `True` / `False` → value 1.0 / 0.0;
    - a number in [0, 1] → that value (a number outside [0, 1], NaN or
      infinity, or a value of another type → `value: null`, the reason,
      `metric failed: …`, says what came back: a bug in the metric, counted
      as a metric that raised);
    - `None` → `value: null` ("not computed": the case cannot be scored);
    - an exception (`SystemExit` too) → `value: null`, the exception type,
      message and the line of the function that raised in the reason. It never propagates:
      one failing case costs that case's score, not the run.

    A case without a trace gets `value: null` without calling the function.
    `threshold` defaults to the decorator's (1.0 unless given), so a
    bool-returning metric passes exactly when it returns `True`.
    An `async def` function is awaited by `aevaluate` (the pipeline's score
    stage awaits it); calling the sync `evaluate` on it outside an event
    loop runs it to completion, inside one it is refused.
    """

    fn: ClassVar[Callable[..., Any]]
    is_async: ClassVar[bool] = False
    param_names: ClassVar[tuple[str, ...]] = ()

    def params(self) -> dict[str, Any]:
        """The metric's own parameters (not `name` / `threshold`) as passed to the function."""
        return {k: getattr(self, k) for k in self.param_names}

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        if self.is_async:
            if not _in_event_loop():
                return anyio.run(self.aevaluate, case)
            return Score(
                value=None,
                reason=f"not computed: {self._label()} is async; inside an event loop use `await metric.aevaluate(case)`",
            )
        try:
            out = type(self).fn(case, case.trace, **self.params())
        except BaseException as exc:  # (`sys.exit()` too: `metric_fault`)
            if not metric_fault(exc):
                raise
            return self._raised(exc)
        if inspect.isawaitable(out):
            # A sync function returning an awaitable: close it so it does not warn, and say so.
            close = getattr(out, "close", None)
            if callable(close):
                close()
            return Score(value=None, reason=f"{FAILED}{self._label()} returned an awaitable; use aevaluate")
        return self._to_score(out)

    async def aevaluate(self, case: Case) -> Score:
        """`evaluate`, awaiting the function (or what it returns) when it is async."""
        if case.trace is None:
            return no_trace()
        try:
            out = type(self).fn(case, case.trace, **self.params())
            if inspect.isawaitable(out):
                out = await out
        except BaseException as exc:  # (`sys.exit()` too: `metric_fault`)
            if not metric_fault(exc, awaited=True):  # (a cancellation here is the run's: a stop, the time limit)
                raise
            return self._raised(exc)
        return self._to_score(out)

    def _label(self) -> str:
        return f"metric function {type(self).fn.__qualname__}"

    def _raised(self, exc: BaseException) -> Score:
        # Of an exception group (a metric that runs things in a task group), where its first leaf was raised:
        # the group itself is raised where the task group ends, which says nothing of what failed. A leaf built
        # into a group without being raised has no place of its own: the group's is where the metric raised it.
        leaf = leaves(exc)[0]
        where = _where(traceback.extract_tb(leaf.__traceback__ or exc.__traceback__))
        return Score(
            value=None,
            passed=None,
            reason=safe_text(f"metric raised {describe(exc)}{where}"),
            details={"exception": type(leaf).__name__},
        )

    def _to_score(self, out: Any) -> Score:
        label = self._label()
        if isinstance(out, Score):
            # A lone surrogate in the metric's own reason is escaped: unwritable, it made the whole case an
            # invalid_input blamed on its record, and cost the case its other scores.
            reason = safe_text(out.reason)
            update: dict[str, Any] = {} if reason is out.reason else {"reason": reason}
            if out.value is not None and out.passed is None:
                update["passed"] = out.value >= self.cutoff
            return out.model_copy(update=update) if update else out
        if isinstance(out, bool):
            return self.verdict(1.0 if out else 0.0, f"{label} returned {out}")
        if isinstance(out, (int, float)):
            value = float(out)
            if math.isnan(value) or not 0.0 <= value <= 1.0:
                return Score(value=None, reason=f"{FAILED}{label} returned {out!r}, outside [0, 1]")
            return self.verdict(value, f"{label} returned {value!r}")
        if out is None:
            return Score(value=None, reason=f"not computed: {label} returned None")
        return Score(value=None, reason=f"{FAILED}{label} returned {type(out).__name__}; expected a float, bool, Score or None")


def _where(frames: traceback.StackSummary) -> str:
    """` (at checks.py:5, in broken)`: where a metric raised, for its score's reason. The innermost frame outside the
    standard library, site-packages and tracejudge itself (the metric's own code: a cancellation raised inside
    `asyncio.sleep` named `asyncio/tasks.py`, in `__sleep0`, with the interpreter's path); its file as the code names it.
    Without such a frame, the innermost one, by its file's name alone (never a path of the machine's installation)."""
    if not frames:
        return ""
    for frame in reversed(frames):
        if not _library(frame.filename):
            return f" (at {frame.filename}:{frame.lineno}, in {frame.name})"
    last = frames[-1]
    return f" (at {os.path.basename(last.filename)}:{last.lineno}, in {last.name})"


def _library(filename: str) -> bool:
    """True for a file of the standard library (a frozen module too), of site-packages, or of tracejudge."""
    if filename.startswith("<frozen "):
        return True
    path = os.path.normcase(os.path.abspath(filename))
    if any(part in ("site-packages", "dist-packages") for part in path.split(os.sep)):
        return True
    return path.startswith(_library_dirs())


@functools.lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    import site
    import sysconfig

    import tracejudge
    import tracejudge.stages

    dirs = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    try:
        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    except AttributeError:  # (an old virtualenv's `site` has neither)
        pass
    dirs.add(os.path.dirname(tracejudge.__file__ or ""))
    dirs.update(tracejudge.stages.__path__)
    return tuple(os.path.join(os.path.normcase(os.path.abspath(d)), "") for d in dirs if d)


def _build(fn: MetricFunction, name: str | None, threshold: float | None) -> type[FunctionMetric]:
    if not callable(fn):
        raise TypeError(f"@metric decorates a function, got {type(fn).__name__}")
    sig = inspect.signature(fn)
    positional = [
        p for p in sig.parameters.values() if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    star = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in sig.parameters.values())
    if len(positional) < 2 and not star:
        raise TypeError(f"{fn.__qualname__}: a metric function takes (case, trace, *, params...); it has {len(positional)} positional parameter(s)")
    if any(p.default is inspect.Parameter.empty for p in positional[2:]):
        raise TypeError(f"{fn.__qualname__}: parameters after (case, trace) must be keyword-only (put them after `*`)")
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable annotations: accept any value rather than refuse the metric
        hints = {}
    fields: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue
        if p.name in _RESERVED:
            raise TypeError(f"{fn.__qualname__}: parameter {p.name!r} clashes with a metric attribute; rename it")
        annotation = hints.get(p.name, Any)
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (annotation, default)
    if name is not None:
        fields["name"] = (str | None, Field(default=name))
    doc = inspect.getdoc(fn) or f"Custom metric {fn.__qualname__}."
    cls: type[FunctionMetric] = create_model(
        fn.__name__,
        __base__=FunctionMetric,
        __module__=fn.__module__,
        __doc__=doc,
        **fields,
    )
    # Same qualname as the function, so `module:qualname` imports the class that replaced it.
    cls.__qualname__ = fn.__qualname__
    cls.fn = staticmethod(fn)
    cls.is_async = inspect.iscoroutinefunction(fn)
    cls.param_names = tuple(k for k in fields if k != "name")
    if threshold is not None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"{fn.__qualname__}: threshold must be in [0, 1], got {threshold}")
        cls.default_threshold = threshold
    return cls


@overload
def metric(fn: MetricFunction, /) -> type[FunctionMetric]: ...


@overload
def metric(*, name: str | None = None, threshold: float | None = None) -> Callable[[MetricFunction], type[FunctionMetric]]: ...


def metric(
    fn: MetricFunction | None = None, /, *, name: str | None = None, threshold: float | None = None
) -> type[FunctionMetric] | Callable[[MetricFunction], type[FunctionMetric]]:
    """Make a metric class from `fn(case, trace, *, **params) -> float | bool | Score | None`.

    Use bare (`@metric`) or with options (`@metric(name=..., threshold=...)`).
    `fn` may be `async def`. Its keyword-only parameters become the metric's
    parameters (annotations are validated, parameters without a default are
    required). The class is named after the function, which is also the
    default key its scores are stored under; `name` changes that default.
    `threshold` (in [0, 1], default 1.0) sets `passed = value >= threshold`.

    Raises `TypeError` at decoration time when `fn` does not take
    `(case, trace)` positionally or a parameter clashes with a metric
    attribute (`name`, `threshold`, `key`, …). See `FunctionMetric` for how
    return values and exceptions become scores.
    """
    if fn is not None:
        return _build(fn, name, threshold)

    def wrap(f: MetricFunction) -> type[FunctionMetric]:
        return _build(f, name, threshold)

    return wrap


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
