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
  call id); `usage.input_tokens` / `output_tokens` are summed (both 0, the
  SDK's empty usage for a stream that reported none, is no count: the case's
  tokens are then unknown, `metadata.requests_without_usage`);
- `response` spans (Responses API models, the SDK's default) are model
  requests with `response_id` and, when recorded, `usage`: the export keeps
  neither the input nor the output text (`ResponseSpanData.export()` drops
  them; OpenAI's dashboard fetches them by id), so such traces have no
  `input`/`output` unless a `generation` span or a stop at a tool (below)
  gives them. `read` warns of it once per file (file, line, trace id; the
  number of such traces at the end of the file's read when more than one):
  OpenInference's `OpenAIAgentsInstrumentor` (format `otel`) or a Chat
  Completions model keeps the text. Nor are call ids kept; a handoff such a
  request asked for is its `transfer_to_<agent>` call all the same, read off
  the `handoff` span (`conventions.openai_agents.handoff_calls`);
- `agent` spans name the agents (`name`, `tools`, `handoffs`,
  `output_type`); a handoff the model asked for (`transfer_to_<agent>`)
  is a call like the others, its result the SDK's reply to the model;
  `handoff`, `guardrail` and `custom` spans, the trace's
  `workflow_name`, `group_id` and `metadata`, and errors on spans that are
  not calls go to `metadata.openai_agents`. The SDK's `task` custom span
  gives the usage when no model span carries any and none lacks it (it sums
  the same requests' usage, so it is no total when some recorded none).

An agent run that ended at a tool call (`tool_use_behavior=
"stop_on_first_tool"` or `StopAtTools`) returned that tool's output as its
`final_output`: the trace shows it as tool calls after the run's last model
request, with no later request, no handoff and no error on the agent span
(see `conventions.openai_agents.stopped_runs`, which also says what the
trace cannot tell: which call it was when the request made several and
`StopAtTools` named a later one, a custom behaviour function's value). That
output is the case's (or its turn's) output, the text the model wrote beside
the calls an intermediate text; `metadata.openai_agents.stopped_at_tool`
names the agent and tool. A run that failed (max_turns, a tool raising out
of it, a tripped guardrail) keeps no output, as before: not even the text of
its last request (an output guardrail blocked it; `metadata.run_error` says why).

An error that ended the run from a `turn` span (a tool the agent does not
have, a tripped input guardrail; the agent span records none) is the run's
error, `metadata.run_error`, as an agent span's (see
`conventions.openai_agents.run_errors`); a turn error the run went on after
(`tool_not_found_behavior="return_error_to_model"`) is not. A call of a
tool that does not exist stays a call (the model made it) whose `error`
says it did not run. A run that ended before any model request (an input
guardrail) is a case with no input (the export does not keep the user's
input without a `generation` span), no steps and its `run_error`.

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
from tracejudge.core.log import get_logger
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import build_case, fail, json_type
from tracejudge.stages.extract.otel.conventions.openai_agents import (FINAL_OUTPUT, HANDOFF_CALLS, NOT_RUN, RUN_ERROR, error_text, handoff_calls,
                                                                     missing_tools, run_errors, stopped_runs, turn_data)
from tracejudge.stages.extract.otel.conventions.openai_agents import read as read_view
from tracejudge.stages.extract.otel.native import in_order, nanos, native_case, native_span
from tracejudge.stages.extract.otel.once import Repeats, once
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import as_int
from tracejudge.stages.load import RawRecord, loads, read_jsonl

__all__ = ["Options", "adapt", "read"]

log = get_logger("tracejudge.extract.openai_agents")


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
    Traces whose Responses API requests were exported without text are warned
    of (`_Textless`): once per file, their count when the read ends.
    """
    textless = _Textless()
    try:
        for record in _read(dataset):
            if record.error is None:
                textless.see(record)
            yield record
    finally:  # also when the consumer stops early: the count said is of what was read
        textless.report()


def _read(dataset: Any) -> Iterator[RawRecord]:
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


class _Textless:
    """Counts, per file, the traces whose Responses API requests (`response` spans) the export kept without text.

    The first such trace of a file is warned of at once (a file of 50,000 such traces says it once, not per
    case); `report` gives each file's count when more than one. A `response` span that does hold `input` or
    `output` (a later SDK, a custom processor) is not counted.
    """

    def __init__(self) -> None:
        self.files: dict[str, list[int]] = {}  # file -> [traces, first line]

    def see(self, record: RawRecord) -> None:
        payload = record.payload if isinstance(record.payload, dict) else {}
        spans = payload.get("spans") if isinstance(payload.get("spans"), list) else []
        if not any(_textless(s) for s in spans):
            return
        seen = self.files.setdefault(record.file, [0, record.line])
        seen[0] += 1
        if seen[0] == 1:
            log.warning(f"openai-agents: {record.file}:{record.line}: trace {_trace_id(payload)}: the Agents SDK's export records "
                        "Responses API model requests (`response` spans, the SDK's default model) without their text, only their "
                        "response id and usage, so the case's input and output are unknown (an output a run took from a tool "
                        "is kept); to keep the text, record with OpenInference's OpenAIAgentsInstrumentor (format otel) or "
                        "use a Chat Completions model (OpenAIChatCompletionsModel, set_default_openai_api('chat_completions'))")

    def report(self) -> None:
        for file, (count, line) in self.files.items():
            if count > 1:
                log.warning(f"openai-agents: {file}: {count} traces in all (the first at line {line}) have Responses API model "
                            "requests recorded without their text: their input and output are unknown")
        self.files.clear()


def _textless(span: Any) -> bool:
    data = span.get("span_data") if isinstance(span, dict) else None
    return isinstance(data, dict) and data.get("type") == "response" and data.get("input") is None and data.get("output") is None


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
    for agent, error in run_errors(out, _kind, read_view):  # before `stopped_runs`: a failed run stopped at no tool
        agent.attrs[RUN_ERROR] = error  # the convention reads it as the agent's error: the run's, `metadata.run_error`
    for model, tool_name in handoff_calls(out, _kind):
        model.attrs.setdefault(HANDOFF_CALLS, []).append(tool_name)  # the convention reads it as the request's call
    for model, tool_name, why in missing_tools(out, _kind, read_view):
        model.attrs.setdefault(NOT_RUN, {})[tool_name] = why  # the convention marks the model's call of it as not run
    for agent, tool, text in stopped_runs(out, _kind, read_view):  # needs the start times just set
        agent.attrs[FINAL_OUTPUT] = text  # the convention reads it as the agent's answer: the turn's output
        meta["stopped_at_tool"].append({"agent": agent.name, "tool": tool.name})
    return out, task_usage, times


_KINDS = {"function": "tool", "generation": "model", "response": "model", "agent": "agent", "handoff": "handoff"}


def _kind(span: Span) -> str | None:
    """What an exported span is to `stopped_runs` / `run_errors` (by its `span_data.type`; `turn` for the SDK's turn span)."""
    data = span.attrs["openai_agents.span_data"]
    return "turn" if turn_data(data) else _KINDS.get(data["type"])


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
        fail(f"expected a trace object, got {json_type(payload)}")
    trace = payload.get("trace") if isinstance(payload.get("trace"), dict) else {}
    spans = payload.get("spans")
    if not isinstance(spans, list):
        fail("spans: required list of exported spans is missing", field="spans", case_id=trace.get("id"))
    cid = _trace_id(payload) or "trace"
    meta: dict[str, list[Any]] = {"agents": [], "handoffs": [], "guardrails": [], "custom": [], "errors": [], "duplicates": [],
                                  "stopped_at_tool": []}
    otel_spans, task_usage, times = _spans(cid, spans, meta)
    usage: dict[str, Any] = {"latency_s": (max(times) - min(times)) / 1e9} if times else {}
    info: dict[str, Any] = {k: trace[k] for k in ("workflow_name", "group_id", "metadata") if trace.get(k) is not None}
    info.update({k: v for k, v in meta.items() if v})
    built = native_case(cid, otel_spans, "openai_agents", info, usage=usage)
    got = built["trace"]["usage"]
    if "input_tokens" not in got and "requests_without_usage" not in built["metadata"] and isinstance(task_usage, dict):
        # no model span recorded usage and none was missing it: the SDK's task span counted it
        got.update({k: v for k, v in (("input_tokens", as_int(task_usage.get("input_tokens"))),
                                      ("output_tokens", as_int(task_usage.get("output_tokens")))) if v is not None})
    return build_case(built)


register_format(Format("openai-agents", read=read, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options))
