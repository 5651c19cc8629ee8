"""A tool run again after it failed, for the one call the model asked for: one call, not two.

LangGraph's `RetryPolicy` on a node runs the whole node again when it raised: a `ToolNode` (or a node
calling `tool.invoke`) whose tool failed once writes the tool's span twice, the failed attempt and the
one that returned, for the one `tool_call` part the model emitted. Both are attempts of that call: the
call is the last attempt (its result and error), and the errors of the earlier ones are kept aside
(`metadata.otel.retried`).

A failed tool span is such an attempt when a later span of the same tool, with the same arguments
(and no other call id), started after it ended, within the same model request's round (after the
request that asked for it, before the next request of the same run), and that round holds more such
spans than the request asked for calls of that tool with those arguments. So two calls the model did
ask for (two parts) stay two calls, a failed call the model asked for again in its next request is a
new call, and tool spans no model part asked for (a smolagents `CodeAgent`'s code calling a tool) are
left as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracejudge.stages.extract.otel.calls import Tool
from tracejudge.stages.extract.otel.conventions.agents_approval import AWAITING
from tracejudge.stages.extract.otel.reused_ids import agrees
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, unjson

__all__ = ["fold_retries"]


def _same_args(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return unjson(a) == unjson(b)


def _same_call(t: Tool, u: Tool) -> bool:
    return t.call_id is None or u.call_id is None or t.call_id == u.call_id


def fold_retries(tools: list[Tool], models: list[Span], parts: Callable[[Span], list[dict[str, Any]]],
                 together: Callable[[Span, Span], bool]) -> tuple[list[Tool], dict[str, list[str]]]:
    """`tools` (by start) without the earlier attempts of a retried call, and each last attempt's earlier errors, by its span id.

    `models`: the model requests by start; `parts(m)`: the `tool_call` parts request `m` emitted; `together(a, b)`:
    whether two spans belong to one run (the same agent run and call scope), so only its own requests bound a round.
    """
    folded: set[int] = set()
    errors: dict[int, list[str]] = {}
    live = list(tools)
    for t in tools:
        if t.error is None or t.error == AWAITING or t.deferral or id(t) in folded:  # (a call held for approval runs on resume)
            continue
        own = [m for m in models if together(m, t.span)]
        asker = next((m for m in reversed(own) if m.start <= t.span.start), None)
        if asker is None:
            continue
        limit = next((m.start for m in own if m.start > t.span.start and m is not asker), None)

        def same(u: Tool) -> bool:
            return (u.name == t.name and not u.deferral and _same_args(u.args, t.args) and _same_call(t, u) and together(u.span, t.span)
                    and asker.start <= u.span.start and (limit is None or u.span.start < limit))

        wanted = [p for p in parts(asker) if p.get("name") == t.name and agrees(t.args, unjson(p.get("arguments"))) is not False
                  and (t.call_id is None or p.get("id") is None or str(p["id"]) == t.call_id)]
        ran = [u for u in live if id(u) not in folded and same(u)]
        if not wanted or len(ran) <= len(wanted):
            continue
        last = next((u for u in ran if u is not t and u.span.start >= t.span.end), None)
        if last is None:
            continue
        folded.add(id(t))
        t.claimed = True  # an attempt, not a call of its own
        errors[id(last)] = [*errors.pop(id(t), []), str(t.error)]
        if last.call_id is None:
            last.call_id = t.call_id
    kept = [t for t in live if id(t) not in folded]
    return kept, {t.span.span_id: errors[id(t)] for t in kept if id(t) in errors}
