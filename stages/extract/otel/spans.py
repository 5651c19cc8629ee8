"""Read OTLP/JSON exports into compact spans and log events, grouped into conversations.

This is the reading half of format `otel` (see `tracejudge.stages.extract.otel`): it
decodes OTLP/JSON (`resourceSpans` / `resourceLogs`, string-encoded
integers, typed attribute values) into plain `Span` / `LogEvent` records
and groups the spans of one conversation. Nothing here interprets the
GenAI semantic conventions.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.dropped import dropped_count
from tracejudge.stages.extract.otel.evaluation_records import place_evaluations
from tracejudge.stages.extract.otel.exports import iter_exports  # (where it was: `otel/__init__` imports it from here)
from tracejudge.stages.extract.otel.fields import SPAN_ID, TRACE_ID, id_not_text, nanos, otlp_id, span_kind
from tracejudge.stages.extract.otel.keys import split_trace
from tracejudge.stages.extract.otel.links import (adopt_orphans, break_cycles, lone_request, span_only_records, stand_in_parents,
                                                  unplaced_spans, untraced_records)
from tracejudge.stages.extract.otel.log_records import LogEvent, LogKey, log_event
from tracejudge.stages.extract.otel.lost_roots import warn_lost_roots
from tracejudge.stages.extract.otel.once import once
from tracejudge.stages.extract.otel.values import any_value, attributes  # (where they were: callers import them from here)
from tracejudge.stages.extract.otel.view import whole_text
from tracejudge.stages.load import RawRecord
from tracejudge.stages.load.framing import quieted

__all__ = ["Collector", "Group", "LogEvent", "Span", "adopt_orphans", "any_value", "attributes", "hung_trace", "iter_exports", "once_spans"]

log = get_logger("tracejudge.extract.otel")


@dataclass(slots=True)
class Span:
    """One span, decoded. Times are Unix nanoseconds; `status_error` is True for status code ERROR."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: int
    start: int
    end: int
    attrs: dict[str, Any]
    status_error: bool
    status_message: str | None
    events: list[tuple[str, dict[str, Any]]]
    service: str | None
    file: str
    line: int
    problem: str | None = None
    logs: list[LogEvent] = field(default_factory=list)
    copies_differ: bool = False  # delivered more than once with different contents: this copy was kept (see `once`)
    scope: str | None = None  # the instrumentation scope's name (`gcp.vertex.agent` for ADK)
    stand_in: bool = False  # not delivered: made for a lost parent several spans name (`links.stand_in_parents`)
    dropped_attributes: int = 0  # attributes its SDK dropped past the limit per span (`droppedAttributesCount`: `dropped`)
    resource: dict[str, Any] = field(default_factory=dict)  # its resource's attributes (one dict shared by the resource's spans)
    evaluations: list[LogEvent] = field(default_factory=list)  # evaluation results logged about it (`evaluation_records`)


@dataclass(slots=True)
class Group:
    """The spans of one conversation (or one trace): the raw record of format `otel`.

    `key` is the grouping value (conversation id, or trace id); `key_attr`
    the attribute it came from (`None` for a trace id); `traces` are the
    trace ids in order of first start. `views` caches what the conventions
    say about each span (by span id, filled once by
    `conventions.group_views`), so that grouping, stitching and assembling
    read every span only once.
    """

    key: str
    key_attr: str | None
    traces: list[str]
    spans: list[Span]
    views: dict[str, Any] | None = None
    unread: tuple[str, ...] = ()  # the input's exports that could not be read (`file:line`): what a trace may have lost

    @property
    def case_id(self) -> str:
        """The id of this group's case: its key, a conversation key shown so that no two look alike (`thread-1` with a
        space at its end is another conversation, its id `"thread-1 "`: `conversation_groups.case_id_of`)."""
        if self.key_attr in (None, "run"):
            return self.key
        from tracejudge.stages.extract.conversation_groups import case_id_of

        return case_id_of(self.key)


def _status(raw: Any) -> tuple[bool, str | None]:
    if not isinstance(raw, dict):
        return False, None
    code = raw.get("code")
    error = code in (2, "2", "STATUS_CODE_ERROR", "ERROR")
    message = whole_text(raw.get("message")) or None
    return error, message


def _not_text_id(raw: dict[str, Any]) -> str | None:
    """What is wrong with the first of a span's id fields holding something other than text (`true`, a number, a list,
    an object: `fields.id_not_text`), else None."""
    return next((said for k in ("spanId", "traceId", "parentSpanId") if (said := id_not_text(k, raw.get(k))) is not None), None)


def _span(raw: dict[str, Any], service: str | None, file: str, line: int, scope: str | None = None,
          resource: dict[str, Any] | None = None) -> Span:
    span_id = otlp_id(raw.get("spanId"), SPAN_ID)
    problem = None
    try:
        start, end = nanos(raw.get("startTimeUnixNano")), nanos(raw.get("endTimeUnixNano"))
    except (TypeError, ValueError):
        start = end = 0
        problem = f"span {span_id}: startTimeUnixNano/endTimeUnixNano must be integers (got {raw.get('startTimeUnixNano')!r}, {raw.get('endTimeUnixNano')!r})"
    mended: list[str] = []
    bad: list[str] = []
    # One value that does not decode costs that attribute, with a warning, not the span's conversation (as a lone surrogate
    # costs one character): what the attribute said is unknown, the rest of the span is read as it is.
    attrs = attributes(raw.get("attributes"), mended, bad)
    bad = [f"attribute {what}" for what in bad]
    events = []
    for e in raw.get("events") or []:
        if isinstance(e, dict):
            name, lost = str(e.get("name", "")), []
            events.append((name, attributes(e.get("attributes"), None, lost)))
            bad.extend(f"event {name!r} attribute {what}" for what in lost)
    # (before the missing id: `spanId: true` reads as no id, and was said to be missing)
    if (wrong := _not_text_id(raw)) is not None:
        # (`str()` of a number or a list was its id: `123` and `"123"` one span, a list's repr a parent no span has)
        problem = problem or wrong
    elif not span_id:
        problem = problem or "a span has no spanId"
    # (A look at the file besides the run's own read, the first records or the progress bar's count, says nothing: the
    # run's read says it, once.)
    if bad and not quieted():
        log.warning(f"otel: {file}:{line}: span {span_id}: {'; '.join(bad)}: {'this value does' if len(bad) == 1 else 'these values do'} not decode, so the span is read without {'it' if len(bad) == 1 else 'them'}")
    if mended and not quieted():
        log.warning(f"otel: {file}:{line}: span {span_id}: attribute {', '.join(mended)} held a lone UTF-16 surrogate "
                    "(half of a character, as an exporter cutting text mid-emoji writes): read with U+FFFD in its place")
    error, message = _status(raw.get("status"))
    return Span(
        trace_id=otlp_id(raw.get("traceId"), TRACE_ID),
        span_id=span_id,
        parent_id=otlp_id(raw.get("parentSpanId"), SPAN_ID) or None,
        name=str(raw.get("name") or ""),
        kind=span_kind(raw.get("kind")),
        start=start,
        end=end,
        attrs=attrs,
        status_error=error,
        status_message=message,
        events=events,
        service=service,
        file=file,
        line=line,
        problem=problem,
        scope=scope,
        dropped_attributes=dropped_count(raw),
        resource=resource if resource is not None else {},
    )


def _items(node: dict[str, Any], key: str, where: str) -> list[Any]:
    value = node.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{where} must be a list, got {type(value).__name__}")
    return value


def _shape(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind):
        raise ValueError(f"{where} must be an object, got {type(value).__name__}")
    return value


class Collector:
    """Accumulates spans and logs from any number of exports, then groups them.

    Memory holds every decoded span until `groups()` runs: a conversation can
    span several traces, files and export batches, so no group is complete
    before the whole input has been read.
    """

    def __init__(self) -> None:
        self.spans: dict[str, list[Span]] = defaultdict(list)
        self.logs: dict[LogKey, list[LogEvent]] = defaultdict(list)  # by the (trace id, span id) each names (`log_records`)
        self.orphans: list[tuple[str, int, str]] = []
        self.refused: list[RawRecord] = []  # a trace whose conversation key is no key, refused whole (`keys.split_trace`)

    def add(self, doc: dict[str, Any], file: str, line: int) -> None:
        """Take every span and span-linked log record of one export document.

        Raises `ValueError` naming the JSON path of the first part of the
        document that does not have the OTLP shape (`resourceSpans[0].scopeSpans`
        that is not a list, a span that is not an object, …); nothing of
        that document is kept.
        """
        spans: list[Span] = []
        orphans: list[tuple[str, int, str]] = []
        for i, rs in enumerate(_items(doc, "resourceSpans", "resourceSpans")):
            where = f"resourceSpans[{i}]"
            _shape(rs, dict, where)
            # kept whole: a conversation key may be set on the resource rather than the spans (`keys`)
            held = _shape((rs.get("resource") or {}), dict, f"{where}.resource").get("attributes")
            try:
                resource = attributes(held)
            except (TypeError, ValueError) as exc:  # (which attribute: the export is refused whole, and said so)
                raise ValueError(f"{where}.resource.attributes: a value does not decode ({exc})") from None
            service = resource.get("service.name")
            for j, ss in enumerate(_items(rs, "scopeSpans", f"{where}.scopeSpans")):
                _shape(ss, dict, f"{where}.scopeSpans[{j}]")
                scope = ss.get("scope") or ss.get("instrumentationLibrary")
                scope_name = scope.get("name") if isinstance(scope, dict) and isinstance(scope.get("name"), str) else None
                for k, raw in enumerate(_items(ss, "spans", f"{where}.scopeSpans[{j}].spans")):
                    _shape(raw, dict, f"{where}.scopeSpans[{j}].spans[{k}]")
                    if not isinstance(raw.get("attributes"), (list, dict, type(None))):  # (a list of key/values, or an object: `values`)
                        raise ValueError(f"{where}.scopeSpans[{j}].spans[{k}].attributes must be a list of {{key, value}} or an object, "
                                         f"got {type(raw['attributes']).__name__}")
                    span = _span(raw, service, file, line, scope_name, resource)
                    if not span.trace_id:
                        orphans.append((file, line, f"span {span.span_id or '?'} has no traceId" + (" (zeros only)" if raw.get("traceId") else "")))
                        continue
                    spans.append(span)
        logs: list[tuple[LogKey, LogEvent]] = []
        for i, rl in enumerate(_items(doc, "resourceLogs", "resourceLogs")):
            _shape(rl, dict, f"resourceLogs[{i}]")
            scopes = "scopeLogs" if rl.get("scopeLogs") or "instrumentationLibraryLogs" not in rl else "instrumentationLibraryLogs"  # (OTLP before 0.15)
            for j, sl in enumerate(_items(rl, scopes, f"resourceLogs[{i}].{scopes}")):
                _shape(sl, dict, f"resourceLogs[{i}].{scopes}[{j}]")
                for k, rec in enumerate(_items(sl, "logRecords", f"resourceLogs[{i}].{scopes}[{j}].logRecords")):
                    if (got := log_event(rec, f"resourceLogs[{i}].{scopes}[{j}].logRecords[{k}]", file, line)) is not None:
                        logs.append(got)
        for span in spans:
            self.spans[span.trace_id].append(span)
        for key, event in logs:
            self.logs[key].append(event)
        self.orphans.extend(orphans)

    def groups(self, keys: list[str] | None) -> Iterator[Group]:
        """Group spans by the first of `keys` found in their trace (or by trace id); fills `refused` before it returns.

        `keys=None` groups by trace id. Within a trace the first key name
        found on any span is used; a span belongs to the value carried by its
        *topmost* ancestor-or-self with that key, so several runs under one
        parent span (a web request, an evaluation harness), each with its own
        conversation id, become separate groups while a delegated run nested
        in another stays with its parent. Spans with no keyed ancestor join
        the trace's earliest keyed span. Groups come out in order of their
        first span's start time. A trace whose key is no text nor whole number (`true`, `42.0`: `keys`) is no group:
        its refusal is in `refused` once this returns, so a reader can report it before the groups are read.
        """
        by_key: dict[tuple[str | None, str], list[Span]] = defaultdict(list)
        traces: dict[tuple[str | None, str], list[str]] = defaultdict(list)
        rootless: list[tuple[str, list[Span], list[Span]]] = []
        span_only_records(self.spans, self.logs)
        evaluations = place_evaluations(self.spans, self.logs)
        untraced_records(self.spans, self.logs)
        unplaced_spans(self.spans, self.logs)
        for trace_id, delivered in self.spans.items():
            spans, stand_ins = hung_trace(delivered)
            if stand_ins:
                rootless.append((trace_id, stand_ins, spans))
            unplaced = self.logs.get((trace_id, ""), [])
            owner = lone_request(spans) if unplaced else None
            for span in spans:
                span.logs = _once_logs(self.logs.get((trace_id, span.span_id), []) + (unplaced if span is owner else []))
                span.evaluations = _once_logs(evaluations.get((trace_id, span.span_id), []))
            split = split_trace(trace_id, spans, keys or [])
            if isinstance(split, RawRecord):
                self.refused.append(split)
                continue
            for key, part in split:
                by_key[key].extend(part)
                traces[key].append(trace_id)
        warn_lost_roots(rootless)  # (said once, by cause: a dropped batch, or a smolagents run that raised)
        return _in_order(by_key, traces)


def _in_order(by_key: dict[tuple[str | None, str], list[Span]], traces: dict[tuple[str | None, str], list[str]]) -> Iterator[Group]:
    """The groups of `Collector.groups`, in order of their first span's start (lazily: each sorts its own spans)."""
    first = {k: min(s.start for s in v) for k, v in by_key.items()}
    for key in sorted(by_key, key=lambda k: (first[k], k[1])):
        spans = sorted(by_key[key], key=lambda s: (s.start, s.span_id))
        order = sorted(set(traces[key]), key=lambda t: min(s.start for s in spans if s.trace_id == t))
        yield Group(key=key[1], key_attr=key[0], traces=order, spans=spans)


def _content(span: Span) -> tuple[Any, ...]:
    """What a span says, without where it was read: two files holding one export are one delivery."""
    return (span.parent_id, span.name, span.kind, span.start, span.end, span.attrs, span.status_error, span.status_message,
            span.events, span.service, span.problem)


def hung_trace(delivered: list[Span]) -> tuple[list[Span], list[Span]]:
    """`(spans, stand_ins)`: one trace's `delivered` spans hung together — each span id once (`once_spans`), parent loops
    broken, a span whose parent never arrived hung from the trace's root or, when several name one lost parent, from a
    stand-in of it (`links`; `stand_ins`, also among `spans`) — in order of start. The caller warns about the stand-ins."""
    spans = once_spans(delivered)
    break_cycles(spans)
    adopt_orphans(spans)
    stand_ins = stand_in_parents(spans)
    if stand_ins:
        spans = [*spans, *stand_ins]
    spans.sort(key=lambda s: (s.start, s.span_id))
    return spans, stand_ins


def once_spans(spans: list[Span]) -> list[Span]:
    """The spans of one trace, each span id once (an exporter's retry, an export read twice); see `once`.

    A span whose copies differ is the one kept with `copies_differ` set (the case lists it in `metadata.otel.duplicates`).
    Every reader of `Span`s (`otel`'s files, `phoenix`'s API) passes a trace's spans through it.
    """
    kept, differed = once(spans, key=lambda s: s.span_id or None, ended=lambda s: s.end > 0, content=_content)
    if len(kept) == len(spans):
        return spans
    out = [spans[i] for i in kept]
    for span in out:
        span.copies_differ = span.span_id in differed
    return out


def _once_logs(events: list[LogEvent]) -> list[LogEvent]:
    """A span's log events with a record delivered twice read once: same name, time, body and attributes.

    Events without a time are all kept: two identical ones (a user saying "yes" twice) cannot be told from a retry.
    """
    if len(events) < 2:
        return events
    kept, _ = once(events, key=lambda e: (e.name, e.time, json.dumps([e.body, e.attrs], sort_keys=True, default=str)) if e.time else None,
                   ended=lambda e: True)
    return [events[i] for i in kept]
