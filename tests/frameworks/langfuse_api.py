"""Langfuse public-API JSON for traces, built from the OTLP spans Langfuse's SDK exported, as Langfuse's server keeps them.

No Langfuse server runs here, so the records are derived from the captured OTLP (one document per export the SDK
posted) by the rules of the server's source (langfuse/langfuse; paths under `packages/shared/src/server/` unless
said otherwise):

- ingestion: `otel/OtelIngestionProcessor.ts` — `processSpan`, `createObservationEvent` (one observation per span),
  `createTraceEvent` (a trace event for a root span, for a span that sets a trace attribute, `hasTraceUpdates`, and for
  the first span of a trace not seen before), `extractMetadata`, `extractInputAndOutput`, `extractUsageDetails`,
  `extractCostDetails`, `extractModelParameters`, `extractModelName`, `convertNanoTimestampToISO`; `processToEvent` for
  the v4 events table; `otel/ObservationTypeMapper.ts`; `ingestion/types.ts` (`UsageDetails`, `CostDetails`);
  `worker/src/services/IngestionService/index.ts` (`mergeAndWrite`, `mergeTraceRecords`, `getUsageUnits`,
  `calculateUsageCosts`, `createEventRecord`) and its `utils.ts` (`overwriteObject`); `otel/utils.ts`
  (`flattenJsonToPathArrays`).
- reading: `web/src/pages/api/public/traces/[traceId].ts` with `repositories/observations.ts` (`getObservationsForTrace`),
  `repositories/observations_converters.ts` (`convertObservation`, `reduceUsageOrCostDetails`),
  `utils/metadata_conversion.ts` (`parseMetadataCHRecordToDomain`) and `web/src/features/public-api/types/
  observations.ts` (`transformDbToApiObservation`, `APIObservation`) for `GET /api/public/traces/{id}`;
  `repositories/events.ts` (`getObservationsV2FromEventsTableForPublicApi`, `orderByForObservationsQuery`) and
  `queries/clickhouse-sql/event-query-builder.ts` (`EVENTS_FIELDS`, `FIELD_SETS`) for `GET /api/public/v2/observations`,
  the SDK's spans going to the events table directly (it sends `x-langfuse-ingestion-version: 4`).

What that gives:

- times in milliseconds: the span's nanoseconds are cut to the millisecond (floor) on ingestion; `latency` (seconds) and
  `timeToFirstToken` come from those times.
- order: `GET /api/public/traces/{id}` selects the observations without `ORDER BY` (or, where the deployment
  deduplicates, by ingestion time in milliseconds); ClickHouse gives them as stored, by `type`, day and `id`, as here.
  The v2 API lists by `start_time` DESC, then (one trace) span id DESC. Neither tells which of two observations that
  started in the same millisecond started first.
- `metadata` of an observation (v1): the SDK's `langfuse.observation.metadata.<key>` attributes as `<key>` (and the keys of
  a whole `langfuse.observation.metadata` JSON object), then `resourceAttributes` and `scope` (`{name, version,
  attributes}`); the span's other attributes go under `attributes` only for spans of other instrumentations (a scope
  not named `langfuse-sdk…`), without the input/output and metadata ones, non-text values as JSON text. The table keeps
  each top-level value as text that the API decodes as JSON when it is JSON: the SDK's `"\\"call_1\\""` reads
  `"call_1"`. v2 (events table): `attributes`, `resourceAttributes` and `scope` first, then the observation's metadata
  keys and over them the trace's (`langfuse.trace.metadata.<key>`), flattened to dotted paths
  (`resourceAttributes.service.name`, `scope.attributes.public_key`), each value decoded alike.
- an observation: `type` from `langfuse.observation.type` (else GENERATION when a model is named, else SPAN); `name` the
  span's; `level` from `langfuse.observation.level`, else ERROR for an error status, else DEFAULT; `statusMessage` from
  `langfuse.observation.status_message`, else the status message; `model` from `langfuse.observation.model.name`;
  `modelParameters` the parsed `langfuse.observation.model.parameters` (values kept when text or a number, else as JSON
  text), else `{}`; `usageDetails` as the SDK sent them (OpenAI's `prompt_tokens`… shape renamed `input`/`output`/`total`,
  cached and reasoning details split off), with `total` their sum when not sent; `costDetails` as sent, with `total`
  `input` + `output` when only those were; `calculatedTotalCost` its `total`, else 0; `usage` and the token counts from
  the keys naming input/output; `input`/`output` JSON-decoded (v1) or the SDK's JSON text as sent (v2); `promptName` only
  for a prompt kept in Langfuse's prompt management (v1; v2 gives the name the SDK sent), so none here. Prices and
  costs Langfuse would compute from its model table (`modelId`, `inputPrice`…) are not: no recording has that table.
- the trace (v1): `timestamp` the earliest start among the trace events of the first export holding the trace;
  `name` `langfuse.trace.name`, else the root span's name; `input`/`output` `langfuse.trace.input/output`, else the
  root observation's (the last trace event that had one); `sessionId` from `session.id` (or `langfuse.session.id`,
  `langfuse.observation.metadata.langfuse_session_id`, …), `userId` from `user.id`, `tags` joined and sorted, `metadata`
  every trace event's (`langfuse.trace.metadata.<key>`, the root observation's metadata, `resourceAttributes`, `scope`)
  merged, decoded as an observation's; `latency` last end minus first start of the observations, `totalCost` the sum of
  their `calculatedTotalCost`.
- v2 only: the events table keeps text columns non-null, so a span without a status message, version, model, user or
  session has `""` there; `userId`, `sessionId`, `tags`, `release`, `traceName` are the span's own (`traceName`:
  `langfuse.trace.name`, else its name when it is a root).

Not modelled (no recording has them): spans of other instrumentations' own input/output and type conventions, tool
definitions the server moves from metadata into the input (`normalizeToolMetadataForObservation`), prompts, model
prices. `trace_with_full_details` gives `GET /api/public/traces/{id}`; `observations_v2` gives `GET
/api/public/v2/observations?traceId=…&fields=core,basic,time,io,metadata,model,usage,prompt,metrics,trace_context`
(or the field groups, `expandMetadata` and `limit` asked: what `getObservationsV2FromEventsTableForPublicApi` selects
for them, `FIELD_GROUPS`), read through the installed SDK's `ObservationsV2Response` model. `traces_list` gives a page of
`GET /api/public/traces` (the traces list: observations and scores as ids) and `observations_v1` one of the older
`GET /api/public/observations?traceId=…` (paged by number, `meta.page`/`totalPages`), which SDK 5 no longer reads.
`score_v1` gives one element of a trace's `scores` as `GET /api/public/traces/{id}` lists them (`getScoresForTraces`,
validated by `filterAndValidateDbTraceScoreList` against `APIScoreSchemaV1`: the trace's and its observations' scores).
"""

from __future__ import annotations

import base64
from typing import Any

from langfuse_spans import PROJECT, Span, decoded, iso, js, metadata_of, ms, read_spans, reduced, truthy

__all__ = ["observations_v1", "observations_v2", "score_v1", "trace_with_full_details", "traces_list", "write_forms"]


def _stored(metadata: dict[str, Any]) -> dict[str, Any]:
    """A metadata map as the API gives it back: each top-level value kept as text (objects as JSON), JSON-decoded on reading."""
    return {k: decoded(v) for k, v in metadata.items()}


def _flattened(metadata: dict[str, Any], prefix: str = "", cut: int | None = None) -> dict[str, Any]:
    """`flattenJsonToPathArrays` as the v2 API reads it back: nested objects as dotted paths, each leaf JSON-decoded.

    `cut`: each stored text cut to its first `cut` characters first (`events_core`'s `leftUTF8(v, 200)`: no mark of the cut;
    a JSON text cut short reads back as text)."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            out.update(_flattened(value, path, cut))
        elif value is None:
            out[path] = ""  # (the table's text column keeps a null as "", which reads back as itself)
        else:
            out[path] = decoded((value if isinstance(value, str) else js(value))[:cut])
    return out


def _arrivals(spans: list[Span]) -> dict[int, int]:
    """When each export reached the server (`createdAt`/`updatedAt`): the latest end among its spans (the records hold no clock)."""
    out: dict[int, int] = {}
    for s in spans:
        out[s.doc] = max(out.get(s.doc, 0), s.end)
    return out


def _costed(s: Span) -> tuple[dict[str, int], dict[str, float], tuple[Any, ...], tuple[Any, ...]]:
    usage, costs = s.usage(), s.costs()
    return usage, costs, reduced(usage), reduced(costs)


def _observation(s: Span, arrived: int) -> dict[str, Any]:
    """`APIObservation` of one span, as `GET /api/public/traces/{id}` lists it (dual-write `observations` table)."""
    usage, costs, (u_in, u_out, u_total), (c_in, c_out, c_total) = _costed(s)
    raw_in, raw_out = s.io()
    completion = s.completion_start()
    meta = {**metadata_of(s.resource, "trace"), **metadata_of(s.attrs, "observation"), **s.meta()}
    return {
        "id": s.id, "traceId": s.trace, "startTime": iso(s.start), "endTime": iso(s.end), "projectId": PROJECT, "parentObservationId": s.parent,
        "type": s.kind(), "environment": s.environment(), "name": s.name(), "level": s.level(), "statusMessage": s.status_message(),
        "version": s.either("langfuse.version", "service.version"), "createdAt": iso(arrived), "updatedAt": iso(arrived),
        "input": decoded(raw_in) if raw_in else None, "output": decoded(raw_out) if raw_out else None, "metadata": _stored(meta),
        "model": s.model(), "modelParameters": s.model_parameters(), "completionStartTime": iso(completion), "promptId": None,
        "promptName": None, "promptVersion": None, "latency": (ms(s.end) - ms(s.start)) / 1000,
        "timeToFirstToken": None if completion is None else (ms(completion) - ms(s.start)) / 1000, "usageDetails": usage, "costDetails": costs,
        "usagePricingTierId": None, "usagePricingTierName": None, "inputPrice": 0, "outputPrice": 0, "totalPrice": 0,
        "calculatedInputCost": c_in, "calculatedOutputCost": c_out, "calculatedTotalCost": c_total, "unit": "TOKENS",
        "promptTokens": u_in or 0, "completionTokens": u_out or 0, "totalTokens": u_total, "modelId": None,
        "usage": {"unit": "TOKENS", "input": u_in or 0, "output": u_out or 0, "total": u_total},
    }


def _trace_event(s: Span) -> dict[str, Any]:
    """`createTraceEvent` as `mapTraceEventsToRecords` keeps it (a key left out: JavaScript's `undefined`)."""
    event: dict[str, Any] = {"timestamp": ms(s.start), "environment": s.environment(), "public": False, "tags": [], "metadata": {}}
    if not (s.root or s.trace_updates()):
        return event  # a trace first seen here: only its id and time
    trace_name = s.attrs.get("langfuse.trace.name")
    meta = {**metadata_of(s.resource, "trace"), **metadata_of(s.attrs, "trace")}
    if s.root:
        trace_in, trace_out = s.io(trace=True)
        meta.update({**metadata_of(s.attrs, "observation"), **s.meta()})
        event["name"] = trace_name if trace_name is not None else s.name()
    else:
        trace_in, trace_out = s.attrs.get("langfuse.trace.input"), s.attrs.get("langfuse.trace.output")
        meta.update({k: v for k, v in s.meta().items() if k != "attributes"})
        if trace_name is not None:
            event["name"] = trace_name
    public = s.public()
    event.update(metadata=meta, version=s.either("langfuse.version", "service.version"), release=s.either("langfuse.release", "langfuse.release"),
                 public=bool(public), tags=s.tags(), input=trace_in, output=trace_out,
                 **{k: v for k, v in (("userId", s.user()), ("sessionId", s.session())) if v is not None})
    return event


def _lodash_merge(a: Any, b: Any) -> Any:
    """lodash `merge` of `b` into `a` (objects key by key, arrays index by index, an undefined source skipped)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {**a, **{k: _lodash_merge(a.get(k), v) if k in a else v for k, v in b.items()}}
    if isinstance(a, list) and isinstance(b, list):
        return [_lodash_merge(a[i], b[i]) if i < len(b) else a[i] for i in range(len(a))] + b[len(a):]
    return b


def _overwrite(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """`overwriteObject(a, b, immutable keys)`: `b`'s values over `a`'s, save an immutable key set before and an empty object or
    list; metadata merged; tags joined and sorted."""
    out = dict(a)
    for key, value in b.items():
        if key == "metadata":
            continue
        if key not in out or not (key in ("timestamp", "environment") or (isinstance(value, (dict, list)) and not value)):
            out[key] = value
    out["metadata"] = _lodash_merge(a.get("metadata") or {}, b.get("metadata") or {})
    out["tags"] = sorted(set(a.get("tags") or []) | set(b.get("tags") or []))
    return out


def _trace_records(spans: list[Span]) -> dict[str, dict[str, Any]]:
    """Each trace as the `traces` table holds it after every export was ingested (`processSpan`, `mergeAndWrite`)."""
    seen: set[str] = set()
    records: dict[str, dict[str, Any]] = {}
    arrivals = _arrivals(spans)
    for doc in sorted(arrivals):
        events: dict[str, list[dict[str, Any]]] = {}
        for s in (s for s in spans if s.doc == doc):
            if s.root or s.trace_updates() or s.trace not in seen:
                events.setdefault(s.trace, []).append(_trace_event(s))
                seen.add(s.trace)
        for trace, got in events.items():
            got.sort(key=lambda e: e["timestamp"])  # `toTimeSortedEventList` (stable)
            record = records.get(trace, {"createdAt": arrivals[doc]})
            for event in got:
                record = _overwrite(record, {k: v for k, v in event.items() if k not in ("input", "output")})
            for what in ("input", "output"):  # the latest event's that has one, else what the table held
                record[what] = next((e[what] for e in reversed(got) if truthy(e.get(what))), record.get(what))
            records[trace] = {**record, "updatedAt": arrivals[doc]}
    return records


def _stored_order(observations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `observations` table's sort key (`type`, day, `id`): the order a select without `ORDER BY` gives them in."""
    return sorted(observations, key=lambda o: (o["type"], o["startTime"][:10], o["id"]))


def trace_with_full_details(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One `GET /api/public/traces/{id}` body per trace in `docs`, in order of first appearance."""
    spans = read_spans(docs)
    arrivals, records = _arrivals(spans), _trace_records(spans)
    out = []
    for trace, record in records.items():
        mine = [s for s in spans if s.trace == trace]
        observations = _stored_order([_observation(s, arrivals[s.doc]) for s in mine])
        latency = (max(ms(s.end) for s in mine) - min(ms(s.start) for s in mine)) / 1000
        out.append({
            "id": trace, "projectId": PROJECT, "name": record.get("name"), "timestamp": iso(record["timestamp"] * 1_000_000),
            "environment": record["environment"], "tags": record["tags"], "bookmarked": False, "release": record.get("release"),
            "version": record.get("version"), "userId": record.get("userId"), "sessionId": record.get("sessionId"),
            "public": record.get("public", False), "input": decoded(record.get("input")) if record.get("input") else None,
            "output": decoded(record.get("output")) if record.get("output") else None, "metadata": _stored(record["metadata"]),
            "createdAt": iso(record["createdAt"]), "updatedAt": iso(record["updatedAt"]), "externalId": None, "scores": [],
            "latency": latency, "observations": observations, "htmlPath": f"/project/{PROJECT}/traces/{trace}",
            "totalCost": sum(o["calculatedTotalCost"] for o in observations),
        })
    return out


def _pages(count: int, limit: int, page: int) -> dict[str, Any]:
    """`meta` of a numbered page (`paginationMetaResponseZod`: `totalPages` `Math.ceil(totalItems / limit)`)."""
    return {"page": page, "limit": limit, "totalItems": count, "totalPages": -(-count // limit)}


def traces_list(docs: list[dict[str, Any]], limit: int = 50, page: int = 1) -> dict[str, Any]:
    """`GET /api/public/traces?limit=<limit>&page=<page>` (`web/src/pages/api/public/traces/index.ts`, `GetTracesV1Response`):
    the traces newest first (`timestamp` DESC), each as `GET /api/public/traces/{id}` gives it but for `observations` and
    `scores`, which the list gives as ids (`APIExtendedTrace`)."""
    traces = sorted(trace_with_full_details(docs), key=lambda t: t["timestamp"], reverse=True)
    data = [{**t, "observations": [o["id"] for o in t["observations"]], "scores": []} for t in traces[(page - 1) * limit:page * limit]]
    return {"data": data, "meta": _pages(len(traces), limit, page)}


def observations_v1(docs: list[dict[str, Any]], limit: int = 50, page: int = 1) -> list[dict[str, Any]]:
    """One `GET /api/public/observations?traceId=…&limit=<limit>&page=<page>` body per trace (`GetObservationsV1Response`):
    the observations as `GET /api/public/traces/{id}` gives them (`APIObservation`), `start_time` DESC, paged by number
    (`limit` 50 unless asked, at most 100)."""
    spans = read_spans(docs)
    arrivals = _arrivals(spans)
    out = []
    for trace in dict.fromkeys(s.trace for s in spans):
        mine = sorted((s for s in spans if s.trace == trace), key=lambda s: (ms(s.start), s.id), reverse=True)
        rows = [_observation(s, arrivals[s.doc]) for s in mine]
        out.append({"data": rows[(page - 1) * limit:page * limit], "meta": _pages(len(rows), limit, page)})
    return out


def _row(s: Span, arrived: int, cut: int | None = None) -> dict[str, Any]:
    """One observation as `GET /api/public/v2/observations` gives it (events table, every field group; `cut`: metadata values
    cut as `events_core` keeps them, `_flattened`)."""
    usage, costs, (u_in, u_out, u_total), (c_in, c_out, c_total) = _costed(s)
    raw_in, raw_out = s.io()
    completion = s.completion_start()
    is_root = s.parent is None or str(s.attrs.get("langfuse.internal.is_app_root")).lower() == "true"
    kind = s.kind()
    prompt = (s.attrs.get("langfuse.observation.prompt.name") or s.attrs.get("langfuse.prompt.name")) if kind == "GENERATION" else None
    trace_name = s.attrs.get("langfuse.trace.name") or (s.name() if is_root else None) or None
    meta = {**s.meta(), **metadata_of(s.attrs, "observation"), **metadata_of(s.attrs, "trace")}  # `processToEvent`
    return {
        "id": s.id, "traceId": s.trace, "startTime": iso(s.start), "endTime": iso(s.end), "projectId": PROJECT, "parentObservationId": s.parent,
        "type": kind, "name": s.name(), "level": s.level(), "statusMessage": s.status_message() or "",
        "version": s.either("langfuse.version", "service.version") or "", "environment": s.environment(), "bookmarked": False,
        "public": bool(s.public()), "userId": s.user() or "", "sessionId": s.session() or "", "isRootObservation": is_root,
        "completionStartTime": iso(completion), "createdAt": iso(arrived), "updatedAt": iso(arrived),
        "input": raw_in if raw_in else None, "output": raw_out if raw_out else None, "metadata": _flattened(meta, cut=cut),
        "model": s.model() or "", "internalModelId": "", "modelParameters": s.model_parameters(), "usageDetails": usage,
        "inputUsage": u_in or 0, "outputUsage": u_out or 0, "totalUsage": u_total, "costDetails": costs, "inputCost": c_in,
        "outputCost": c_out, "totalCost": c_total, "usagePricingTierId": None, "usagePricingTierName": None, "promptId": "",
        "promptName": prompt or "", "promptVersion": None, "latency": (ms(s.end) - ms(s.start)) / 1000,
        "timeToFirstToken": None if completion is None else (ms(completion) - ms(s.start)) / 1000, "tags": s.tags(),
        "release": s.either("langfuse.release", "langfuse.release") or "", "traceName": trace_name, "modelId": None, "inputPrice": None,
        "outputPrice": None, "totalPrice": None,
    }


# The v2 API's field groups (`OBSERVATION_FIELD_GROUPS_PUBLIC_API`) and the keys of `_row` each brings: `FIELD_SETS` of
# `event-query-builder.ts` as `convertEventsObservation` names them (`usage_details` also gives `inputUsage`…, `cost_details`
# `inputCost`…). `latency` and `timeToFirstToken` come with any start time (the converter computes them, `metrics` or not),
# `modelId` and the prices with every row (`enrichObservationsWithModelData`: null unless `model` is asked for).
FIELD_GROUPS = {
    "core": ("id", "traceId", "startTime", "endTime", "projectId", "parentObservationId", "type"),
    "basic": ("name", "level", "statusMessage", "version", "environment", "bookmarked", "public", "userId", "sessionId", "isRootObservation"),
    "time": ("completionStartTime", "createdAt", "updatedAt"),
    "io": ("input", "output"),
    "metadata": ("metadata",),
    "model": ("model", "internalModelId", "modelParameters"),
    "usage": ("usageDetails", "inputUsage", "outputUsage", "totalUsage", "costDetails", "inputCost", "outputCost", "totalCost",
              "usagePricingTierId", "usagePricingTierName"),
    "prompt": ("promptId", "promptName", "promptVersion"),
    "metrics": ("latency", "timeToFirstToken"),
    "trace_context": ("tags", "release", "traceName"),
}
_ALWAYS = ("latency", "timeToFirstToken", "modelId", "inputPrice", "outputPrice", "totalPrice")
EVERY_GROUP = ",".join(FIELD_GROUPS)


def _projected(row: dict[str, Any], groups: list[str]) -> dict[str, Any]:
    """`row` with the keys of the asked field groups only (`core` always: the base query selects it whatever is asked)."""
    keep = {k for g in ["core", *groups] for k in FIELD_GROUPS[g]} | set(_ALWAYS)
    out = {k: v for k, v in row.items() if k in keep}
    if "model" not in groups:
        out.update(modelId=None, inputPrice=None, outputPrice=None, totalPrice=None)
    return out


def observations_v2(docs: list[dict[str, Any]], fields: str | None = EVERY_GROUP, expand_metadata: str | None = None,
                    limit: int = 1000) -> list[dict[str, Any]]:
    """One `GET /api/public/v2/observations?traceId=…&fields=<fields>&expandMetadata=<expand_metadata>&limit=<limit>` body per
    trace (`start_time` DESC, span id DESC): its first page, through the installed SDK's models.

    `fields=None` is the request without `fields`: the server's default `core,basic` (`getObservationsV2FromEventsTableForPublicApi`;
    unknown names are dropped, `commaSeparatedEnumArray(…, {unknownValues: "filter"})`). Metadata comes whole from `events_full`
    when `io` is asked for too or `expandMetadata` names any key (the split query's io CTE reads the whole map), else from
    `events_core`, each value cut to 200 characters with no mark of it. A trace of more than `limit` observations: the page's
    `meta.cursor` is `encodeCursor` of its last row (the server reads `limit + 1` rows to know that more follow).
    """
    from langfuse.api.core.pydantic_utilities import parse_obj_as
    from langfuse.api.observations.types.observations_v2response import ObservationsV2Response

    groups = ["core", "basic"] if fields is None else [g for g in (f.strip() for f in fields.split(",")) if g in FIELD_GROUPS]
    keys = [k for k in (expand_metadata or "").split(",") if k.strip()]
    cut = None if "io" in groups or keys else 200
    spans = read_spans(docs)
    arrivals = _arrivals(spans)
    out = []
    for trace in dict.fromkeys(s.trace for s in spans):
        mine = sorted((s for s in spans if s.trace == trace), key=lambda s: (ms(s.start), s.id), reverse=True)
        rows = [_projected(_row(s, arrivals[s.doc], cut), groups) for s in mine]
        meta = {}
        if len(rows) > limit:
            rows, last = rows[:limit], rows[limit - 1]
            cursor = js({"lastStartTimeTo": last["startTime"], "lastTraceId": last["traceId"], "lastId": last["id"]})
            meta = {"cursor": base64.b64encode(cursor.encode()).decode()}
        # parsed by alias and dumped by alias, as the SDK's client reads the API's body
        response = parse_obj_as(ObservationsV2Response, {"data": rows, "meta": meta})
        out.append(response.model_dump(mode="json", by_alias=True))
    return out


def score_v1(trace_id: str, name: str, value: float | bool | str, data_type: str = "NUMERIC", source: str = "ANNOTATION", *,
             when: str = "2025-06-01T12:00:00.000Z", observation_id: str | None = None, author: str | None = None,
             comment: str | None = None, score_id: str | None = None) -> dict[str, Any]:
    """One score of `GET /api/public/traces/{id}`'s `scores` (`APIScoreSchemaV1`, `packages/shared/src/features/scores/
    interfaces/api/v1/schemas.ts`; the data kinds of `.../interfaces/shared.ts`): a `NUMERIC`'s `value` and no `stringValue`;
    a `BOOLEAN`'s `value` 1 or 0 and `stringValue` `"True"`/`"False"`; a `CATEGORICAL`'s category as `stringValue`, `value`
    0 (no score config maps it to a number). `source` is who made it: `ANNOTATION` (a person, in Langfuse's UI or an
    annotation queue), `API` (the SDK or the public API), `EVAL` (Langfuse's LLM-as-a-judge evaluators)."""
    if data_type == "BOOLEAN":
        number, text = (1.0 if value else 0.0), ("True" if value else "False")
    elif data_type == "CATEGORICAL":
        number, text = 0.0, str(value)
    else:
        number, text = float(value), None
    return {"id": score_id or f"score-{trace_id[:8]}-{name}-{when}", "timestamp": when, "projectId": PROJECT, "environment": "default",
            "name": name, "source": source, "authorUserId": author if source == "ANNOTATION" else None, "comment": comment,
            "metadata": {}, "configId": None, "createdAt": when, "updatedAt": when, "queueId": None, "traceId": trace_id,
            "observationId": observation_id, "value": number, "stringValue": text, "dataType": data_type}


def write_forms(out: Any, name: str, docs: list[dict[str, Any]]) -> None:
    """Write a Langfuse recording's three forms in folder `out` (a `Path`): `<name>.otlp.jsonl` (`docs`, the OTLP the SDK
    sent), `<name>.json` (`trace_with_full_details`) and `<name>.v2.json` (`observations_v2`)."""
    from common import write_jsonl

    write_jsonl(out / f"{name}.otlp.jsonl", docs)
    write_jsonl(out / f"{name}.json", trace_with_full_details(docs))
    write_jsonl(out / f"{name}.v2.json", observations_v2(docs))
