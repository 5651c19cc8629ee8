"""Format `openai-agents`: the OpenAI Agents SDK's own tracing export (`Trace.export()`, `Span.export()`).

Framing: JSONL in either of the shapes the SDK's tracing produces, mixed
freely in one file:

- one trace per line: `{"trace": Trace.export(), "spans": [Span.export(), ...]}`;
- a stream of exported items, one per line (`{"object": "trace", ...}` and
  `{"object": "trace.span", ...}`, as a `TracingProcessor` writing
  `item.export()` produces) or in the `{"data": [items...]}` batches of the
  SDK's `BackendSpanExporter`. Items are grouped by trace id (a trace's `id`,
  a span's `trace_id`); one trace is one case, reported at the line of its
  first item. The SDK sends a trace's item when the trace *starts* and each
  span when it ends, so nothing in the stream says a trace is complete:
  memory holds the traces still open, at most `max_open_traces` (option,
  default 1,000); past that the one that has gone longest without a new
  item is closed and becomes its case, and an item arriving later for a
  closed trace is one `invalid_input` naming its line (raise the option).
  The ids of the last 100,000 closed traces are remembered to tell that,
  so memory stays flat however long the file.

Each exported span becomes a span of the `otel` model (its `span_data` and
`error` as attributes) read by the `openai-agents` convention and built by
the `otel` assembler (see `tracejudge.stages.extract.otel.native`). What
counts (`span_data.type`):

- `function` spans are tool calls: `input` (the JSON the model sent) is the
  arguments, `output` the result, the span's `error` (`{message, data}`)
  the call's error, as `"<message>: <data.error>"`;
- `generation` spans (Chat Completions models) are model requests: `input`
  messages give the user's turns (the first is the case `input`), `output`
  the assistant text and the tool calls asked for (chat messages, or for a
  streamed run the Responses API response it was streamed as; their ids and order;
  function spans pair with them by name in order, as the export has no
  call id); `usage.input_tokens` / `output_tokens` are summed;
- `response` spans (Responses API models) are model requests with
  `response_id` and, when recorded, `usage`: the export keeps neither the
  input nor the output text, so such traces have no `input`/`output`
  unless a `generation` span records them;
- `agent` spans name the agents (`name`, `tools`, `handoffs`,
  `output_type`); a handoff the model asked for (`transfer_to_<agent>`)
  is a call like the others, its result the SDK's reply to the model;
  `handoff`, `guardrail` and `custom` spans, the trace's
  `workflow_name`, `group_id` and `metadata`, and errors on spans that are
  not calls go to `metadata.openai_agents`. The SDK's `task` custom span
  gives the usage when no model span carries any.

A span exported twice (same trace and span id: the SDK's exporter retries
a batch) is read once; when the copies differ, the last one that ended is
read and its id listed in `metadata.openai_agents.duplicates`. A trace line
sent twice (same trace id, identical content) is likewise read once; another
trace under an id already read is kept, and reported as a duplicate id.

Latency is the trace's first start to its last end. The case id is the trace
id.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import build_case, fail
from tracejudge.stages.extract.otel.conventions.openai_agents import error_text
from tracejudge.stages.extract.otel.native import in_order, nanos, native_case, native_span
from tracejudge.stages.extract.otel.once import Repeats, once
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import as_int
from tracejudge.stages.load import RawRecord, loads, read_jsonl

__all__ = ["Options", "adapt", "read"]


class Options(BaseModel):
    """`dataset.options` of `openai-agents`.

    `max_open_traces`: how many traces of an item stream may be open at once
    before the least recently extended one is closed (memory is bounded by it).
    """

    model_config = ConfigDict(extra="forbid")

    max_open_traces: int = Field(default=1000, ge=1)


_CLOSED_KEPT = 100_000  # ids of closed traces remembered to report a late item (a few MB at most)


class _Open:
    __slots__ = ("file", "line", "trace", "spans")

    def __init__(self, file: str, line: int) -> None:
        self.file, self.line = file, line
        self.trace: dict[str, Any] | None = None
        self.spans: list[Any] = []


def read(dataset: Any) -> Iterator[RawRecord]:
    """Stream the export at `dataset.path`, one `RawRecord` (payload `{"trace", "spans"}`) per trace.

    A line that is not JSON, or an item that is neither a trace nor a span,
    is a record with `error` set naming its line (and batch index);
    `dataset.limit` counts traces. A trace line repeating one read before
    (same trace id and content: an exporter's retry) is skipped (`once.Repeats`).
    """
    opts = Options.model_validate(dataset.options or {})
    open_: OrderedDict[str, _Open] = OrderedDict()
    closed: OrderedDict[str, None] = OrderedDict()  # the most recently closed ids, at most _CLOSED_KEPT
    whole = Repeats(_CLOSED_KEPT)  # the trace lines read, to skip one sent again
    count = 0

    def emit(group: _Open) -> RawRecord:
        return RawRecord(group.file, group.line, {"trace": group.trace, "spans": group.spans})

    for raw in read_jsonl(dataset.path):
        if dataset.limit is not None and count >= dataset.limit:
            return
        if raw.error is not None:
            yield raw
            continue
        try:
            doc = loads(raw.payload)
        except ValueError as exc:
            yield RawRecord(raw.file, raw.line, error=str(exc))
            continue
        if isinstance(doc, dict) and "spans" in doc:
            if whole.again(_trace_id(doc), doc):
                continue
            count += 1
            yield RawRecord(raw.file, raw.line, doc)
            continue
        batch = isinstance(doc, dict) and isinstance(doc.get("data"), list)
        for j, item in enumerate(doc["data"] if batch else [doc]):
            where = f" (data[{j}])" if batch else ""
            obj = item.get("object") if isinstance(item, dict) else None
            tid = (item.get("id") if obj == "trace" else item.get("trace_id")) if isinstance(item, dict) else None
            if obj not in ("trace", "trace.span") or not isinstance(tid, str) or not tid:
                why = "an item needs `object` trace or trace.span and its trace id" if obj in ("trace", "trace.span") else (
                    "expected a trace (`{trace, spans}`), an exported item (`object`: trace | trace.span) or a `{data: [...]}` batch")
                yield RawRecord(raw.file, raw.line, error=f"{why}{where}")
                continue
            if tid in closed:
                yield RawRecord(raw.file, raw.line, error=f"item of trace {tid}{where} arrived after that trace was closed: "
                                f"more than max_open_traces={opts.max_open_traces} traces were open in between; raise the option")
                continue
            group = open_.get(tid)
            if group is None:
                group = open_[tid] = _Open(raw.file, raw.line)
            open_.move_to_end(tid)
            if obj == "trace":
                group.trace = item
            else:
                group.spans.append(item)
            if len(open_) > opts.max_open_traces:
                old, oldest = open_.popitem(last=False)
                closed[old] = None
                if len(closed) > _CLOSED_KEPT:
                    closed.popitem(last=False)
                count += 1
                yield emit(oldest)
    for group in open_.values():
        if dataset.limit is not None and count >= dataset.limit:
            return
        count += 1
        yield emit(group)


def _spans(cid: str, spans: list[Any], meta: dict[str, list[Any]]) -> tuple[list[Span], Any, list[int]]:
    """The exported spans in the `otel` model, with the SDK `task` span's usage and every start/end time (ns).

    A span exported twice (the exporter retries a batch) is read once; see `once`.
    """
    out, starts, times, task_usage = [], [], [], None
    kept, differed = once(spans, key=_span_key, ended=lambda s: bool(s.get("ended_at")))
    meta["duplicates"].extend(str(k[1]) for k in differed)
    for i in kept:
        span = spans[i]
        data = span.get("span_data") if isinstance(span, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            fail("expected an exported span with `span_data.type`", field=f"spans[{i}].span_data.type", case_id=cid)
        kind, name = data["type"], data.get("name")
        if kind == "function" and not (isinstance(name, str) and name):
            fail("function span has no name", field=f"spans[{i}].span_data.name", case_id=cid)
        error = error_text(span.get("error"))
        start, end = nanos(span.get("started_at")), nanos(span.get("ended_at"))
        starts.append(start)
        times += [t for t in (start, end) if t is not None]
        attrs = {"openai_agents.span_data": data, "openai_agents.error": span.get("error")}
        out.append(native_span(cid, span.get("id") or f"#{i}", span.get("parent_id"), name or kind, 0, end or 0, attrs,
                               error=error is not None, message=error))
        if kind == "agent":
            meta["agents"].append({k: data.get(k) for k in ("name", "tools", "handoffs", "output_type")})
        elif kind == "handoff":
            meta["handoffs"].append({"from_agent": data.get("from_agent"), "to_agent": data.get("to_agent")})
        elif kind == "guardrail":
            meta["guardrails"].append({"name": name, "triggered": data.get("triggered")})
        elif kind == "custom" and name not in ("task", "turn"):
            meta["custom"].append({"name": name, "data": data.get("data")})
        if kind == "custom" and isinstance(data.get("data"), dict) and data["data"].get("sdk_span_type") == "task":
            task_usage = data["data"].get("usage")
        if error and kind != "function":
            meta["errors"].append({"span": kind, "name": name, "error": error})
    for span, start in zip(out, in_order(starts)):
        span.start = start
    return out, task_usage, times


def _span_key(span: Any) -> tuple[Any, str] | None:
    """A span's identity: its trace id and span id (none for a span without an id: never a copy)."""
    sid = span.get("id") if isinstance(span, dict) else None
    return (str(span.get("trace_id")), sid) if isinstance(sid, str) and sid else None


def _trace_id(payload: dict[str, Any]) -> str | None:
    """The id of a trace line (`{"trace", "spans"}`): the trace's own, else its first span's trace id, else the line's `id`."""
    trace = payload.get("trace") if isinstance(payload.get("trace"), dict) else {}
    spans = payload.get("spans") if isinstance(payload.get("spans"), list) else []
    first = next((s.get("trace_id") for s in spans if isinstance(s, dict) and isinstance(s.get("trace_id"), str)), None)
    tid = trace.get("id") or first or payload.get("id")
    return str(tid) if tid else None


def adapt(payload: Any, options: Options | None = None) -> Case:
    """Turn one trace (`{"trace": ..., "spans": [...]}`) into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field (`spans[3].span_data.type`) for a
    span that is not an exported span.
    """
    if not isinstance(payload, dict):
        fail(f"expected a trace object, got {type(payload).__name__}")
    trace = payload.get("trace") if isinstance(payload.get("trace"), dict) else {}
    spans = payload.get("spans")
    if not isinstance(spans, list):
        fail("spans: required list of exported spans is missing", field="spans", case_id=trace.get("id"))
    cid = _trace_id(payload) or "trace"
    meta: dict[str, list[Any]] = {"agents": [], "handoffs": [], "guardrails": [], "custom": [], "errors": [], "duplicates": []}
    otel_spans, task_usage, times = _spans(cid, spans, meta)
    usage: dict[str, Any] = {"latency_s": (max(times) - min(times)) / 1e9} if times else {}
    info: dict[str, Any] = {k: trace[k] for k in ("workflow_name", "group_id", "metadata") if trace.get(k) is not None}
    info.update({k: v for k, v in meta.items() if v})
    built = native_case(cid, otel_spans, "openai_agents", info, usage=usage)
    got = built["trace"]["usage"]
    if "input_tokens" not in got and isinstance(task_usage, dict):  # no model span recorded usage: the SDK's task span did
        got.update({k: v for k, v in (("input_tokens", as_int(task_usage.get("input_tokens"))),
                                      ("output_tokens", as_int(task_usage.get("output_tokens")))) if v is not None})
    return build_case(built)


register_format(Format("openai-agents", read=read, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options))
