"""Rejoin tool spans that a worker thread recorded as traces of their own.

An agent that runs one model message's tool calls in a thread pool
(smolagents' `ToolCallingAgent` from 1.20 on, with several calls) loses the
OTel context in the workers unless its instrumentation carries it over
(openinference-instrumentation-smolagents 0.1.16 does not): each tool span
is then the root of a trace of its own, with no model request, and the
run's own trace lacks those results. Such a trace — tool spans only — joins
the trace whose span holds it in time and whose model asked for a call of
that tool with those arguments. When no trace fits, or several do, it stays
a trace of its own.

A plain loop that `mlflow.openai.autolog()` records with no span around it
writes every request, and every call of a `@mlflow.trace` tool, as a trace of
its own; a tool whose body makes a model request of its own (it summarises
with a model) is a trace of a tool span holding that request. It joins the
same way: a trace whose one root is a tool span, with tool spans and model
requests under it (no agent run: that is a conversation of its own). Its
requests are then steps made inside that call (`nesting`).

A smolagents `CodeAgent` under `mlflow.smolagents.autolog()` runs the model's code in a worker thread, so each tool the
code calls is a trace of its own too; MLflow records no model request of the run, and a model writing code asks for no
call by name anyway. Such a tool trace (`mlflow_smolagents.tool_call`) joins the trace whose `CodeAgent` run
(`mlflow_smolagents.code_run`) holds it in time, when exactly one does (two runs at once: it stays apart). So does a
managed agent the code calls: its run (`mlflow_smolagents.managed_run`, the root of a trace of its own, its tools under
it) joins the same way, and is then read as the manager's call that ran it (`mlflow_smolagents.managed_calls`). A
managed agent that is itself a `CodeAgent` loses the context in its own code's thread: its calls hang from its run (the
innermost run holding them), read as calls inside the manager's call that ran it; managed runs join first, so their
calls find them in the host whatever the order of the traces.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.conventions.mlflow_smolagents import code_run, managed_calls, managed_run, tool_call
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.view import MISSING, View, unjson

__all__ = ["adopt_strays"]


def _stray_call(group: Group) -> tuple[Span, View] | None:
    """The root tool span of a trace that holds tool spans and model requests only (one root), else None."""
    views = group_views(group)
    ids = {s.span_id for s in group.spans}
    roots = [s for s in group.spans if s.parent_id not in ids]
    if group.key_attr is not None or len(roots) != 1 or any(views[s.span_id].role not in ("tool", "model", None) for s in group.spans):
        return None
    view = views[roots[0].span_id]
    return (roots[0], view) if view.role == "tool" and view.tool_name else None


def _stray_run(group: Group) -> Span | None:
    """The root of a trace that is a smolagents managed agent's run alone (one root, `managed_run`), else None."""
    ids = {s.span_id for s in group.spans}
    roots = [s for s in group.spans if s.parent_id not in ids]
    return roots[0] if group.key_attr is None and len(roots) == 1 and managed_run(roots[0]) else None


def _asks(group: Group, name: str, args: Any) -> bool:
    """Whether a model request of `group` asked for a call of `name` (with `args`, when the tool span recorded them)."""
    for view in group_views(group).values():
        if view.role != "model":
            continue
        for message in view.outputs or []:
            for part in message.get("parts") or []:
                if part.get("type") == "tool_call" and part.get("name") == name and (args is MISSING or unjson(part.get("arguments")) == args):
                    return True
    return False


def _code_holds(host: Group, span: Span) -> bool:
    """Whether `span` is a smolagents tool call or managed agent run MLflow recorded and a `CodeAgent` run of `host` holds
    it in time (module docstring)."""
    return (tool_call(span) or managed_run(span)) and any(code_run(s) and s.start <= span.start and span.end <= s.end for s in host.spans)


def _holder(host: Group, span: Span) -> Span:
    """The innermost span of `host` (not a model request or a tool, except a managed `CodeAgent`'s run, read as its
    manager's call: its code's calls are traces of their own too) whose time holds `span`, when the spans holding it
    nest (two managed runs at once that both hold it: the innermost span holding both); when none does, the root that
    started last before it (a loop joined from one trace per request: the request whose round the call ran in, not
    the first turn's), else the first root (the first span when a loop of parents leaves none)."""
    views = group_views(host)
    around = [s for s in host.spans if s.start <= span.start and span.end <= s.end
              and (views[s.span_id].role not in ("model", "tool") or code_run(s))]
    inner = [s for s in around if all(o.start <= s.start and s.end <= o.end for o in around)]
    outer = [s for s in around if all(s.start <= o.start and o.end <= s.end for o in around)]
    if inner or outer:
        return min(inner or outer, key=lambda s: s.end - s.start)
    if around:
        return min(around, key=lambda s: s.end - s.start)
    ids = {s.span_id for s in host.spans}
    roots = [s for s in host.spans if s.parent_id not in ids]
    before = [s for s in roots if s.start <= span.start]
    if before:
        return max(before, key=lambda s: s.start)
    # (a host whose every span has a parent in it — a loop of parents in a hostile export — has no root: its first span)
    return roots[0] if roots else min(host.spans, key=lambda s: (s.start, s.span_id))


def adopt_strays(groups: Iterable[Group]) -> Iterator[Group]:
    """`groups` with each trace of a lone tool call joined into the one trace that asked for it (order kept).

    The stray's root span hangs from the innermost span of the host that holds it in time, and
    its spans take the host's trace id; the host's `traces` lists the stray's trace id too.
    """
    groups = list(groups)
    strays: dict[int, tuple[Span, View | None]] = {id(g): call for g in groups if (call := _stray_call(g)) is not None}
    strays.update({id(g): (run, None) for g in groups if id(g) not in strays and (run := _stray_run(g)) is not None})
    if not strays:
        yield from groups
        return
    hosts = [g for g in groups if id(g) not in strays and g.spans]
    joined: set[int] = set()
    # managed runs first, the outer before the inner: a managed `CodeAgent`'s code's calls then find its run in the host
    order = sorted((g for g in groups if id(g) in strays), key=lambda g: (strays[id(g)][1] is not None, strays[id(g)][0].start))
    for group in order:
        root, view = strays[id(group)]
        args = MISSING if view is None or (view.args_wrapped and not isinstance(view.args, dict)) else view.args
        fits = [h for h in hosts if min(s.start for s in h.spans) <= root.start and root.end <= max(s.end for s in h.spans)
                and ((view is not None and _asks(h, view.tool_name, args)) or _code_holds(h, root))]
        if len(fits) != 1:
            continue
        host = fits[0]
        root.parent_id = _holder(host, root).span_id
        for span in group.spans:
            span.trace_id = host.traces[0]
        host.spans.extend(group.spans)
        host.views = {**group_views(host), **group_views(group)}
        if view is None:  # a managed agent's run, now inside the run that called it: the call that ran it
            managed_calls(host.spans, host.views)
        host.traces.extend(group.traces)
        joined.add(id(group))
    yield from (g for g in groups if id(g) not in joined)
