"""Score a native line on its decoded msgspec structs, without building its pydantic records, where that changes nothing.

`fast_decode` validates a native line into typed msgspec structs and then builds about 31 pydantic
instances a case; a metric's every attribute read on them costs 5–7 times a struct's. When a
run's result settles where the case is scored (nothing runs after the executor: no live target, no
judge, nothing keeps the case) and every deterministic metric is one audited below, the metrics
score the structs and the case is rendered from them (`engine.rendered.render`), with no pydantic
`Case` at all.

The structs hold what the `Case` would hold: its fields in its order, the same values (the
`Case`'s are the structs' own objects, `fast_decode.to_case`), the same defaults, and the
records' `ToolCall.failed` and `Trace.tool_calls()`. An audited metric reads only fields,
those properties and those methods, so it scores a struct case as it scores the `Case`.

Everything else takes the general path, with the `Case` built from the struct instead of
decoding the line again: a case whose own metric specs (`metrics_for`) name a metric not
audited (a spec that does not validate scores as `InvalidSpec`, which reads nothing of the case,
on either path), a case without a trace, a case whose result cannot be rendered (text
JSON cannot carry), and a case where any metric raised — so a metric that reads something a struct
does not have costs no score: the general path scores the whole case again, as today. A line
`fast_decode` hands to pydantic (`_Fallback`, an error) never reaches the structs.

Auditing a metric class: read its `evaluate` and every helper it calls; it may read the records'
fields, `ToolCall.failed` and `Trace.tool_calls()`, and nothing else of them (no pydantic
method, no `isinstance` against a record class, no `model_*`). Then add its name to `AUDITED`
and its parameters to `tests/test_struct_score.py`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from tracejudge.core.records import Case
from tracejudge.core.registry import METRIC_CLASSES, Format
from tracejudge.engine.rendered import Rendered, render
from tracejudge.stages.extract import fast_decode
from tracejudge.stages.score import metrics_for, score_case

__all__ = ["AUDITED", "audited", "scorer"]

AUDITED = frozenset({
    "ArgumentCorrectness", "Contains", "Cost", "DeepEvalToolCorrectness", "ExactMatch", "JsonSchema", "Latency",
    "MaxModelRequests", "MaxToolCalls", "Regex", "RetrievalMRR", "RetrievalPrecision", "RetrievalRecall", "TokenUsage",
    "ToolCallAccuracy", "ToolCalls", "ToolCorrectness", "TrajectoryMatch",
})
"""The built-in metric classes that score a struct case as they score its `Case` (audited: see the module docstring)."""

# A case-level spec that does not validate stands in as `InvalidSpec`, which reads nothing of the case.
_OTHERS = {"InvalidSpec": "tracejudge.stages.score.base"}
_RAISED = "metric raised "  # `stages.score._raised`: the reason of a score whose metric raised


def _is_audited(cls: type) -> bool:
    # The built-in class itself, not a subclass or a look-alike of the same name.
    name = cls.__name__
    module = _OTHERS.get(name) or (METRIC_CLASSES[name].partition(":")[0] if name in AUDITED else None)
    return module is not None and getattr(sys.modules.get(module), name, None) is cls


def audited(metrics: Sequence[Any]) -> bool:
    """True when every metric of `metrics` is an instance of a class in `AUDITED` (or a case's invalid spec)."""
    return all(_is_audited(type(m)) for m in metrics)


def scorer(fmt: Format, metrics: Sequence[Any], merge: Callable[[Sequence[Any], list[dict[str, Any]]], Sequence[Any]],
           keys: list[str]) -> Callable[[Any], Rendered | Case | None] | None:
    """The struct path for a job whose results settle where it scores (`CpuJob.render_keys` is `keys`), or None.

    None unless the format is `native`, msgspec decodes, and every metric of `metrics` is audited.
    The function takes a `RawRecord` and returns its `Rendered` result, or the `Case` the general
    path goes on with (built from the structs), or None: the general path extracts the record itself.
    """
    from tracejudge.stages.extract import native

    if fmt.adapt is not native.adapt or fast_decode.decode_struct(b'{"id":"-"}') is None or not audited(metrics):
        return None
    return partial(_score, metrics=metrics, merge=merge, keys=keys)


def _score(raw: Any, metrics: Sequence[Any], merge: Callable[[Sequence[Any], list[dict[str, Any]]], Sequence[Any]],
           keys: list[str]) -> Rendered | Case | None:
    payload = raw.payload
    if raw.error is not None or not isinstance(payload, (bytes, str)):
        return None
    case = fast_decode.decode_struct(payload)
    if case is None:
        return None
    if case.trace is None:
        return fast_decode.to_case(case)  # `invalid_input`, and the id, tags and metadata kept: the general path's
    use: Sequence[Any] | None = metrics
    if case.metrics:
        use, _ = metrics_for(case, metrics, merge)
        if use is None or not audited(use):
            return fast_decode.to_case(case)
    # A metric that raised scores `value: null` with `_RAISED`'s reason: `render` refuses such a case.
    done = render(case, score_case(case, use), keys, _RAISED)
    return done if done is not None else fast_decode.to_case(case)
