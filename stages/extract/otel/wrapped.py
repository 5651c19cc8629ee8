"""A model span over another: one request seen by a wrapper and by its provider."""

from __future__ import annotations

import copy
from typing import Any

from tracejudge.stages.extract.otel.conventions.adk import said
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["HOPS", "ancestor", "fold_wrapped_models"]

HOPS = 10_000  # a parent chain longer than this is a cycle in a hostile export


def ancestor(span: Span, index: dict[str, Span], pred: Any) -> Span | None:
    """The nearest ancestor of `span` for which `pred` holds (`None`: none, or a chain past `HOPS`)."""
    seen = 0
    # (No parent id is no parent, not the span filed under "": a span that lost its spanId would be everyone's parent.)
    parent = index.get(span.parent_id) if span.parent_id else None
    while parent is not None and parent is not span and seen < HOPS:
        if pred(parent):
            return parent
        parent = index.get(parent.parent_id) if parent.parent_id else None
        seen += 1
    return None


def fold_wrapped_models(spans: list[Span], models: list[Span], index: dict[str, Span], views: dict[str, View]) -> dict[str, View]:
    """`views` with each outer model span seen through the one request nested in it, innermost first.

    A model span over exactly one chain of model spans is one request seen by
    a wrapper and its provider (ADK's `call_llm` over `generate_content`, a
    framework span over OpenLLMetry's `openai.chat`): messages, usage and the
    error come from the innermost span that recorded them, as OTel GenAI
    readers take them (agentevals' logical calls). An outer span over several
    requests stays as it is. `views` itself is not changed.
    """
    tops = {s.span_id for s in models}
    inner: dict[str, list[Span]] = {}
    for span in spans:
        if span.span_id in tops or views[span.span_id].role != "model":
            continue
        top = ancestor(span, index, lambda p: p.span_id in tops)
        if top is not None:
            inner.setdefault(top.span_id, []).append(span)
    out = views
    for top_id, nested in inner.items():
        parents = {s.parent_id for s in nested}
        leaves = [s for s in nested if s.span_id not in parents]
        if len(leaves) != 1:
            continue
        chain: list[View] = []
        node: Span | None = leaves[0]
        while node is not None and node.span_id != top_id and len(chain) < HOPS:
            chain.append(views[node.span_id])
            node = index.get(node.parent_id or "")
        folded = copy.copy(views[top_id])
        for f in ("inputs", "outputs"):
            setattr(folded, f, next((getattr(v, f) for v in chain if said(getattr(v, f))), getattr(folded, f)))
        for f in ("usage_in", "usage_out", "error"):
            setattr(folded, f, next((getattr(v, f) for v in chain if getattr(v, f) is not None), getattr(folded, f)))
        out = dict(out) if out is views else out
        out[top_id] = folded
    return out
