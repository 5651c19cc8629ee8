"""Format `langfuse`: traces as Langfuse's public API returns them (`GET /api/public/traces/{id}`).

Framing: JSONL, one trace with its observations per line (the API's
`TraceWithFullDetails`: `id`, `name`, `input`, `output`, `sessionId`,
`userId`, `tags`, `metadata`, `latency`, `totalCost`, `observations: [...]`).
Field names are those of the API (camelCase), as the `langfuse` SDK's
`langfuse.api` models read them. A line may instead hold one page of the v2
observations API for one trace (`GET /api/public/v2/observations?traceId=…`:
`{"data": [...], "meta": {...}}`); the trace's fields then come from its root
observation.

Each observation becomes a span of the `otel` model carrying the
`langfuse.observation.*` attributes Langfuse's OTel SDK writes (`type`,
`input`, `output`, `level`, `status_message`, `usage_details`,
`metadata.tool_call_id`; the trace's `input`/`output` as `langfuse.trace.*`
on the root), read by the `langfuse` convention and built by the `otel`
assembler (see `tracejudge.stages.extract.otel.native`). What counts, by
observation `type` and `parentObservationId`:

- `GENERATION` is a model request, one step: its `input` (a message list
  or `{"messages": [...]}`) gives the user's turns, its `output` (an
  assistant message, Chat Completions or Responses shape) the text and
  the tool calls asked for; tokens from `usageDetails` (`input`,
  `output`), else `usage`; a generation nested in another is the same
  request;
- `TOOL` is a tool call, and so is a `SPAN` named like a tool the model
  asked for: it pairs with the model's tool-call part by id
  (`metadata.tool_call_id` when recorded), else by name and arguments,
  else name in order; the
  arguments come from the model's part when there is one (else the
  observation's `input`), the result from its `output` (else the tool
  message the model got), and `level: ERROR`
  makes it a failed call with `statusMessage` as the error;
- `RETRIEVER` outputs (documents) are `trace.retrieved`;
- `AGENT`, `CHAIN`, `EVENT`, other `SPAN`s are structure; one at level
  `ERROR` that is not a call is listed in `metadata.langfuse.errors`.

An observation listed twice (same trace and observation id: a page fetched
again, pages concatenated) is read once; when the copies differ, the last
one that ended is read and its id listed in `metadata.langfuse.duplicates`.

The trace's `input` / `output` are the case's (a message list gives its
first user text / the assistant text); without them the root `AGENT`'s, else
the first user message and the last model text. A trace with no
observations (`observations: []`) is a case with no steps and the trace's
input/output; with neither, it is an `invalid_input` naming `observations`. An input that is not text
(a mapping of arguments) gives way to the first user message, when there is one. `sessionId`, `userId`,
`name`, `release`, `environment` and `metadata` go to `metadata.langfuse`,
`tags` to the case's tags. Usage: `totalCost` (else the observations'
`costDetails.total`) is `cost_usd`, `latency` (seconds) the latency. When
some model requests (`GENERATION`s not nested in another) carry a cost and
others none (a model missing from Langfuse's price table, a cost the
application reported for some requests only), the cost is unknown: `cost_usd`
is left out, not the others' sum (which is also what `totalCost` holds), and
`metadata.requests_without_cost` counts the requests that had none, as
`metadata.requests_without_usage` does for tokens. A request's cost is its own
or that of a generation nested in it; when no request has one, `totalCost`
stands as before.
"""

from __future__ import annotations

from typing import Any

from tracejudge.core.records import Case
from tracejudge.core.registry import Format, NoOptions, register_format
from tracejudge.stages.extract.common import build_case, decode_line, fail, maybe_json, read_lines
from tracejudge.stages.extract.otel.conventions.langfuse import generation_outputs
from tracejudge.stages.extract.otel.native import in_order, nanos, native_case, native_span
from tracejudge.stages.extract.otel.once import once
from tracejudge.stages.extract.otel.view import as_int

__all__ = ["adapt"]

_META_KEYS = ("name", "sessionId", "userId", "release", "version", "environment", "metadata")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _tokens(obs: dict[str, Any]) -> dict[str, Any] | None:
    """Input and output tokens of a generation: `usageDetails`, else the older `usage`, else `promptTokens`/`completionTokens`."""
    for key in ("usageDetails", "usage"):
        usage = obs.get(key)
        if isinstance(usage, dict):
            ins = next((as_int(usage[k]) for k in ("input", "prompt_tokens", "input_tokens") if as_int(usage.get(k)) is not None), None)
            outs = next((as_int(usage[k]) for k in ("output", "completion_tokens", "output_tokens") if as_int(usage.get(k)) is not None), None)
            if ins is not None or outs is not None:
                return {"input": ins, "output": outs}
    ins, outs = as_int(obs.get("promptTokens")), as_int(obs.get("completionTokens"))
    return {"input": ins, "output": outs} if ins is not None or outs is not None else None


def _error(obs: dict[str, Any]) -> str | None:
    if obs.get("level") != "ERROR":
        return None
    return str(obs.get("statusMessage") or "error")


def _from_observations(data: list[Any], default_id: str) -> dict[str, Any]:
    """A trace record from one page of the v2 observations API (`{"data": [...], "meta": ...}`) of one trace.

    The trace-level fields come from the root observation (`isRootObservation`,
    else the one without a parent). Raises `AdapterError` when the page mixes traces.
    """
    obs = [o for o in data if isinstance(o, dict)]
    traces = {str(o["traceId"]) for o in obs if isinstance(o.get("traceId"), (str, int))}
    if len(traces) > 1:
        fail(f"a page of observations holds {len(traces)} traces; fetch one trace per line (traceId=...)", field="data", case_id=default_id)
    root = next((o for o in obs if o.get("isRootObservation")), next((o for o in obs if not o.get("parentObservationId")), {}))
    record = {"id": next(iter(traces), None) or default_id, "name": root.get("traceName") or root.get("name"), "observations": data,
              "sessionId": root.get("sessionId"), "userId": root.get("userId"), "environment": root.get("environment"), "tags": root.get("tags"),
              "latency": root.get("latency")}
    return {k: v for k, v in record.items() if v is not None}


def _attrs(obs: dict[str, Any], kind: str) -> dict[str, Any]:
    """An observation as the `langfuse.observation.*` attributes of Langfuse's OTel SDK."""
    attrs: dict[str, Any] = {"langfuse.observation.type": kind.lower(), "langfuse.observation.level": obs.get("level")}
    for key, name in (("input", "input"), ("output", "output"), ("statusMessage", "status_message")):
        if obs.get(key) is not None:
            attrs[f"langfuse.observation.{name}"] = obs[key]
    usage = _tokens(obs) if kind == "GENERATION" else None
    if usage is not None:
        attrs["langfuse.observation.usage_details"] = usage
    meta = obs.get("metadata") if isinstance(obs.get("metadata"), dict) else {}
    if meta.get("tool_call_id") is not None:
        attrs["langfuse.observation.metadata.tool_call_id"] = meta["tool_call_id"]
    return attrs


def adapt(payload: Any, options: Any = None) -> Case:
    """Turn one API trace (with `observations`) into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field (`observations[2].type`) for an
    observation without id or type.
    """
    record, default_id = decode_line(payload)
    if "observations" not in record and isinstance(record.get("data"), list):
        record = _from_observations(record["data"], default_id)
    cid = str(record.get("id") or default_id)
    observations = record.get("observations")
    if not isinstance(observations, list):
        fail("observations: required list of observations is missing (fetch the trace with GET /api/public/traces/{id})",
             field="observations", case_id=cid)
    for i, obs in enumerate(observations):
        if not isinstance(obs, dict) or not isinstance(obs.get("type"), str) or obs.get("id") is None:
            fail("expected an observation with `id` and `type`", field=f"observations[{i}].type", case_id=cid)
    # An observation fetched twice (a page read again, pages concatenated) is read once; see `once`.
    kept, differed = once(observations, key=lambda o: (str(o.get("traceId")), str(o["id"])), ended=lambda o: o.get("endTime") is not None)
    observations = [observations[i] for i in kept]
    asked = {p.get("name") for o in observations if o["type"] == "GENERATION"
             for m in generation_outputs(maybe_json(o.get("output"))) or [] for p in m.get("parts") or [] if p.get("type") == "tool_call"}
    spans, errors, costs = [], [], []
    for obs in observations:
        kind, name = obs["type"], obs.get("name")
        if kind == "SPAN" and name in asked:
            kind = "TOOL"  # a `@observe` function the model called: its call
        spans.append(native_span(cid, obs["id"], obs.get("parentObservationId"), name, 0, nanos(obs.get("endTime")) or 0, _attrs(obs, kind),
                                 error=_error(obs) is not None, message=_error(obs)))
        if kind == "TOOL" and not name:
            fail("a tool observation has no name", field=f"observations[{len(spans) - 1}].name", case_id=cid)
        if kind != "TOOL" and _error(obs):
            errors.append({"observation": str(obs["id"]), "type": obs["type"], "name": name, "error": _error(obs)})
        cost = obs.get("costDetails") if isinstance(obs.get("costDetails"), dict) else {}
        costs.append(next((c for c in (_number(cost.get("total")), _number(obs.get("totalCost")), _number(obs.get("calculatedTotalCost"))) if c is not None), None))
    for span, start in zip(spans, in_order([nanos(o.get("startTime")) for o in observations])):
        span.start = start
    roots = [s for s in spans if s.parent_id not in {x.span_id for x in spans}]
    trace_io = {f"langfuse.trace.{k}": record[k] for k in ("input", "output") if record.get(k) is not None}
    if not spans and not trace_io:
        fail("observations: the trace recorded no step: no observation and no input or output", field="observations", case_id=cid)
    if trace_io and len(roots) == 1:
        roots[0].attrs.update(trace_io)  # where Langfuse's OTel SDK keeps them: on the trace's root span
    elif trace_io:
        if not spans:
            # With no observation the trace itself is the run: a span the assembler anchors a turn on, so its input/output stay the case's.
            trace_io["langfuse.observation.type"] = "span"
        spans.append(native_span(cid, f"trace:{cid}", None, record.get("name"), min(s.start for s in spans) - 1 if spans else 0, 0, trace_io))
        for span in roots:
            span.parent_id = f"trace:{cid}"
    usage: dict[str, Any] = {}
    total = _number(record.get("totalCost"))
    known = [c for c in costs if c is not None]
    unpriced = _requests_without_cost(observations, costs)
    if (total is not None or known) and not unpriced:
        usage["cost_usd"] = total if total is not None else sum(known)
    if _number(record.get("latency")) is not None:
        usage["latency_s"] = _number(record["latency"])
    info = {k: record[k] for k in _META_KEYS if record.get(k) is not None}
    if errors:
        info["errors"] = errors
    if differed:
        info["duplicates"] = [k[1] for k in differed]
    tags = [t for t in record.get("tags") or [] if isinstance(t, str)] if isinstance(record.get("tags"), list) else []
    built = native_case(cid, spans, "langfuse", info, tags=tags, usage=usage)
    if unpriced:
        built["metadata"]["requests_without_cost"] = unpriced
    return build_case(built)


def _requests_without_cost(observations: list[dict[str, Any]], costs: list[float | None]) -> int:
    """How many model requests recorded no cost while another did (0 when all or none did; module docstring)."""
    gens = {str(o["id"]): c for o, c in zip(observations, costs) if o["type"] == "GENERATION"}
    parents = {str(o["id"]): str(o.get("parentObservationId")) for o in observations if o["type"] == "GENERATION"}
    priced: dict[str, bool] = {}
    for gid, cost in gens.items():
        top, hops = gid, 0
        while parents.get(top) in gens and hops < len(gens):  # a generation nested in another is the same request
            top, hops = parents[top], hops + 1
        priced[top] = priced.get(top, False) or cost is not None
    lacking = sum(1 for p in priced.values() if not p)
    return lacking if lacking < len(priced) else 0


register_format(Format("langfuse", read=read_lines, adapt=adapt, options=NoOptions))
