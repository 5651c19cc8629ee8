"""Format `mlflow`: the spans of one `Trace.to_json()` record in the `otel` model, for `mlflow_trace`.

`trace_spans` turns a record's `data.spans` into `otel` spans (`otel.native.native_span`), each with its own attributes
for the `mlflow` convention to read. It reads both span layouts: MLflow 3's (`span_id`, `parent_span_id`,
`start_time_unix_nano`, `status: {code, message}`) and MLflow 2's (`context.span_id`, `parent_id`, `start_time`,
`status_code`). A span's error is its exception event (`"<type>: <message>"`), else its ERROR status's message; the error
of a span that is no call (not `TOOL`) is listed for `metadata.mlflow.errors`, unless it is a LangGraph pause or handoff
(`GraphInterrupt`, `ParentCommand`), which failed nothing. A span listed twice is read once (`otel.once`); names MLflow
made unique on storing a trace (`get_weather_1`, `get_weather_2`) are read as the name they had; a span whose parent is
not in the trace hangs from its root (`otel.spans.adopt_orphans`).

Kept apart from `mlflow_trace`, which frames the lines, groups a session's traces or a paused run's and builds the case:
this is the part that reads one record's span list, and needs nothing else of the trace.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from tracejudge.stages.extract.common import fail
from tracejudge.stages.extract.otel.native import in_order, nanos, native_span
from tracejudge.stages.extract.otel.once import once
from tracejudge.stages.extract.otel.spans import Span, adopt_orphans
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["trace_spans"]

_CALL_TYPES = {"TOOL"}


def _events(span: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    events = span.get("events")
    return [(str(e.get("name", "")), e["attributes"] if isinstance(e.get("attributes"), dict) else {})
            for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def _status(span: dict[str, Any]) -> tuple[bool, str | None]:
    """ERROR status (MLflow 3's `status.code`, MLflow 2's `status_code`) and its message."""
    status = span.get("status")
    code = status.get("code") if isinstance(status, dict) else span.get("status_code")
    message = status.get("message") if isinstance(status, dict) else span.get("status_message")
    return isinstance(code, str) and code.endswith("ERROR"), (str(message) if message else None)


def _exception(events: list[tuple[str, dict[str, Any]]], failed: bool, message: str | None) -> str | None:
    """A span's error: its exception event (`type: message`), else an ERROR status's message."""
    for name, attrs in events:
        if name == "exception" and (attrs.get("exception.type") or attrs.get("exception.message")):
            return ": ".join(str(x) for x in (attrs.get("exception.type"), attrs.get("exception.message")) if x)
    return (message or "error") if failed else None


def _paused(events: list[tuple[str, dict[str, Any]]]) -> bool:
    """Whether a span's exception is LangGraph's pause (`GraphInterrupt`: the graph asked the human) or handoff (`ParentCommand`:
    a tool's `Command(goto=…, graph=Command.PARENT)` on its way to the parent graph): nothing failed."""
    return any(name == "exception" and str(ev.get("exception.type", "")).rsplit(".", 1)[-1] in ("GraphInterrupt", "NodeInterrupt", "ParentCommand")
               for name, ev in events)


def _span_key(span: Any) -> tuple[Any, Any] | None:
    """A span's identity: trace id and span id (MLflow 2 keeps both under `context`); none without a span id."""
    if not isinstance(span, dict):
        return None
    context = span.get("context") if isinstance(span.get("context"), dict) else {}
    sid = span.get("span_id") or context.get("span_id")
    return (str(span.get("trace_id") or context.get("trace_id")), str(sid)) if isinstance(sid, (str, int)) and sid != "" else None


def _original_names(raw: list[Any], kept: list[int]) -> dict[int, str]:
    """Span names MLflow renamed on storing the trace, by index: `{i: name}`.

    MLflow 2.x and early 3.x (3.1 here) renamed spans sharing a name within a trace to `<name>_1`,
    `<name>_2`, ... (a tool called twice became `get_weather_1` and `get_weather_2`, no longer
    matching the model's calls, which then read as calls of their own).
    A group is taken back to its name when its suffixes are exactly 1..k (k >= 2), no span keeps the
    bare name, and every span of the group ran the same function (`mlflow.spanFunctionName`).
    """
    names = {i: raw[i].get("name") for i in kept if isinstance(raw[i], dict) and isinstance(raw[i].get("name"), str)}
    groups: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for i, name in names.items():
        m = re.fullmatch(r"(.+)_([1-9][0-9]*)", name)
        if m:
            groups[m.group(1)].append((int(m.group(2)), i))
    out: dict[int, str] = {}
    for base, members in groups.items():
        functions = {str((raw[i].get("attributes") or {}).get("mlflow.spanFunctionName")) for _, i in members}
        if len(members) >= 2 and sorted(n for n, _ in members) == list(range(1, len(members) + 1)) and base not in names.values() and len(functions) == 1:
            out.update((i, base) for _, i in members)
    return out


def trace_spans(cid: str, raw: list[Any]) -> tuple[list[Span], list[dict[str, Any]], list[str]]:
    """The record's spans in the `otel` model, the errors of spans that are not calls, and the ids of spans whose copies differed.

    A span written twice (traces merged or concatenated) is read once; see `once`.
    """
    out, errors, starts = [], [], []
    kept, differed = once(raw, key=_span_key, ended=lambda s: s.get("end_time_unix_nano", s.get("end_time")) is not None)
    renamed = _original_names(raw, kept)
    for i in kept:
        span = raw[i]
        attrs = span.get("attributes") if isinstance(span, dict) else None
        if not isinstance(attrs, dict):
            fail("expected a span with `attributes`", field=f"data.spans[{i}].attributes", case_id=cid)
        context = span.get("context") if isinstance(span.get("context"), dict) else {}
        failed, message = _status(span)
        events = _events(span)
        start = nanos(span.get("start_time_unix_nano", span.get("start_time")))
        end = nanos(span.get("end_time_unix_nano", span.get("end_time")))
        starts.append(start)
        sid = span.get("span_id") or context.get("span_id") or f"#{i}"
        error = _exception(events, failed, message)
        # An exception event without an ERROR status still failed the call (MLflow records both; an export may keep one).
        out.append(native_span(cid, sid, span.get("parent_span_id") or span.get("parent_id"), renamed.get(i, span.get("name")), 0, end or 0, attrs,
                               error=error is not None, message=error if not failed else message, events=events))
        kind = unjson(attrs.get("mlflow.spanType"))
        if error and kind not in _CALL_TYPES and not _paused(events):
            errors.append({"span": str(sid), "type": kind if isinstance(kind, str) else None, "name": span.get("name"), "error": error})
    for span, start in zip(out, in_order(starts)):
        span.start = start
    adopt_orphans(out)  # (MLflow writes one root per trace)
    return out, errors, [str(k[1]) for k in differed]
