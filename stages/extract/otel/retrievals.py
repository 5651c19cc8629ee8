"""Rejoin a retrieval that was recorded as a trace of its own to the model request it retrieved for.

A RAG application with no span around its steps (Phoenix's `OITracer` retriever span, then the
OpenAI request the instrumentor records) writes the retrieval and the request as two traces: the
passages became a case of their own, and the answer's case had none. A trace holding one retrieval
and nothing else that does anything (noise spans aside), which recorded its question, joins the
conversation holding the first model request of the same service that started after the retrieval
ended and whose last user message is that question (or contains it: a prompt template around it).
When two such retrievals would join the same request (the same question asked by concurrent runs),
or two requests start at once, which one it was cannot be told: they stay apart, and `stitch` says so.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import islice

from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.messages import last_user_text
from tracejudge.stages.extract.otel.spans import Group, Span

__all__ = ["adopt_retrievals"]


def _lone_retrieval(group: Group) -> tuple[Span, str] | None:
    """The root span and question of a trace that is one retrieval (with noise spans), else `None`."""
    if group.key_attr is not None:
        return None
    views = group_views(group)
    ids = {s.span_id for s in group.spans}
    roots = [s for s in group.spans if s.parent_id not in ids]
    if len(roots) != 1 or any(views[s.span_id].role not in ("retrieval", None) for s in group.spans):
        return None
    view = views[roots[0].span_id]
    return (roots[0], view.query.strip()) if view.role == "retrieval" and view.query and view.query.strip() else None


def _asks(text: str | None, question: str) -> bool:
    return text is not None and (text.strip() == question or question in text)


def adopt_retrievals(groups: list[Group], unsure: dict[str, list[str]]) -> list[Group]:
    """`groups` with each lone retrieval trace joined into the conversation of the request it retrieved for (order kept).

    The retrieval's spans take that conversation's first trace id and stay a root of their own; its trace id is
    added to the conversation's `traces`. One that cannot be placed for certain is listed in `unsure`.
    """
    lone = {id(g): found for g in groups if (found := _lone_retrieval(g)) is not None}
    if not lone:
        return groups
    requests: list[tuple[Span, Group, str | None]] = []
    for g in groups:
        if id(g) in lone:
            continue
        views = group_views(g)
        models = {s.span_id for s in g.spans if views[s.span_id].role == "model"}
        requests += [(s, g, last_user_text(views[s.span_id].inputs or [])) for s in g.spans if s.span_id in models and s.parent_id not in models]
    requests.sort(key=lambda r: (r[0].start, r[0].span_id))
    starts = [s.start for s, _, _ in requests]
    claims: dict[str, list[Group]] = {}
    target: dict[int, tuple[Span, Group]] = {}
    for g in groups:
        if id(g) not in lone:
            continue
        root, question = lone[id(g)]
        later = (requests[i] for i in range(bisect_left(starts, root.end), len(requests)))
        fits = list(islice(((s, host) for s, host, text in later if s.service == root.service and _asks(text, question)), 2))
        if not fits:
            continue
        if len(fits) > 1 and fits[1][0].start == fits[0][0].start:
            unsure.setdefault("a retrieval asked the question of requests that started at once", []).append(root.trace_id)
            continue
        target[id(g)] = fits[0]
        claims.setdefault(fits[0][0].span_id, []).append(g)
    joined: set[int] = set()
    for g in groups:
        if id(g) not in target:
            continue
        request, host = target[id(g)]
        if len(claims[request.span_id]) > 1:
            unsure.setdefault("retrievals of the same question could each be for the same request", []).append(lone[id(g)][0].trace_id)
            continue
        for span in g.spans:
            span.trace_id = host.traces[0]
        host.traces.extend(g.traces)
        host.spans = sorted([*host.spans, *g.spans], key=lambda s: (s.start, s.span_id))
        host.views = {**group_views(host), **group_views(g)}
        joined.add(id(g))
    return [g for g in groups if id(g) not in joined]
