"""A smolagents tool's arguments under OpenInference, read as the call gave them.

openinference-instrumentation-smolagents (0.1.43) records a tool span's `input.value` as the bound arguments of
smolagents' `Tool.__call__(self, *args, sanitize_inputs_outputs=False, **kwargs)`, `{"args": [...],
"sanitize_inputs_outputs": …, "kwargs": {...}}`, and the tool's `inputs` (its parameters by name, in the order the tool
declares them) as `tool.parameters`. A `ToolCallingAgent` passes the model's arguments as keywords; a `CodeAgent`'s
code calls the tool as Python, so `get_time()` binds neither and `get_weather("Paris")` binds a positional value.

`call_args` reads them as `Tool.__call__` hands them to `forward`: a lone positional mapping whose keys are all
parameters is the keywords (smolagents' own rule); a positional value is named after its parameter when the order
of `tool.parameters` is the order of `forward`'s — a `@tool` function (its span is named `SimpleTool`: its parameters
are read from its signature in order) or a tool of one parameter (`final_answer`); a hand-written `Tool` may declare
its `inputs` in another order than its `forward`, so there positional values stay a list under `args`, keyword ones
beside it by name. A call with no argument reads `{}`.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, unjson

__all__ = ["call_args"]

_BOUND = {"args", "kwargs", "sanitize_inputs_outputs"}
_SIGNATURE_ORDERED = "SimpleTool"  # smolagents' class for a `@tool` function (OpenInference names the span after it)


def call_args(span: Span) -> Any:
    """The arguments of the smolagents tool call `span` recorded (module docstring), or `MISSING` when its
    `input.value` is not `Tool.__call__`'s bound arguments (the caller then reads it as any tool's).

    Returns a dict: by parameter name, or `{"args": [<positional>], **keywords}` when the names of positional
    values are not known. A keyword argument named `args` beside positional ones keeps the record whole.
    """
    given = unjson(span.attrs.get("input.value"))
    if not isinstance(given, dict) or set(given) != _BOUND:
        return MISSING
    args, kwargs = given["args"] if given["args"] is not None else [], given["kwargs"] if given["kwargs"] is not None else {}
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return MISSING
    params = unjson(span.attrs.get("tool.parameters"))
    names = list(params) if isinstance(params, dict) else None
    if len(args) == 1 and not kwargs and isinstance(args[0], dict) and (names is None or all(k in names for k in args[0])):
        return args[0]  # (smolagents calls `forward(**args[0])`; unknown parameters: the mapping as the call gave it)
    if not args:
        return dict(kwargs)
    if names is not None and (span.name == _SIGNATURE_ORDERED or len(names) == 1) and len(args) <= len(names):
        named = dict(zip(names, args))
        if not set(named) & set(kwargs):
            return {**named, **kwargs}
    if "args" in kwargs:
        return given
    return {"args": args, **kwargs}
