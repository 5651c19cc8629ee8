"""Jaeger's JSON export (`{"data": [{"traceID", "spans", "processes"}]}`) as the OTLP/JSON it was ingested from.

Jaeger's query API and UI download traces in their own model: a span's
`operationName`, `references` (`CHILD_OF` = the parent), `startTime` and
`duration` in microseconds, typed `tags` and timestamped `logs`, with
resources as `processes`. When Jaeger ingests OTLP it keeps the span kind,
the status, the instrumentation scope and the count of attributes the SDK dropped as tags (`span.kind`,
`otel.status_code` / `otel.status_description`, `otel.scope.name`, `otel.dropped_attributes_count`); those go
back to their OTLP fields here, as agentevals' Jaeger reader does, and a log
becomes a span event named by its `event` field.
"""

from __future__ import annotations

from typing import Any

__all__ = ["from_jaeger", "is_jaeger"]

_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_SCOPE_TAGS = ("otel.scope.name", "otel.library.name")
_DROPPED = "otel.dropped_attributes_count"  # how the OTLP field `droppedAttributesCount` travels in non-OTLP formats
_FIELD_TAGS = frozenset({"span.kind", "otel.status_code", "otel.status_description", "otel.scope.version", "otel.library.version", _DROPPED,
                         *_SCOPE_TAGS})


def is_jaeger(doc: Any) -> bool:
    """Whether `doc` is a Jaeger JSON export: a `data` list of traces holding `spans`."""
    data = doc.get("data") if isinstance(doc, dict) else None
    return isinstance(data, list) and bool(data) and all(isinstance(t, dict) and isinstance(t.get("spans"), list) for t in data)


def _value(tag: dict[str, Any]) -> dict[str, Any]:
    value, kind = tag.get("value"), tag.get("type")
    if kind == "bool" or isinstance(value, bool):
        return {"boolValue": bool(value)}
    if kind == "int64":
        return {"intValue": str(value)}
    if kind == "float64":
        return {"doubleValue": value}
    return {"stringValue": value if isinstance(value, str) else str(value)}  # binary stays base64 text


def _tags(raw: Any) -> dict[str, dict[str, Any]]:
    return {t["key"]: t for t in raw or [] if isinstance(t, dict) and isinstance(t.get("key"), str)}


def _attributes(tags: dict[str, dict[str, Any]], skip: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(t)} for k, t in tags.items() if k not in skip]


def _span(raw: dict[str, Any]) -> dict[str, Any]:
    tags = _tags(raw.get("tags"))
    parent = next((r.get("spanID") for r in raw.get("references") or [] if isinstance(r, dict) and r.get("refType") == "CHILD_OF"), None)
    start = int(raw.get("startTime") or 0)
    status = str((tags.get("otel.status_code") or {}).get("value") or "").upper()
    error = status == "ERROR" or (status != "OK" and (tags.get("error") or {}).get("value") is True)
    events = []
    for log in raw.get("logs") or []:
        if isinstance(log, dict):
            fields = _tags(log.get("fields"))
            name = (fields.pop("event", None) or {}).get("value", "log")
            events.append({"name": str(name), "timeUnixNano": str(int(log.get("timestamp") or 0) * 1000), "attributes": _attributes(fields)})
    out: dict[str, Any] = {
        "traceId": raw.get("traceID"),
        "spanId": raw.get("spanID"),
        "name": raw.get("operationName") if isinstance(raw.get("operationName"), str) else "",
        "kind": _KINDS.get(str((tags.get("span.kind") or {}).get("value", "")).lower(), 0),
        "startTimeUnixNano": str(start * 1000),
        "endTimeUnixNano": str((start + int(raw.get("duration") or 0)) * 1000),
        "attributes": _attributes(tags, _FIELD_TAGS),
        "events": events,
    }
    if parent:
        out["parentSpanId"] = parent
    if _DROPPED in tags:
        out["droppedAttributesCount"] = (tags[_DROPPED] or {}).get("value")
    if error:
        out["status"] = {"code": 2, "message": (tags.get("otel.status_description") or {}).get("value")}
    return out


def from_jaeger(doc: dict[str, Any]) -> dict[str, Any]:
    """The OTLP/JSON export (`resourceSpans`) holding the spans of Jaeger export `doc` (see `is_jaeger`).

    Spans group by process (the resource) and scope; a span that is not an
    object is left out (the reader then names no such span), and one
    missing ids or times is passed on for the reader to refuse by its rules.
    """
    resources: dict[tuple[Any, str | None], dict[str, Any]] = {}
    for trace in doc["data"]:
        processes = trace.get("processes") if isinstance(trace.get("processes"), dict) else {}
        for raw in trace["spans"]:
            if not isinstance(raw, dict):
                continue
            pid = raw.get("processID")
            scope = next((t["value"] for k, t in _tags(raw.get("tags")).items() if k in _SCOPE_TAGS and isinstance(t.get("value"), str)), None)
            key = (id(trace), pid, scope)
            if key not in resources:
                proc = processes.get(pid) if isinstance(processes.get(pid), dict) else {}
                attrs = _attributes(_tags(proc.get("tags")))
                if isinstance(proc.get("serviceName"), str):
                    attrs.insert(0, {"key": "service.name", "value": {"stringValue": proc["serviceName"]}})
                resources[key] = {"resource": {"attributes": attrs}, "scopeSpans": [{"scope": {"name": scope or ""}, "spans": []}]}
            resources[key]["scopeSpans"][0]["spans"].append(_span(raw))
    return {"resourceSpans": list(resources.values())}
