"""The conversation key of each span of one trace, for format `otel`'s `group_by: conversation` (or a list of keys).

A key is read as the formats that group by a session read theirs (`conversation_groups.key_of`: `openai-agents`,
`langfuse`, `mlflow`): text is the key, a whole number (`intValue`) its text, so `42` and `"42"` are one
conversation; none, or empty or blank text, is no key. Any other value (`boolValue`, `doubleValue`, `arrayValue`,
`kvlistValue`) names no conversation a reader could tell: Python's `str()` made `True`, `42.0` or `['a']` case ids
of it, and a `false` one conversation with the text key `"False"`. Such a trace is refused whole, as those formats
refuse theirs: one `invalid_input` naming the attribute, under the trace id, at the line of the span that holds the
key. Its spans join no conversation, and the other traces read on.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tracejudge.stages.extract.conversation_groups import Refused, key_of
from tracejudge.stages.load import RawRecord

if TYPE_CHECKING:
    from tracejudge.stages.extract.otel.spans import Span

__all__ = ["split_trace"]

_HOPS = 10_000  # a parent chain longer than this is a cycle in a hostile export
Parts = list[tuple[tuple[str | None, str], list["Span"]]]


def _holds(value: Any) -> bool:
    # A value that is a key or a refusal: the trace's key is this attribute, whatever later ones say.
    key, problem = key_of(value, "")
    return key is not None or problem is not None


def _source(span: Span, on_resource: bool) -> dict[str, Any]:
    """Where a key is read: the span's own attributes, or those of the resource that exported it."""
    return span.resource if on_resource else span.attrs


def _tops(spans: list[Span], index: dict[str, Span], holds: Callable[[Span], bool]) -> dict[int, Span | None]:
    """The topmost of the `_HOPS` spans at and above each span (parent by parent through `index`) for which `holds`
    is true, or None, by `id()` of the span; a span whose parents reach a cycle is left out.

    One pass top down, keeping the depths of the holders on the way: walking up from every span of a deep chain is
    quadratic in its depth."""
    below: dict[int, list[Span]] = {}
    roots = []
    for s in spans:
        parent = index.get(s.parent_id or "")
        if parent is None:
            roots.append(s)
        else:
            below.setdefault(id(parent), []).append(s)
    out: dict[int, Span | None] = {}
    for root in roots:
        depths: list[int] = []  # of the holders on the path down to the span at hand, and those holders
        holders: list[Span] = []
        todo = [(root, 0)]
        while todo:  # (no recursion: a chain may be thousands deep)
            node, depth = todo.pop()
            cut = bisect_left(depths, depth)
            del depths[cut:], holders[cut:]
            if holds(node):
                depths.append(depth)
                holders.append(node)
            i = bisect_left(depths, depth - _HOPS + 1)
            out[id(node)] = holders[i] if i < len(holders) else None
            todo.extend((s, depth + 1) for s in below.get(id(node), []))
    return out


def split_trace(trace_id: str, spans: list[Span], keys: list[str]) -> Parts | RawRecord:
    """The spans of one trace (sorted by start) split by the topmost value of the first key present.

    A part is `((attribute, key), spans)`, or `((None, trace_id), spans)` for a trace with none of `keys`. A trace
    where some span's value (its topmost ancestor-or-self holding the key) is no key (module docstring) is one
    record of its refusal instead, at that span's file and line.
    """
    found = next(((k, on_resource) for k in keys for on_resource in (False, True)
                  if any(_holds(_source(s, on_resource).get(k)) for s in spans)), None)
    if found is None:
        return [((None, trace_id), spans)]
    attr, on_resource = found
    index = {s.span_id: s for s in spans}
    tops = _tops(spans, index, lambda s: _holds(_source(s, on_resource).get(attr)))

    def top(span: Span) -> Span | None:
        if id(span) in tops:
            return tops[id(span)]
        found: Span | None = None  # (a span under a parent cycle: walked, as far as the hops allow)
        node: Span | None = span
        hops = 0
        while node is not None and hops < _HOPS:
            if _holds(_source(node, on_resource).get(attr)):
                found = node
            node = index.get(node.parent_id or "")
            hops += 1
        return found

    values: list[str | None] = []
    for span in spans:
        holder = top(span)
        key, problem = key_of(_source(holder, on_resource).get(attr), attr) if holder is not None else (None, None)
        if problem is not None and holder is not None:
            where = f"the resource of span {holder.span_id}" if on_resource else f"span {holder.span_id}"
            return RawRecord(holder.file, holder.line, Refused(f"{where}: {problem}", attr, trace_id))
        values.append(key)
    default = next(v for v in values if v is not None)
    parts: dict[str, list[Span]] = {}
    for span, value in zip(spans, values):
        parts.setdefault(value if value is not None else default, []).append(span)
    return [((attr, value), part) for value, part in parts.items()]
