"""Assertions over what an agent did, for pytest (or any test runner).

Each raises `AssertionError` with the reason of the metric that checked it —
missing and unexpected calls, the closest call and its first differing
argument, the step where a trajectory diverges — so a failing test says
what the agent did wrong, not just that something differed.

What `result` may be:

| assertion | `result` |
| --- | --- |
| `assert_called_tool`, `assert_trajectory` | a `Case` with a trace, or a `Trace` (they look at the calls) |
| `assert_score` | a `CaseResult` (a score the pipeline computed), a `RunReport` (a metric's mean), or a `Case` with a metric instance (scored now) |
"""

from __future__ import annotations

import glob
from collections import Counter
from typing import Any, Literal

from tracejudge.core.records import Case, CaseResult, Score, Trace
from tracejudge.entrypoints.run_report import RunReport
from tracejudge.stages.score.base import Metric
from tracejudge.stages.score.tool_calls import ToolCalls
from tracejudge.stages.score.trajectory import TrajectoryMatch
from tracejudge.stages.score.value_match import render_call, shown_expected

__all__ = ["assert_called_tool", "assert_score", "assert_trajectory"]

_MAX_LISTED = 20


def _trace_of(result: Case | Trace, who: str) -> Trace:
    __tracebackhide__ = True
    if isinstance(result, Trace):
        return result
    if isinstance(result, Case):
        if result.trace is None:
            raise AssertionError(f"{who}: case {result.id!r} has no trace to check")
        return result.trace
    if isinstance(result, CaseResult):
        raise TypeError(f"{who} looks at tool calls: pass the Case (or its Trace), not a CaseResult, which holds only scores")
    raise TypeError(f"{who}: expected a Case or a Trace, got {type(result).__name__}")


def _calls_made(trace: Trace) -> str:
    lines = []
    n = 0
    for s, step in enumerate(trace.steps):
        for call in step.tool_calls:
            if n < _MAX_LISTED:
                failed = f"  [failed: {call.error[:60]}]" if call.error is not None else ""
                lines.append(f"    #{n} (step {s}) {render_call(call.name, call.arguments)}{failed}")
            n += 1
    if not n:
        return "  calls made: none"
    more = f"\n    … and {n - _MAX_LISTED} more" if n > _MAX_LISTED else ""
    return f"  calls made ({n}):\n" + "\n".join(lines) + more


def assert_called_tool(
    result: Case | Trace,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    match: Literal["subset", "exact"] = "subset",
    include_failed: bool = True,
) -> None:
    """Assert the agent called tool `name`, with `arguments` when given.

    `arguments` compare as in `ToolCalls`: `match="subset"` (default) needs
    every given key to match and allows extra ones, nested mappings key by
    key; `"exact"` needs equal arguments. Values may be matchers
    (`{"$regex": "^Par"}`, `{"$any_of": [...]}`, `{"$approx": 3.0, "tol": 0.1}`).
    `None` checks the name alone. A failed call (one with an `error`)
    counts unless `include_failed=False`.

    Raises `AssertionError` listing the calls made and the `ToolCalls`
    reason (the closest call and its first differing argument); `TypeError`
    for a `result` that has no calls to look at.
    """
    __tracebackhide__ = True
    trace = _trace_of(result, "assert_called_tool")
    probe = Case(id="assert_called_tool", expected_tool_calls=[{"name": name, "arguments": arguments}], trace=trace)  # type: ignore[list-item]
    # Only calls of this tool take part, so the reason speaks of them (closest call, first differing argument).
    only = (glob.escape(name),)
    score = ToolCalls(arguments=match, score="recall", include_failed=include_failed, include_tools=only).evaluate(probe)
    if score.value == 1.0:
        return
    wanted = render_call(name, shown_expected(arguments)) if arguments is not None else f"{name}(…)"
    raise AssertionError(
        f"expected a call {wanted} (arguments={match}{'' if include_failed else ', failed calls excluded'}), but none matched\n"
        f"{_calls_made(trace)}\n"
        f"  ToolCalls: {score.reason}"
    )


def assert_trajectory(
    result: Case | Trace,
    expected: list[str],
    *,
    order: Literal["exact", "in_order", "any_order"] = "in_order",
    allow_extra: bool = True,
    include_failed: bool = True,
) -> None:
    """Assert the tool names the agent called follow `expected`.

    `order="in_order"` (default): the expected names appear in this order,
    other calls may come between them; `"any_order"`: every expected name
    was called (as often as listed), in any order; `"exact"`: the names are
    exactly `expected`. `allow_extra=False` also refuses calls beyond the
    expected ones (`TrajectoryMatch` with `score: f1` instead of `recall`).
    Failed calls count unless `include_failed=False`.

    Raises `AssertionError` with the `TrajectoryMatch` reason (LCS or
    overlap, the first diverging call and its step) and the names missing.
    """
    __tracebackhide__ = True
    trace = _trace_of(result, "assert_trajectory")
    metric = TrajectoryMatch(order=order, expected_trajectory=list(expected), score="recall" if allow_extra else "f1", include_failed=include_failed)
    score = metric.evaluate(Case(id="assert_trajectory", trace=trace))
    if score.passed:
        return
    actual = [c.name for c in trace.tool_calls() if include_failed or c.error is None]
    missing = Counter(expected) - Counter(actual)
    extra = Counter(actual) - Counter(expected)
    notes = []
    if missing:
        notes.append("never called: " + ", ".join(f"{n!r}" + (f" (x{k})" if k > 1 else "") for n, k in missing.items()))
    if extra and not allow_extra:
        notes.append("not expected: " + ", ".join(f"{n!r}" + (f" (x{k})" if k > 1 else "") for n, k in extra.items()))
    raise AssertionError(
        f"trajectory does not match (order={order}, {'extra calls allowed' if allow_extra else 'no extra calls'})\n"
        f"  expected: {list(expected)}\n"
        f"  actual:   {actual}\n"
        + "".join(f"  {n}\n" for n in notes)
        + f"  TrajectoryMatch: {score.reason}"
    )


def _check_value(what: str, value: float | None, passed: bool | None, reason: str, at_least: float | None, at_most: float | None) -> None:
    __tracebackhide__ = True
    if value is None:
        raise AssertionError(f"{what} was not computed: {reason}")
    if at_least is None and at_most is None:
        if passed is False:
            raise AssertionError(f"{what} = {value:.3f} did not pass its threshold: {reason}")
        return
    if at_least is not None and value < at_least:
        raise AssertionError(f"{what} = {value:.3f}, below at_least={at_least}: {reason}")
    if at_most is not None and value > at_most:
        raise AssertionError(f"{what} = {value:.3f}, above at_most={at_most}: {reason}")


def assert_score(
    result: CaseResult | RunReport | Case,
    metric: str | Metric,
    *,
    at_least: float | None = None,
    at_most: float | None = None,
) -> None:
    """Assert a metric's score: `at_least` ≤ value ≤ `at_most`, or that it passed.

    `metric` is a metric key (`"ToolCalls"`, a config `name`) or a metric
    instance (its key is used; on a `Case` it is evaluated now). With
    neither bound, the score must have passed its own threshold.

    - `CaseResult`: that result's score; a result whose status is not `ok`
      fails with its error.
    - `RunReport`: the metric's mean over scored results; with no bound,
      every scored result must have passed. The message lists the failing
      cases' reasons.
    - `Case`: `metric` must be an instance; it is evaluated on the case.

    A score that was not computed (`value: null`) fails with its reason.
    """
    __tracebackhide__ = True
    key = metric if isinstance(metric, str) else metric.key
    if isinstance(result, RunReport):
        summary = result.metrics.get(key)
        if summary is None:
            raise AssertionError(f"the run has no metric {key!r}; it has {sorted(result.metrics)}")
        failing = [f for f in result.failed() if f.metric == key]
        listed = "".join(f"\n    {f.case_id} (trial {f.trial}): {f.reason}" for f in failing[:5])
        more = f"\n    … and {len(failing) - 5} more" if len(failing) > 5 else ""
        if summary.mean is None:
            raise AssertionError(f"{key} scored no result (not computed {summary.not_computed}, excluded {summary.excluded})")
        passed = summary.passed == summary.scored if at_least is None and at_most is None else None
        _check_value(
            f"mean {key} over {summary.scored} results",
            summary.mean,
            passed,
            f"{len(failing)} failing" + listed + more,
            at_least,
            at_most,
        )
        return
    if isinstance(result, Case):
        if isinstance(metric, str):
            raise TypeError("assert_score on a Case needs a metric instance to evaluate, not a name")
        score: Score | None = metric.evaluate(result)
        where = f"case {result.id!r}"
    elif isinstance(result, CaseResult):
        where = f"case {result.case_id!r}, trial {result.trial}"
        score = result.scores.get(key)
        if score is None:
            if result.error is not None:
                raise AssertionError(f"{where} has no {key} score: status {result.status.value}: {result.error.message}")
            raise AssertionError(f"{where} has no score {key!r}; it has {sorted(result.scores)}")
    else:
        raise TypeError(f"assert_score: expected a CaseResult, a RunReport or a Case, got {type(result).__name__}")
    assert score is not None
    _check_value(f"{key} ({where})", score.value, score.passed, score.reason, at_least, at_most)
