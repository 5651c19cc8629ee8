"""Format `openai-agents`: the OpenAI Agents SDK's own tracing export (`Trace.export()`, `Span.export()`).

Framing: JSONL in either of the shapes the SDK's tracing produces, mixed
freely in one file:

- one trace per line: `{"trace": Trace.export(), "spans": [Span.export(), ...]}`;
- a stream of exported items, one per line (`{"object": "trace", ...}` and
  `{"object": "trace.span", ...}`, as a `TracingProcessor` writing
  `item.export()` produces) or in the `{"data": [items...]}` batches of the
  SDK's `BackendSpanExporter`. Items are grouped by trace id (a trace's `id`,
  a span's `trace_id`) into traces, reported at the line of their first
  item. The SDK sends a trace's item when the trace *starts* and each
  span when it ends, so nothing in the stream says a trace is complete:
  memory holds the traces still open, at most `max_open_traces` (option,
  default 1,000); past that the one that has gone longest without a new
  item is closed and becomes its case (or a turn of its conversation,
  below), and an item arriving later for a
  closed trace is one `invalid_input` naming its line (raise the option).
  The ids of the last 100,000 closed traces are remembered to tell that,
  so memory stays flat however long the file.

Each exported span becomes a span of the `otel` model (its `span_data` and
`error` as attributes) read by the `openai-agents` convention and built by
the `otel` assembler (see `tracejudge.stages.extract.otel.native`). What
counts (`span_data.type`):

- `function` spans are tool calls: `input` (the JSON the model sent) is the
  arguments, `output` the result, the span's `error` (`{message, data}`)
  the call's error, as `"<message>: <data.error>"` (a structured output, an MCP
  tool's among them, exported as its `str()`, is the text the model was shown; a
  `timeout` that ran out, the SDK's message as the output and no error, is the
  call's error: `conventions.agents_outputs`);
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
  the `handoff` span (`conventions.openai_agents.handoff_calls`). A trace exported
  with `trace_include_sensitive_data=False` (no request's or tool's content) is
  warned of alike (`openai_agents_hidden`);
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
A streamed run cancelled once its tools ran (`cancel(mode="after_turn")`) is
exported exactly as such a stop (no field records the behaviour, the cancel or
a final output), so it reads as one, and a warning (once per process: the
export names no file) says it may have been that cancel; a request that was
not streamed (a Chat Completions `generation` holding chat messages) could not
be, and is not warned of. A run cut short before the calls of its last request
ran or finished (`cancel()`, a cancelled task: the SDK records no error; a call
with no `function` span, or one that ended after the agent span with no output)
keeps those calls, each failed with why it did not run or finish, and has no
output, its `metadata.run_error` saying what the trace shows
(`conventions.agents_cancel`). A run paused for a human's approval (a
`needs_approval` tool, an MCP server's `require_approval` one: its `function`
span records no output and no error, and no request follows) keeps those
calls, each failed as awaiting approval and not run, and has no output, its
`metadata.run_error` saying it paused (and which setting held them) and
`metadata.openai_agents.paused_for_approval` naming the agent and tools
(`conventions.agents_approval`).

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

Conversations (`group_by`, option): a chat app runs one `trace(workflow_name,
group_id=thread_id)` per user turn, the SDK's `group_id` linking the traces of
one conversation (its docs: "you might use a chat thread ID"). Under `group_by: conversation` (the
default) the traces of one `group_id` are one case, its turns in the order they
started, its id the `group_id`, `metadata.openai_agents.traces` their ids, the
latency the sum of theirs. A trace without `group_id` is a case of its own, as
every trace is under `group_by: trace`, unless its first Chat Completions request replays an earlier trace's
conversation (a `session`, `to_input_list()`): such traces are joined as format `otel` joins OpenInference's
recording of the same program, and held until the file is read (`openai_agents_replays`). A trace with a `group_id` is held until
the file is read (a chat's turns may be far apart), on a spool, not in memory;
see `conversation_groups` for that and for what is refused. The reading is
here, the spans' translation in `openai_agents_spans`.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from itertools import chain
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import build_case, fail
from tracejudge.stages.extract.conversation_groups import (GROUP_BY, Conversation, Holder, Refused, conversation_parts, join_spans, key_of,
                                                           merged, total)
from tracejudge.stages.extract.openai_agents_hidden import Textless
from tracejudge.stages.extract.openai_agents_replays import Replayed
from tracejudge.stages.extract.openai_agents_spans import problem, spans_of, trace_id
from tracejudge.stages.extract.otel.native import nanos, native_case
from tracejudge.stages.extract.otel.once import Repeats
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import as_int
from tracejudge.stages.load import RawRecord, loads, loads_line, read_jsonl

__all__ = ["Options", "adapt", "read"]


GROUP_FIELD = "trace.group_id"  # where a trace names its conversation (`Trace.export()`'s `group_id`)


class Options(BaseModel):
    """`dataset.options` of `openai-agents`.

    `max_open_traces`: how many traces of an item stream may be open at once
    before the least recently extended one is closed (memory is bounded by it).
    `group_by`: `conversation` (default: the traces of one `group_id` are one case) or `trace` (one case per trace).
    """

    model_config = ConfigDict(extra="forbid")

    max_open_traces: int = Field(default=1000, ge=1)
    group_by: GROUP_BY = "conversation"


_CLOSED_KEPT = 100_000  # ids of closed traces remembered to report a late item (a few MB at most)


class _Open:
    __slots__ = ("file", "line", "trace", "spans")

    def __init__(self, file: str, line: int) -> None:
        self.file, self.line = file, line
        self.trace: dict[str, Any] | None = None
        self.spans: list[Any] = []


def read(dataset: Any) -> Iterator[RawRecord]:
    """Stream the export at `dataset.path`: one `RawRecord` (payload `{"trace", "spans"}`) per trace, or per conversation.

    Under `group_by: conversation` a trace with a `group_id` is held until the file is read and its
    conversation's traces come as one record (payload `conversation_groups.Conversation`); a trace the
    format cannot read, a bad `group_id` or a conflicting copy is a record of its own (see `conversation_groups`).
    A line that is not JSON, or an item that is neither a trace nor a span,
    is a record with `error` set naming its line (and batch index);
    `dataset.limit` counts the other records (traces, conversations, refusals). A trace line repeating one read before
    (same trace id and content: an exporter's retry) is skipped (`once.Repeats`).
    Traces whose Responses API requests were exported without text are warned
    of (`Textless`): once per file, their count when the read ends.
    """
    textless = Textless()
    opts = Options.model_validate(dataset.options or {})
    holder = Holder(GROUP_FIELD) if opts.group_by == "conversation" else None
    replayed = Replayed() if holder is not None else None
    count = 0
    try:
        for record in _read(dataset, opts, textless, holder, replayed):
            if dataset.limit is not None and count >= dataset.limit:
                return
            count += record.error is None  # (the limit counts cases; an unreadable line is none)
            yield record
        for record in chain(replayed.records(), holder.conversations()) if holder is not None and replayed is not None else ():
            if dataset.limit is not None and count >= dataset.limit:
                return
            count += 1
            yield record
    finally:  # also when the consumer stops early: the count said is of what was read
        textless.report()
        if holder is not None and replayed is not None:
            holder.close()
            replayed.close()


def _read(dataset: Any, opts: Options, textless: Textless, holder: Holder | None, replayed: Replayed | None) -> Iterator[RawRecord]:
    """Every complete trace's record (or refusal) and every unreadable line's, as the file is read; held traces go to `holder`."""
    open_: OrderedDict[str, _Open] = OrderedDict()
    closed: OrderedDict[str, None] = OrderedDict()  # the most recently closed ids, at most _CLOSED_KEPT
    whole = Repeats(_CLOSED_KEPT)  # the trace lines read, to skip one sent again

    def done(file: str, line: int, payload: dict[str, Any], text: bytes | None = None) -> RawRecord | None:
        """The record of a complete trace, or `None` when it is held for its conversation."""
        record = RawRecord(file, line, payload)
        textless.see(record)
        return record if holder is None or replayed is None else _grouped(holder, replayed, record, text)

    for raw in read_jsonl(dataset.path):
        if raw.error is not None:
            yield raw
            continue
        try:
            doc = loads_line(raw.payload)
        except ValueError as exc:
            yield RawRecord(raw.file, raw.line, error=str(exc))
            continue
        if isinstance(doc, dict) and "spans" in doc:
            if whole.again(trace_id(doc), doc):
                continue
            if (record := done(raw.file, raw.line, doc, raw.payload)) is not None:
                yield record
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
                if (record := done(oldest.file, oldest.line, {"trace": oldest.trace, "spans": oldest.spans})) is not None:
                    yield record
    for group in open_.values():
        if (record := done(group.file, group.line, {"trace": group.trace, "spans": group.spans})) is not None:
            yield record


def _grouped(holder: Holder, replayed: Replayed, record: RawRecord, text: bytes | None) -> RawRecord | None:
    """`record` (one complete trace) as it goes out under `group_by: conversation`: itself (no `group_id`, or a trace
    the format cannot read), a refusal in its place (a bad `group_id`, a conflicting copy), or `None` when held."""
    payload = record.payload
    trace = payload.get("trace") if isinstance(payload.get("trace"), dict) else {}
    tid = trace_id(payload)
    key, bad = key_of(trace.get("group_id"), GROUP_FIELD)
    if bad is not None:
        return RawRecord(record.file, record.line, Refused(bad, GROUP_FIELD, tid))
    if tid is None:
        return record
    if problem(payload) is not None:
        if key is not None:
            holder.leave_out(key, tid)
        return record  # a case of its own: `adapt` names what it cannot read, as for any trace
    spans = payload["spans"]
    starts = [t for t in (nanos(s.get("started_at")) for s in spans if isinstance(s, dict)) if t is not None]
    data = text if text is not None else json.dumps(payload, ensure_ascii=False).encode()
    if key is None:  # a conversation only what its requests replay can tell (`openai_agents_replays`)
        refused = replayed.hold(record, tid, data)
        return record if refused is False else (RawRecord(record.file, record.line, refused) if refused is not None else None)
    refused = holder.hold(key, tid, min(starts, default=None), record.file, record.line, data)
    return RawRecord(record.file, record.line, refused) if refused is not None else None


def adapt(payload: Any, options: Any = None) -> Case:
    """Turn one trace (`{"trace": ..., "spans": [...]}`), or a conversation's traces (`read`), into a `Case` (module docstring).

    Raises `AdapterError` naming the field (`spans[3].span_data.type`) for a
    span that is not an exported span, and a refused record's error (`conversation_groups.Refused`).
    """
    if isinstance(payload, Refused):
        payload.fail()
    if isinstance(payload, Conversation):
        return _conversation(payload)
    cid, spans, info, latency, task_usage = _part(payload)
    built = native_case(cid, spans, "openai_agents", info, usage={"latency_s": latency} if latency is not None else {})
    return build_case(_task_usage(built, [task_usage]))


def _part(payload: Any) -> tuple[str, list[Span], dict[str, Any], float | None, Any]:
    """`(trace id, spans, metadata.openai_agents, latency in s, the SDK task span's usage)` of one trace."""
    if isinstance(payload, bytes):
        payload = loads(payload)  # (a conversation's trace, as `read` held it)
    wrong = problem(payload)
    if wrong is not None and not isinstance(payload, dict):
        fail(wrong[0], field=wrong[1])
    trace = payload.get("trace") if isinstance(payload.get("trace"), dict) else {}
    cid = trace_id(payload) or "trace"
    if wrong is not None:
        fail(wrong[0], field=wrong[1], case_id=trace.get("id") if wrong[1] == "spans" else cid)
    meta: dict[str, list[Any]] = {"agents": [], "handoffs": [], "guardrails": [], "custom": [], "errors": [], "duplicates": [],
                                  "stopped_at_tool": [], "paused_for_approval": []}
    otel_spans, task_usage, times = spans_of(cid, payload["spans"], meta)
    info: dict[str, Any] = {k: trace[k] for k in ("workflow_name", "group_id", "metadata") if trace.get(k) is not None}
    info.update({k: v for k, v in meta.items() if v})
    return cid, otel_spans, info, (max(times) - min(times)) / 1e9 if times else None, task_usage


def _conversation(conversation: Conversation) -> Case:
    """The case of the traces of one `group_id`, its turns in the order they started (`conversation_groups`)."""
    parts = conversation_parts(conversation, _part)
    ids = [p[0] for p in parts]
    info = {**merged([p[2] for p in parts]), "traces": ids}
    if conversation.left_out:
        info["left_out"] = conversation.left_out
    latency = total([p[3] for p in parts])  # each trace's own time, not the time between turns
    built = native_case(conversation.case_id, join_spans([p[1] for p in parts]), "openai_agents", info,
                        usage={"latency_s": latency} if latency is not None else {}, traces=ids)
    return build_case(_task_usage(built, [p[4] for p in parts]))


def _task_usage(built: dict[str, Any], task_usages: list[Any]) -> dict[str, Any]:
    """`built` with the SDK task spans' usage as its tokens when no model span recorded any and none lacked it, and every
    trace has a task span's usage (a conversation's summed)."""
    got = built["trace"]["usage"]
    if "input_tokens" in got or "requests_without_usage" in built["metadata"] or not all(isinstance(u, dict) for u in task_usages):
        return built
    for key in ("input_tokens", "output_tokens"):
        counts = [as_int(u.get(key)) for u in task_usages]
        if None not in counts:
            got[key] = sum(c for c in counts if c is not None)
    return built


register_format(Format("openai-agents", read=read, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options))
