"""Drop a model request recorded twice in two traces: a framework's span, and its client's parentless one.

OpenInference's LangChain instrumentor does not make its LLM span current, so
with OpenInference's OpenAI instrumentor on as well (what Phoenix's
`register(auto_instrument=True)` does) every request the LangChain model sends
is recorded again as a `ChatCompletion` span with no parent: a trace of its
own, holding that one request. Read as it is, those bare traces are stitched
into a second conversation (same question, same calls, same tokens): each run
counted twice, its usage too. Nested, the same pair is one request
(`wrapped.fold_wrapped_models`); apart, it is found here by what both record.

A bare request trace — every span of the trace a model span (or noise), one
request not nested in another — is the request of a model span of another
trace when it ran within that span's time (started no earlier, ended no later)
and both recorded the same messages: inputs and outputs, each compared where
both sides recorded it (call ids and texts, as `stitch` compares replays), and
at least one of them recorded by both. The bare trace is then dropped, and
what the framework's span lacks (messages, usage, error) is taken from it: one
request, counted once. Each wrapper span takes one bare request; the closest
(latest start) wins among several that fit.

When neither side recorded messages to compare (content capture off), time
alone cannot tell a duplicate from another thread's request: the bare trace is
folded only when exactly one model span of one other trace ran around it, and
a warning names the file and the trace; with several, it is kept and named.
A bare request whose messages differ from every span around it is another
request and stays.
"""

from __future__ import annotations

import copy
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.conventions.adk import said
from tracejudge.stages.extract.otel.replays import message_key
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["drop_duplicate_requests"]

log = get_logger("tracejudge.extract.otel")

_FILLED = ("usage_in", "usage_out", "error")


def _message_keys(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [message_key(m) for m in messages]


def _bare_requests(group: Group, views: dict[str, View]) -> dict[str, Span]:
    """The traces of `group` that hold one model request and nothing else, by trace id: their request span.

    Spans no convention gave a role (noise, stand-ins for lost parents) do not count; a model span nested in the
    request (two instrumentations of one client) is part of it.
    """
    by_trace: dict[str, list[Span]] = {}
    for span in group.spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    out = {}
    for trace, spans in by_trace.items():
        if any(views[s.span_id].role not in (None, "model") for s in spans):
            continue
        index = {s.span_id: s for s in spans}
        tops = [s for s in spans if views[s.span_id].role == "model" and not _under_model(s, index, views)]
        if len(tops) == 1 and tops[0].parent_id not in index:
            out[trace] = tops[0]
    return out


def _under_model(span: Span, index: dict[str, Span], views: dict[str, View]) -> bool:
    """Whether a model span is an ancestor of `span` within its trace (`index`: the trace's spans by id)."""
    parent, hops = index.get(span.parent_id or ""), 0
    while parent is not None and hops < len(index):  # (a loop of parents ends)
        if views[parent.span_id].role == "model":
            return True
        parent, hops = index.get(parent.parent_id or ""), hops + 1
    return False


def _inputs_key(view: View) -> int | None:
    return hash(tuple(_message_keys(view.inputs or []))) if said(view.inputs) else None


def _by_inputs(wrappers: list[tuple[Group, Span]]) -> dict[int | None, list[tuple[Group, Span]]]:
    """`wrappers` by the hash of their recorded inputs (`None`: none recorded)."""
    out: dict[int | None, list[tuple[Group, Span]]] = {}
    for g, w in wrappers:
        out.setdefault(_inputs_key(group_views(g)[w.span_id]), []).append((g, w))
    return out


def _compare(wrapper: View, bare: View) -> bool | None:
    """True: the two recorded the same messages; False: they differ; None: no messages recorded on both sides."""
    shared = False
    for field in ("inputs", "outputs"):
        a, b = getattr(wrapper, field), getattr(bare, field)
        if said(a) and said(b):
            if _message_keys(a) != _message_keys(b):
                return False
            shared = True
    return True if shared else None


def _fold(views: dict[str, View], wrapper: Span, bare: View) -> None:
    """What the wrapper's span did not record, read from the bare request's (the same request)."""
    folded = copy.copy(views[wrapper.span_id])
    for field in ("inputs", "outputs"):
        if not said(getattr(folded, field)) and said(getattr(bare, field)):
            setattr(folded, field, getattr(bare, field))
    for field in _FILLED:
        if getattr(folded, field) is None:
            setattr(folded, field, getattr(bare, field))
    views[wrapper.span_id] = folded


def _remove(group: Group, trace: str) -> None:
    gone = {s.span_id for s in group.spans if s.trace_id == trace}
    group.spans = [s for s in group.spans if s.span_id not in gone]
    group.traces = [t for t in group.traces if t != trace]
    for sid in gone:
        (group.views or {}).pop(sid, None)


def drop_duplicate_requests(groups: list[Group]) -> list[Group]:
    """`groups` without the bare request traces that repeat a model span of another trace (see the module docstring).

    Groups left with no span are dropped; the others keep their order. Wrapper views are replaced (copies) in
    their group's `views`, never changed in place.
    """
    bare: list[tuple[Group, str, Span]] = []
    wrappers: list[tuple[Group, Span]] = []
    for group in groups:
        views = group_views(group)
        lone = _bare_requests(group, views)
        bare += [(group, trace, span) for trace, span in lone.items()]
        wrappers += [(group, s) for s in group.spans if views[s.span_id].role == "model" and s.trace_id not in lone]
    if not bare or not wrappers:
        return groups
    claimed: set[str] = set()
    unsure: dict[str, list[str]] = {}
    buckets = _by_inputs(wrappers)
    for group, trace, span in sorted(bare, key=lambda b: (b[2].start, b[2].span_id)):
        view = group_views(group)[span.span_id]
        # only a span with the same inputs, or none recorded, can be the same request: no scan of every span
        near = [*buckets.get(_inputs_key(view), []), *buckets.get(None, [])] if said(view.inputs) else wrappers
        found = _match(span, view, near, claimed, unsure)
        if found is None:
            continue
        owner, wrapper = found
        claimed.add(wrapper.span_id)
        _fold(group_views(owner), wrapper, group_views(group)[span.span_id])
        _remove(group, trace)
    for why, traces in unsure.items():
        log.warning(f"otel: {len(traces)} parentless model request trace(s) {why}: {', '.join(traces[:5])}{', …' if len(traces) > 5 else ''}")
    return [g for g in groups if g.spans]


def _match(span: Span, view: View, wrappers: list[tuple[Group, Span]], claimed: set[str],
           unsure: dict[str, list[str]]) -> tuple[Group, Span] | None:
    """The model span of another trace that `span` (a bare request) repeats, else `None` (see the module docstring)."""
    around = [(g, w) for g, w in wrappers if w.span_id not in claimed and w.trace_id != span.trace_id
              and w.start <= span.start and span.end <= w.end]
    verdicts = [(g, w, _compare(group_views(g)[w.span_id], view)) for g, w in around]
    same = [(g, w) for g, w, v in verdicts if v]
    if same:
        return max(same, key=lambda gw: (gw[1].start, gw[1].span_id))
    blind = [(g, w) for g, w, v in verdicts if v is None]
    if not blind:
        return None
    where = f"{span.file}:{span.line} trace {span.trace_id}"
    if len({w.trace_id for _, w in blind}) > 1:
        unsure.setdefault("kept apart: they ran inside model requests of several other traces and recorded no messages to tell which "
                          "they repeat", []).append(where)
        return None
    unsure.setdefault("read as the model request of another trace they ran inside, by time alone (no messages recorded on both "
                      "to compare): OpenInference's LangChain and OpenAI instrumentors both on record each request twice", []).append(where)
    return max(blind, key=lambda gw: (gw[1].start, gw[1].span_id))
