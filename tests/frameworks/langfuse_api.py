"""Langfuse public-API JSON for traces, built from the OTLP spans Langfuse's SDK exported.

No Langfuse server runs here, so the records are derived from the captured OTLP the way Langfuse's
OTel ingestion maps spans (documented at langfuse.com "OpenTelemetry / property mapping"):

- one observation per span: `id` = span id (hex), `traceId` = trace id (hex), `parentObservationId` =
  parent span id; `type` = `langfuse.observation.type` upper-cased (SPAN when absent); `input`/`output`
  = `langfuse.observation.input/output` parsed as JSON when they parse; `completionStartTime` = the streamed
  generation's `langfuse.observation.completion_start_time`, which the SDK writes JSON-quoted (decoded); `level` =
  `langfuse.observation.level` (DEFAULT); `statusMessage` = `langfuse.observation.status_message`;
  `model`, `modelParameters`, `usageDetails` from `langfuse.observation.model.*` / `usage_details`
  (OpenAI keys renamed input/output/total, nulls dropped); `metadata` = `{"attributes", "resourceAttributes",
  "scope"}` (Langfuse keeps every span and resource attribute there); `environment` = `langfuse.environment`.
- the trace: `id`, `timestamp` (root start), `name` (`langfuse.trace.name`, else the root span's name),
  `input`/`output` (`langfuse.trace.input/output`, else the root observation's), `sessionId`
  (`session.id`), `userId` (`user.id`), `tags`, `environment`, `latency` (seconds, first start to last end).
  Costs the SDK sent (`langfuse.observation.cost_details`, which Langfuse keeps as given) are the
  observation's `costDetails` and `calculatedTotalCost`/`totalCost` (their `total`), and the trace's `totalCost`
  is their sum, as the server sums what it has; other costs are 0/absent: prices come from Langfuse's model
  table on the server, which no recording has.

`trace_with_full_details` gives `GET /api/public/traces/{id}` (TraceWithFullDetails with `observations`
as ObservationsView, fields as the v4 SDK's models name them); `observations_v2` gives
`GET /api/public/v2/observations?traceId=…` built with the installed SDK's own `ObservationV2` /
`ObservationsV2Response` models (input/output kept as the raw strings that API returns).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from common import any_value, otlp_spans

__all__ = ["observations_v2", "trace_with_full_details"]

_USAGE_KEYS = {"prompt_tokens": "input", "completion_tokens": "output", "total_tokens": "total"}
PROJECT = "recording-project"


def _time(nanos: str) -> str:
    t = datetime.fromtimestamp(int(nanos) / 1e9, tz=timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _usage(raw: Any) -> dict[str, int]:
    usage = _json(raw) or {}
    return {_USAGE_KEYS.get(k, k): v for k, v in usage.items() if isinstance(v, int)}


def _observation(resource: dict[str, Any], scope: dict[str, Any], span: dict[str, Any]) -> dict[str, Any]:
    """ObservationsView fields (by alias) of one span; input/output still raw strings."""
    attrs = {a["key"]: any_value(a.get("value", {})) for a in span.get("attributes", [])}
    usage = _usage(attrs.get("langfuse.observation.usage_details"))
    cost = {k: v for k, v in (_json(attrs.get("langfuse.observation.cost_details")) or {}).items() if isinstance(v, (int, float))}
    start, end = int(span["startTimeUnixNano"]), int(span["endTimeUnixNano"])
    return {
        "id": span["spanId"], "traceId": span["traceId"], "type": str(attrs.get("langfuse.observation.type", "span")).upper(),
        "name": span["name"], "startTime": _time(span["startTimeUnixNano"]), "endTime": _time(span["endTimeUnixNano"]),
        "completionStartTime": _json(attrs.get("langfuse.observation.completion_start_time")), "model": attrs.get("langfuse.observation.model.name"),
        "modelParameters": _json(attrs.get("langfuse.observation.model.parameters")),
        "input": attrs.get("langfuse.observation.input"), "version": attrs.get("langfuse.version"),
        "metadata": {"attributes": attrs, "resourceAttributes": resource, "scope": {k: scope[k] for k in ("name", "version") if k in scope}},
        "output": attrs.get("langfuse.observation.output"),
        "usage": {"input": usage.get("input", 0), "output": usage.get("output", 0), "total": usage.get("total", 0), "unit": "TOKENS",
                  "inputCost": None, "outputCost": None, "totalCost": None},
        "level": attrs.get("langfuse.observation.level", "DEFAULT"), "statusMessage": attrs.get("langfuse.observation.status_message"),
        "parentObservationId": span.get("parentSpanId"), "promptId": None, "usageDetails": usage, "costDetails": cost,
        "environment": attrs.get("langfuse.environment", "default"), "promptName": None, "promptVersion": None, "modelId": None,
        "inputPrice": None, "outputPrice": None, "totalPrice": None, "calculatedInputCost": None, "calculatedOutputCost": None,
        "calculatedTotalCost": cost.get("total"), **({"totalCost": cost["total"]} if "total" in cost else {}), "latency": (end - start) / 1e9, "timeToFirstToken": None,
        "_attrs": attrs, "_start": start, "_end": end,
    }


def _traces(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for resource, scope, span in otlp_spans(docs):
        by_trace.setdefault(span["traceId"], []).append(_observation(resource, scope, span))
    for obs in by_trace.values():
        obs.sort(key=lambda o: o["_start"])  # the API lists observations by start time
    return by_trace


def _public(o: dict[str, Any], parse_io: bool) -> dict[str, Any]:
    out = {k: v for k, v in o.items() if not k.startswith("_")}
    if parse_io:
        out["input"], out["output"] = _json(out["input"]), _json(out["output"])
    return out


def trace_with_full_details(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One `GET /api/public/traces/{id}` body per trace in `docs`, in order of first appearance."""
    out = []
    for trace_id, obs in _traces(docs).items():
        root = next((o for o in obs if o["parentObservationId"] is None), obs[0])
        attrs = root["_attrs"]
        trace_in = attrs.get("langfuse.trace.input", root["input"])
        trace_out = attrs.get("langfuse.trace.output", root["output"])
        out.append({
            "id": trace_id, "timestamp": root["startTime"], "name": attrs.get("langfuse.trace.name", root["name"]),
            "input": _json(trace_in), "output": _json(trace_out), "sessionId": attrs.get("session.id"),
            "release": attrs.get("langfuse.release"), "version": attrs.get("langfuse.version"), "userId": attrs.get("user.id"),
            "metadata": {"resourceAttributes": root["metadata"]["resourceAttributes"], "scope": root["metadata"]["scope"]},
            "tags": list(attrs.get("langfuse.trace.tags") or []), "public": bool(attrs.get("langfuse.trace.public", False)),
            "environment": root["environment"], "htmlPath": f"/project/{PROJECT}/traces/{trace_id}",
            "latency": (max(o["_end"] for o in obs) - min(o["_start"] for o in obs)) / 1e9,
            "totalCost": sum((o["costDetails"].get("total", 0.0) for o in obs), 0.0),
            "observations": [_public(o, parse_io=True) for o in obs], "scores": [],
        })
    return out


def observations_v2(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One `GET /api/public/v2/observations?traceId=…` body per trace, through the installed SDK's models."""
    from langfuse.api.core.pydantic_utilities import parse_obj_as
    from langfuse.api.observations.types.observations_v2response import ObservationsV2Response

    out = []
    for obs in _traces(docs).values():
        rows = []
        for o in obs:
            attrs = o["_attrs"]
            rows.append({
                **{k: o[k] for k in ("id", "traceId", "startTime", "endTime", "parentObservationId", "type", "name", "level", "statusMessage",
                                     "version", "environment", "completionStartTime", "input", "output", "metadata", "model", "modelParameters",
                                     "usageDetails", "costDetails", "latency")},
                "projectId": PROJECT, "isRootObservation": o["parentObservationId"] is None,
                "userId": attrs.get("user.id"), "sessionId": attrs.get("session.id"), "totalCost": 0.0,
            })
        # parsed by alias and dumped by alias, as the SDK's client reads the API's body
        response = parse_obj_as(ObservationsV2Response, {"data": rows, "meta": {"cursor": None}})
        out.append(response.model_dump(mode="json", by_alias=True))
    return out
