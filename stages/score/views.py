"""Per-case views several metrics read (the trace's calls, their steps, the calls a filter keeps), computed once a case.

`score_case` opens a scope for the case it scores (`open_scope`); inside it every metric's
`case_views(case)` returns the same `CaseViews`, so six metrics on one case flatten the trace's
calls once, not six times, and render a call shown by two reasons once. Outside a scope (a metric
called on its own) each call gets fresh views: same values, nothing shared. The views hold the
case itself and are recognised by identity, never by `id()` alone (a freed case's id can come
back), and the scope ends with the case, so a case changed between two scorings is never read stale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracejudge.core.records import Case, ToolCall
from tracejudge.stages.score.call_text import render_call
from tracejudge.stages.score.value_match import shown_expected

__all__ = ["CaseViews", "case_views", "close_scope", "open_scope"]


class CaseViews:
    """What metrics derive from one case, each part computed on first use.

    `calls`: every tool call of the trace in order (`Trace.tool_calls()`); `steps`: for each of
    them, the index of its step (`step_of(i)`: one of them); `selected(key, keep)`: `(index, call)` pairs of the calls a
    filter keeps, computed once per filter `key`; `names`: the tool names of the calls a filter
    keeps, by filter key (`ToolMetric.counted_names` fills it); `rendered(call, expected)`: one call's text for
    reasons (`render_call`), computed once per call. The lists are shared: read them, never modify them.
    """

    __slots__ = ("_calls", "_rendered", "_selected", "_steps", "case", "names")

    def __init__(self, case: Case) -> None:
        self.case = case
        self._calls: list[ToolCall] | None = None
        self._steps: list[int] | None = None
        self._selected: dict[Any, list[tuple[int, ToolCall]]] = {}
        self.names: dict[Any, list[str]] = {}
        self._rendered: dict[int, tuple[Any, str]] = {}

    @property
    def calls(self) -> list[ToolCall]:
        """Every tool call of the trace, in order, failed ones included."""
        if self._calls is None:
            assert self.case.trace is not None
            # Most steps make no call: a step's list is added only when it has calls (a comprehension made
            # an iterator over each empty list, which cost most of the flattening).
            calls: list[ToolCall] = []
            for step in self.case.trace.steps:
                if step.tool_calls:
                    calls += step.tool_calls
            self._calls = calls
        return self._calls

    @property
    def steps(self) -> list[int]:
        """For each call of `calls`, the index of the step it belongs to (only reasons need it: computed apart)."""
        if self._steps is None:
            assert self.case.trace is not None
            self._steps = [s for s, step in enumerate(self.case.trace.steps) if step.tool_calls for _ in step.tool_calls]
        return self._steps

    def step_of(self, index: int) -> int:
        """`steps[index]`: the index of the step call `index` belongs to.

        A reason that names one call's step reads one entry: unless `steps` is built already, the steps are
        walked up to that call (most often one of the first) instead of listing the step of every call.
        Raises `IndexError` for an index outside `calls`, as `steps[index]` does.
        """
        if self._steps is not None or index < 0:
            return self.steps[index]
        assert self.case.trace is not None
        for s, step in enumerate(self.case.trace.steps):
            n = len(step.tool_calls)
            if index < n:
                return s
            index -= n
        raise IndexError("list index out of range")

    @property
    def call_count(self) -> int:
        """`len(calls)`, without building the list when no metric of the case needed it yet."""
        if self._calls is not None:
            return len(self._calls)
        assert self.case.trace is not None
        n = 0
        for step in self.case.trace.steps:  # (a plain loop: cheaper than `sum` over a list built for it)
            n += len(step.tool_calls)
        return n

    def selected(self, key: Any, keep: Callable[[list[ToolCall]], list[tuple[int, ToolCall]]]) -> list[tuple[int, ToolCall]]:
        """`keep(calls)` computed once per hashable filter `key` (the filter's parameters)."""
        got = self._selected.get(key)
        if got is None:
            got = self._selected[key] = keep(self.calls)
        return got

    def rendered(self, call: Any, expected: bool = False) -> str:
        """`render_call(call.name, call.arguments)` of a call, or with `expected` of an expected call (its arguments as
        `shown_expected` shows them: `{"amount":50}`, not the `$python_eq` it compares by), computed once per call
        object (the call is held, so its id stays its own)."""
        got = self._rendered.get(id(call))
        if got is None:
            args = shown_expected(call.arguments) if expected else call.arguments
            got = self._rendered[id(call)] = (call, render_call(call.name, args))
        return got[1]


_scope: list[CaseViews | None] = [None]


def case_views(case: Case) -> CaseViews:
    """The views of `case`: the scope's when `case` is the case being scored, else fresh ones."""
    views = _scope[0]
    if views is not None and views.case is case:
        return views
    return CaseViews(case)


def open_scope(case: Case) -> CaseViews:
    """Share one `CaseViews` among the metrics scoring `case` until `close_scope` (in a `finally`).

    A thread scoring another case meanwhile replaces the scope; each metric checks the case by
    identity and at worst computes its own views: sharing is lost, never mixed up.
    """
    views = _scope[0] = CaseViews(case)
    return views


def close_scope(views: CaseViews) -> None:
    """End the scope `open_scope` returned (no later call shares these views)."""
    if _scope[0] is views:
        _scope[0] = None
