"""Format `langfuse`: traces as Langfuse's public API returns them (`GET /api/public/traces/{id}`).

Framing: JSONL, one trace with its observations per line (the API's
`TraceWithFullDetails`: `id`, `name`, `input`, `output`, `sessionId`,
`userId`, `tags`, `metadata`, `latency`, `totalCost`, `observations: [...]`).
Field names are those of the API (camelCase), as the `langfuse` SDK's
`langfuse.api` models read them. A line may instead hold one page of the v2
observations API for one trace (`GET /api/public/v2/observations?traceId=…`:
`{"data": [...], "meta": {...}}`); the trace's fields then come from its root
observation. What a trace was fetched without (a v2 page's field groups, refused
without `io` or `basic`) is told from what is null: see `langfuse_fields`, which also refuses a line of the
traces list (`GET /api/public/traces`: observations as ids) and a page of the older numbered
`GET /api/public/observations` that holds only part of the run.

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
Langfuse keeps times in milliseconds and lists observations in no running
order; observations that started in the same millisecond are put in the order
their times allow (`langfuse_ties`).

The trace's `input` / `output` are the case's (a message list gives its
first user text / the assistant text); without them the root `AGENT`'s, else
the first user message and the last model text. A trace with no
observations (`observations: []`) is a case with no steps and the trace's
input/output; with neither, it is an `invalid_input` naming `observations`. An input that is not text
(a mapping of arguments) gives way to the first user message, when there is one. `sessionId`, `userId`,
`name`, `release`, `environment` and `metadata` go to `metadata.langfuse`,
`tags` to the case's tags; the trace's `scores` (a person's, `ANNOTATION`, and the
others apart) to `metadata.labels` / `metadata.other_labels` (`langfuse_scores`, `store_labels`). Usage: `totalCost` (else the observations'
`costDetails.total`) is `cost_usd`, `latency` (seconds) the latency; an
observation with `costDetails: {}` has no cost, whatever its
`calculatedTotalCost` (which the server then gives as 0). When
some model requests (`GENERATION`s not nested in another) carry a cost and
others none (a model missing from Langfuse's price table, a cost the
application reported for some requests only), the cost is unknown: `cost_usd`
is left out, not the others' sum (which is also what `totalCost` holds), and
`metadata.requests_without_cost` counts the requests that had none, as
`metadata.requests_without_usage` does for tokens. A request's cost is its own
or that of a generation nested in it; when no request has one, the cost is
unknown too, every request counted, unless `totalCost` is above 0: the 0
Langfuse answers for a trace it priced nothing of is no cost of $0
(`langfuse_usage.trace_cost`).

Conversations (`group_by`, option): Langfuse's `sessionId` groups the traces of
one multi-turn conversation, and, for a trace without one, a LangGraph
`thread_id` in its `metadata` (`_thread`). Under `group_by: conversation` (the default) the
traces of one key are one case, its turns in the order they started
(`timestamp`, else their first observation's start), its id the key,
`metadata.langfuse.traces` their ids, their tags joined, cost and latency summed
(a trace without any cost beside others with one leaves the cost unknown, its
requests counted in `requests_without_cost`); a trace without a key is a
case of its own, as every trace is under `group_by: trace`. See
`conversation_groups` for how the traces are held and what is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import JsonLine, build_case, decode_line, fail, maybe_json, read_lines
from tracejudge.stages.extract.conversation_groups import (GROUP_BY, Conversation, Refused, Seen, conversation_parts, group_lines, join_spans,
                                                           key_of, merged, total)
from tracejudge.stages.extract.errors import AdapterError
from tracejudge.stages.extract.langfuse_fields import listed_by_id, missing_groups, no_list, warn_missing
from tracejudge.stages.extract.langfuse_scores import trace_labels
from tracejudge.stages.extract.langfuse_ties import untied
from tracejudge.stages.extract.langfuse_usage import number, observation_cost, page_cost, tokens, trace_cost
from tracejudge.stages.extract.otel.conventions.langfuse import generation_outputs
from tracejudge.stages.extract.otel.native import in_order, nanos, native_case, native_span
from tracejudge.stages.extract.otel.once import once
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.store_labels import merge_label_metadata
from tracejudge.stages.load import RawRecord

__all__ = ["Options", "adapt", "read"]


class Options(BaseModel):
    """`dataset.options` of `langfuse`.

    `group_by`: `conversation` (default: the traces of one `sessionId`, else LangGraph `thread_id`, are one case) or `trace`
    (one case per trace).
    """

    model_config = ConfigDict(extra="forbid")

    group_by: GROUP_BY = "conversation"

_META_KEYS = ("name", "sessionId", "userId", "release", "version", "environment", "metadata")
_META_ATTRS = ("tool_call_id", "langgraph_node")  # observation metadata the `langfuse` convention reads


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
              "latency": root.get("latency"), "totalCost": page_cost(obs)}
    # (the v2 API gives `""` for a text its events table has none of: no session, user, release)
    return {k: v for k, v in record.items() if v is not None and v != ""}


def _attrs(obs: dict[str, Any], kind: str) -> dict[str, Any]:
    """An observation as the `langfuse.observation.*` attributes of Langfuse's OTel SDK."""
    attrs: dict[str, Any] = {"langfuse.observation.type": kind.lower(), "langfuse.observation.level": obs.get("level")}
    for key, name in (("input", "input"), ("output", "output"), ("statusMessage", "status_message")):
        value = obs.get(key)
        if value is not None:
            # The SDK sends input and output as JSON text, which is what the conventions read: a LangGraph chain's
            # output (the graph's state, a ToolNode's messages) is only looked into as such (`payloads.failed_tool_messages`).
            attrs[f"langfuse.observation.{name}"] = json.dumps(value) if key != "statusMessage" and isinstance(value, (dict, list)) else value
    usage = tokens(obs) if kind == "GENERATION" else None
    if usage is not None:
        attrs["langfuse.observation.usage_details"] = usage
    meta = obs.get("metadata") if isinstance(obs.get("metadata"), dict) else {}
    # Langfuse keeps the SDK's `langfuse.observation.metadata.<key>` attributes as `metadata.<key>`; the span's attributes
    # (`metadata.attributes`) are kept whole for spans of other instrumentations. `langgraph_node`: Langfuse's LangChain
    # handler types LangGraph's node "agent" AGENT, which without it would read as an agent run of its own.
    spanned = meta.get("attributes") if isinstance(meta.get("attributes"), dict) else {}
    for key in _META_ATTRS:
        value = meta[key] if meta.get(key) is not None else spanned.get(f"langfuse.observation.metadata.{key}")
        if value is not None:
            attrs[f"langfuse.observation.metadata.{key}"] = value
    return attrs


def read(dataset: Any) -> Iterator[RawRecord]:
    """One record per line (`group_by: trace`), or per conversation: the traces of one key as one (`conversation_groups`).

    A line that does not decode is yielded as it is, for `adapt` to name its problem; `dataset.limit` counts records.
    """
    if Options.model_validate(dataset.options or {}).group_by == "trace":
        yield from read_lines(dataset)
        return
    # (every line is looked at: a trace without `sessionId` may still name its LangGraph thread, `_thread`)
    yield from group_lines(dataset, "sessionId", b'"', _seen)


def _seen(record: dict[str, Any]) -> Seen | None:
    """The trace id, key (`sessionId`, else `_thread`), start and readability of a decoded line (a v2 page's from its root
    observation)."""
    try:
        _checked(record, "record")
        readable = True
    except AdapterError:
        readable = False  # a case of its own, whose error `adapt` gives
    if "observations" not in record and isinstance(record.get("data"), list):
        observations = [o for o in record["data"] if isinstance(o, dict)]
        root = next((o for o in observations if o.get("isRootObservation")), next((o for o in observations if not o.get("parentObservationId")), {}))
        tid, key, when = next((o["traceId"] for o in observations if o.get("traceId") not in (None, "")), None), root.get("sessionId"), None
        thread = _thread(root.get("metadata"))
    else:
        observations = [o for o in record.get("observations") or [] if isinstance(o, dict)] if isinstance(record.get("observations"), list) else []
        tid, key, when = record.get("id"), record.get("sessionId"), record.get("timestamp")
        root = next((o for o in observations if not o.get("parentObservationId")), {})
        meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        thread = _thread(meta if "thread_id" in meta else root.get("metadata"))
    if key_of(key, "sessionId") == (None, None) and thread is not None:
        key = thread
    if not isinstance(tid, (str, int)) or isinstance(tid, bool) or tid == "":
        return None  # no id to hold it by: read alone, as it would be
    starts = [t for t in (nanos(o.get("startTime")) for o in observations) if t is not None]
    return Seen(str(tid), key, nanos(when) if when is not None else min(starts, default=None), readable)


def _thread(metadata: Any) -> str | None:
    """The LangGraph `thread_id` in a trace's (or its root observation's) `metadata`, as text; None when it names none.

    Langfuse's LangChain `CallbackHandler` sets no `sessionId` from a LangGraph run's `thread_id`: it keeps it as trace and
    observation metadata. The invokes of one thread are one conversation (format `otel` joins them, and MLflow keys its
    session by it), so a trace without `sessionId` joins the others of its thread. A value that is no key (a mapping,
    a boolean) names no thread: the trace is read alone, not refused.
    """
    value = metadata.get("thread_id") if isinstance(metadata, dict) else None
    key, problem = key_of(value, "metadata.thread_id")
    return key if problem is None else None


def _checked(record: dict[str, Any], default_id: str) -> tuple[dict[str, Any], str, list[Any], list[str]]:
    """`(trace record, case id, observations, field groups it was fetched without)` of a decoded line, or the `AdapterError`
    naming what makes it no trace (`langfuse_fields.missing_groups`)."""
    line = record
    listed_by_id(record, str(record.get("id") or default_id))  # (a line of the traces list: its observations are ids)
    if "observations" not in record and isinstance(record.get("data"), list):
        record = _from_observations(record["data"], default_id)
    cid = str(record.get("id") or default_id)
    observations = record.get("observations")
    if not isinstance(observations, list):
        no_list(record, cid)
    missing = missing_groups(line, observations, cid)  # (first: a page without `basic` has no tool names either)
    for i, obs in enumerate(observations):
        if not isinstance(obs, dict) or not isinstance(obs.get("type"), str) or obs.get("id") is None:
            fail("expected an observation with `id` and `type`", field=f"observations[{i}].type", case_id=cid)
        if obs["type"] == "TOOL" and not obs.get("name"):
            fail("a tool observation has no name", field=f"observations[{i}].name", case_id=cid)
    if not observations and record.get("input") is None and record.get("output") is None:
        fail("observations: the trace recorded no step: no observation and no input or output", field="observations", case_id=cid)
    return record, cid, observations, missing


def adapt(payload: Any, options: Any = None) -> Case:
    """Turn one API trace (with `observations`), or a conversation's traces (`read`), into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field (`observations[2].type`) for an
    observation without id or type, and a refused record's error (`conversation_groups.Refused`).
    """
    if isinstance(payload, Refused):
        payload.fail()
    if not isinstance(payload, Conversation):
        return _case([_part(payload, payload.default_id if isinstance(payload, JsonLine) else None)])
    places = iter(payload.places)  # (`conversation_parts` builds the traces in the order of their places)
    return _case(conversation_parts(payload, lambda data: _part(data, "%s:%d" % next(places))), payload)


@dataclass
class _Part:
    """What one trace gives its case: spans, `metadata.langfuse`, tags, cost (`None`: none recorded), how many model
    requests lack a cost while another has one (`unpriced`) and how many there are, latency."""

    cid: str
    spans: list[Span]
    info: dict[str, Any]
    tags: list[str]
    cost: float | None
    unpriced: int
    requests: int
    latency: float | None
    labels: dict[str, Any]


def _part(payload: Any, place: str | None = None) -> _Part:
    """One API trace (a `JsonLine`, its bytes, or a mapping; read at `place`) as a `_Part`; `AdapterError` naming the field it cannot read."""
    record, default_id = decode_line(payload)
    meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
    # (a page of the v2 API, of the older numbered `GET /api/public/observations` (`meta.page`), or a trace)
    paged: bool | str = ("v1" if any(k in meta for k in ("page", "totalPages", "totalItems")) else True) if "observations" not in record else False
    record, cid, observations, missing = _checked(record, default_id)
    # An observation fetched twice (a page read again, pages concatenated) is read once; see `once`.
    kept, differed = once(observations, key=lambda o: (str(o.get("traceId")), str(o["id"])), ended=lambda o: o.get("endTime") is not None)
    observations = [observations[i] for i in kept]
    warn_missing(place, cid, missing, observations, paged)
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
        costs.append(observation_cost(obs))
    # Times are in milliseconds and the API's list order is no running order: ties are put in the order the times allow.
    ends = [nanos(o.get("endTime")) for o in observations]
    for span, start in zip(spans, untied(observations, in_order([nanos(o.get("startTime")) for o in observations]), ends)):
        span.start = start
    roots = [s for s in spans if s.parent_id not in {x.span_id for x in spans}]
    trace_io = {f"langfuse.trace.{k}": record[k] for k in ("input", "output") if record.get(k) is not None}
    if trace_io and len(roots) == 1:
        roots[0].attrs.update(trace_io)  # where Langfuse's OTel SDK keeps them: on the trace's root span
    elif trace_io:
        if not spans:
            # With no observation the trace itself is the run: a span the assembler anchors a turn on, so its input/output stay the case's.
            trace_io["langfuse.observation.type"] = "span"
        spans.append(native_span(cid, f"trace:{cid}", None, record.get("name"), min(s.start for s in spans) - 1 if spans else 0, 0, trace_io))
        for span in roots:
            span.parent_id = f"trace:{cid}"
    cost, unpriced, requests = trace_cost(number(record.get("totalCost")), observations, costs)  # (none priced: unknown, not $0)
    info = {k: record[k] for k in _META_KEYS if record.get(k) is not None}
    if errors:
        info["errors"] = errors
    if differed:
        info["duplicates"] = [k[1] for k in differed]
    if missing:
        info["missing_fields"] = missing
    tags = [t for t in record.get("tags") or [] if isinstance(t, str)] if isinstance(record.get("tags"), list) else []
    return _Part(cid, spans, info, tags, cost, unpriced, requests,
                 number(record.get("latency")), trace_labels(record.get("scores"), str(record["id"]) if record.get("id") not in (None, "") else None,
                                                        {str(o["id"]) for o in observations}))


def _case(parts: list[_Part], conversation: Conversation | None = None) -> Case:
    """The case of one trace, or of a conversation's traces in turn order (`conversation_groups`: costs and latency summed)."""
    usage: dict[str, Any] = {}
    # A trace without any cost beside others with one: its requests are the conversation's unpriced ones (a trace whose
    # requests had none counts them itself: `trace_cost`).
    priced = any(p.cost is not None for p in parts)
    unpriced = sum(p.unpriced for p in parts) + (sum(p.requests for p in parts if p.cost is None and not p.unpriced) if priced else 0)
    if priced and not unpriced:
        usage["cost_usd"] = sum(p.cost for p in parts if p.cost is not None)
    latency = total([p.latency for p in parts])
    if latency is not None:
        usage["latency_s"] = latency
    if conversation is None:
        [part] = parts
        built = native_case(part.cid, part.spans, "langfuse", part.info, tags=part.tags, usage=usage)
    else:
        info = {**merged([p.info for p in parts]), "traces": [p.cid for p in parts]}
        if "missing_fields" in info:
            info["missing_fields"] = list(dict.fromkeys(info["missing_fields"]))
        if conversation.left_out:
            info["left_out"] = conversation.left_out
        tags = list(dict.fromkeys(t for p in parts for t in p.tags))
        built = native_case(conversation.case_id, join_spans([p.spans for p in parts]), "langfuse", info, tags=tags, usage=usage,
                            traces=[p.cid for p in parts])
    if unpriced:
        built["metadata"]["requests_without_cost"] = unpriced
    built["metadata"].update(merge_label_metadata([p.labels for p in parts]))  # (`store_labels`: a person's, and the others apart)
    return build_case(built)


register_format(Format("langfuse", read=read, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options or {}), options=Options))
