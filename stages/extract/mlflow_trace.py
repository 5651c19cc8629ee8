"""Format `mlflow`: MLflow traces as `Trace.to_json()` writes them, one per line.

Framing: JSONL, one trace per line: `{"info": {...}, "data": {"spans": [...]}}`.
Spans are MLflow 3's (`span_id`, `parent_span_id`, `start_time_unix_nano`,
`status: {code, message}`, `events`) or MLflow 2's (`context.span_id`,
`parent_id`, `start_time`, `status_code`); span attributes hold JSON text
(`mlflow.spanType`, `mlflow.spanInputs`, `mlflow.spanOutputs`).

Each span becomes a span of the `otel` model with its own attributes, read
by the `mlflow` convention (`mlflow_spans`) and built by the `otel` assembler (see
`tracejudge.stages.extract.otel.native`). What counts, by `mlflow.spanType`:

- `CHAT_MODEL` / `LLM` spans are model requests, one step each (a model
  span inside another is the same request): inputs as the OpenAI autolog
  records them (`messages`, or the Responses `input`) give the user's
  turns, outputs (a Chat Completions or Responses response, or a message)
  the text and the tool calls asked for; tokens from
  `mlflow.chat.tokenUsage`, else the output's `usage`;
- `TOOL` spans are tool calls: inputs are the arguments, outputs the
  result (else the tool message the model got); status `ERROR` makes a
  failed call, the error being `"<type>: <message>"` of the exception
  event (else the status message). A call pairs with the model's tool-call
  part by name and arguments, else name in order, the id and arguments
  then coming from the model's part;
- `RETRIEVER` outputs (`Document`s) are `trace.retrieved`;
- the case's `input` and `output` are the inputs/outputs of the top
  `AGENT` span, else of the root `CHAIN` / `UNKNOWN` span (a plain
  `@mlflow.trace`): text as it is, a message list its last user / assistant
  text (the user messages sent in a row before it too, when the model's first
  request ends with them, as `otel` reads them); of a function's several arguments, the one the model was asked
  (else the model's first user message; with no model span, the first of
  `question`, `query`, `prompt`, `user_input`, `input`, `message(s)`,
  `task`, else the first text argument);
- a LangGraph pause (a `GraphInterrupt` exception) or handoff (`ParentCommand`) is no error (`metadata.mlflow.errors`);
- a span whose parent is not in the trace hangs from the trace's root
  span (it stays a root when the trace has none or several);
- other spans (`PARSER`, `EMBEDDING`, ...) are structure; an
  exception on a span that is not a call is listed in `metadata.mlflow.errors`.

A trace that is one model request or one tool call alone, with no `mlflow.trace.session` (what
`mlflow.openai.autolog()` writes for a loop with no `@mlflow.trace` span around it: each request and each
`@mlflow.trace` tool a trace of its own), is read as a case of its own, like any trace without a session:
such traces are not joined into the run they were steps of (format `otel` joins them, reading the same
spans over OTLP). The first such trace of a file is warned about, once, saying so.

Span names MLflow 2.x and early 3.x made unique on storing a trace (`get_weather_1`,
`get_weather_2` for a tool called twice) are read as the name they had.

A span listed twice (same trace and span id) is read once; when the copies
differ, the last one that ended is read and its id listed in
`metadata.mlflow.duplicates`.

A trace still `IN_PROGRESS` (written while its run went on: its root span missing) is no case: it is skipped with a
warning naming its file, line and trace id, as format `mlflow-server` skips one (`mlflow_progress`).

Usage: `info.execution_duration_ms` (MLflow 2: `execution_time_ms`) is the
latency. The case id is `info.trace_id` (MLflow 2: `request_id`);
`metadata.mlflow` keeps the trace name, state, session and user ids and
the user's own tags (not MLflow's `mlflow.*` ones). The trace's feedback (`info.assessments`) is its labels:
`metadata.labels` a `HUMAN` source's, `metadata.other_labels` the others', never tracejudge's own exported
verdicts (`mlflow_labels`, `store_labels`).

Conversations (`group_by`, option): MLflow 3 marks the traces of one session with
the trace metadata `mlflow.trace.session` (`mlflow.update_current_trace(metadata=
{"mlflow.trace.session": …, "mlflow.trace.user": …})`; LangChain autolog sets it
from a run's `thread_id`). Under `group_by: conversation` (the default) the traces
of one session are one case, its turns in the order they started, its id the
session, `metadata.mlflow.traces` their ids, the latency the sum of theirs; a
trace without a session is a case of its own. A paused LangGraph run and its
resume are two traces of its thread's session, so they are one case too, read as
below. See `conversation_groups` for how the traces are held and what is refused.

Under `group_by: trace` one trace is one case, except a paused LangGraph run and its resume (`read`):
MLflow writes each invoke as a trace, so a graph that paused at
`interrupt(value)` and was resumed on its thread with `Command(resume=answer)`
is two traces, both carrying the thread as `mlflow.trace.session` (LangChain
autolog sets it from the run config's `thread_id`). A trace whose root span's
input is such a `Command` joins the trace of the same session that started
before it, as format `otel` joins them (the resumed run's first request replays
the paused one's): one case, the first trace's id, the question the paused
turn's final text and the answer the next user turn (`otel.pauses`);
`metadata.mlflow.traces` lists the joined trace ids in order and the latency is
the sum of the invokes' own (not the time the human took). Traces without a
session, or whose session holds no resume, are one case each as before.

Under either, a smolagents run on the memory of the run before it (`agent.run(task, reset=False)`, a trace of its own
with no session) joins that run's trace the same way, each run a turn (`mlflow_run_on`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from tracejudge.core.log import get_logger
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import JsonLine, build_case, decode_line, fail, read_lines
from tracejudge.stages.extract.conversation_groups import (GROUP_BY, Conversation, Refused, Seen, conversation_parts, group_lines, join_spans,
                                                           merged, total)
from tracejudge.stages.extract.otel.native import nanos, native_case
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import unjson
from tracejudge.stages.extract.said_once import first_time
from tracejudge.stages.extract.mlflow_code_tools import joined
from tracejudge.stages.extract.mlflow_labels import trace_labels
from tracejudge.stages.extract.mlflow_progress import finished, in_progress
from tracejudge.stages.extract.mlflow_run_on import run_on
from tracejudge.stages.extract.mlflow_spans import trace_spans
from tracejudge.stages.extract.store_labels import merge_label_metadata
from tracejudge.stages.load import RawRecord

__all__ = ["Options", "adapt", "read"]

log = get_logger("tracejudge.extract.mlflow")

SESSION = "mlflow.trace.session"  # MLflow 3's trace metadata key of a trace's session (`TraceMetadataKey.TRACE_SESSION`)
_SESSION_FIELD = f"info.trace_metadata.{SESSION}"


class Options(BaseModel):
    """`dataset.options` of `mlflow`.

    `group_by`: `conversation` (default: the traces of one `mlflow.trace.session` are one case) or `trace` (one case per
    trace, a paused LangGraph run joined to its resume).
    """

    model_config = ConfigDict(extra="forbid")

    group_by: GROUP_BY = "conversation"


_LABELS = "_labels"  # (the key of `_trace`'s found that carries the trace's labels to the case, never kept under `mlflow`)


@dataclass
class _Joined:
    """The lines of a paused LangGraph run and its resumes (`read`), or of smolagents runs on one memory (`mlflow_run_on`),
    in the order they ran."""

    lines: list[Any]


def _trace(payload: Any, cid_for: str | None = None) -> tuple[str, list[Span], dict[str, Any], float | None]:
    """`(case id, spans, metadata.mlflow, latency in ms)` of one `Trace.to_json()` record; its spans take the trace
    id `cid_for` when given (a trace joined to an earlier one)."""
    record, default_id = decode_line(payload)
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    cid = str(info.get("trace_id") or info.get("request_id") or record.get("id") or default_id)
    data = record.get("data")
    raw = data.get("spans") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        fail("data.spans: required list of spans is missing (write traces with Trace.to_json())", field="data.spans", case_id=cid_for or cid)
    spans, errors, duplicates = trace_spans(cid_for or cid, raw)
    meta = info.get("trace_metadata") or info.get("request_metadata") or {}
    meta = meta if isinstance(meta, dict) else {}
    tags = info.get("tags") if isinstance(info.get("tags"), dict) else {}
    found = {"trace_name": tags.get("mlflow.traceName"), "state": info.get("state") or info.get("status"),
             "session": meta.get(SESSION), "user": meta.get("mlflow.trace.user"),
             "tags": {k: v for k, v in tags.items() if not str(k).startswith("mlflow.")} or None, "errors": errors or None, "duplicates": duplicates or None}
    ms = next((info[k] for k in ("execution_duration_ms", "execution_time_ms") if isinstance(info.get(k), (int, float)) and not isinstance(info[k], bool)), None)
    found[_LABELS] = trace_labels(info)  # (taken out again by `_labelled`)
    return cid, spans, {k: v for k, v in found.items() if v}, ms


def _labelled(built: dict[str, Any], labels: list[dict[str, Any]]) -> Case:
    """The case of `built` (`native_case`) with its traces' labels (`_labels` of each, in turn order) in its metadata."""
    built["metadata"].update(merge_label_metadata(labels))
    return build_case(built)


def adapt(payload: Any, options: Any = None) -> Case:
    """Turn one `Trace.to_json()` record, a session's traces or a paused run's joined traces (`read`) into a `Case` (module docstring).

    Raises `AdapterError` naming the field (`data.spans[1].attributes`) for a
    span that is not an MLflow span, and a refused record's error (`conversation_groups.Refused`).
    """
    if isinstance(payload, Refused):
        payload.fail()
    if isinstance(payload, Conversation):
        return _conversation(payload)
    if not isinstance(payload, _Joined):
        cid, spans, found, ms = _trace(payload)
        labels = [found.pop(_LABELS, {})]
        _warn_lone_step(payload, cid, spans, found)
        return _labelled(native_case(cid, spans, "mlflow", found, usage={"latency_s": ms / 1000} if ms is not None else {}), labels)
    cid, spans, found, ms = _trace(payload.lines[0])
    ids, times, labels = [cid], [ms], [found.pop(_LABELS, {})]
    for line in payload.lines[1:]:
        tid, more, also, later = _trace(line, cid)
        labels.append(also.pop(_LABELS, {}))
        spans += more
        ids.append(tid)
        times.append(later)
        for key in ("errors", "duplicates"):
            if also.get(key):
                found[key] = found.get(key, []) + also[key]
    found["traces"] = ids
    usage = {"latency_s": sum(times) / 1000} if None not in times else {}  # (the invokes' own time, not the human's)
    return _labelled(native_case(cid, spans, "mlflow", found, usage=usage), labels)


_STEPS = {"CHAT_MODEL": "model request", "LLM": "model request", "TOOL": "tool call"}


def _warn_lone_step(payload: Any, cid: str, spans: list[Span], found: dict[str, Any]) -> None:
    """Warn, once per file, of a trace that is one model request or tool call alone with no session (module docstring).

    Such a trace is a step of a run that had no span around it: read as its own case, a request's calls have no
    results and the run's answer is in another case. Traces with a session, or a root of any other type (an
    `@mlflow.trace` function, an agent), are not warned about.
    """
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id not in ids]
    kind = unjson(roots[0].attrs.get("mlflow.spanType")) if len(roots) == 1 else None
    step = _STEPS.get(kind.upper()) if isinstance(kind, str) else None
    place = payload.default_id if isinstance(payload, JsonLine) else None
    if step is None or found.get("session") or place is None:
        return
    file = place.rpartition(":")[0]
    if not first_time("mlflow_lone_step", file):
        return
    log.warning(f"mlflow: {place}: trace {cid} is one {step} alone, with no span around it and no `{SESSION}` (as "
                "mlflow.openai.autolog() records a loop that no @mlflow.trace function wraps): format mlflow reads each such trace "
                "as a case of its own, so a run of several requests and tool calls is split into as many cases, a request's "
                "calls without their results and the answer in another case. Wrap the run in @mlflow.trace, set "
                f"`{SESSION}` on its traces (one case per session), or read the same spans over OTLP with format otel, which joins them")


def _conversation(conversation: Conversation) -> Case:
    """The case of a session's traces, its turns in the order they started (`conversation_groups`)."""
    parts = conversation_parts(conversation, _trace)
    ids = [cid for cid, *_ in parts]
    labels = [p[2].pop(_LABELS, {}) for p in parts]
    found = {**merged([p[2] for p in parts]), "traces": ids}
    if conversation.left_out:
        found["left_out"] = conversation.left_out
    ms = total([p[3] for p in parts])
    usage = {"latency_s": ms / 1000} if ms is not None else {}  # (the invokes' own time, not the time between turns)
    return _labelled(native_case(conversation.case_id, join_spans([p[1] for p in parts]), "mlflow", found, usage=usage, traces=ids), labels)


def _seen(record: dict[str, Any]) -> Seen | None:
    """The trace id, session, start and readability of a decoded `Trace.to_json()` line (`None`: no trace id)."""
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    tid = info.get("trace_id") or info.get("request_id")
    if not isinstance(tid, (str, int)) or isinstance(tid, bool) or in_progress(record):
        return None  # (a trace still in progress joins no session: it is skipped, `mlflow_progress`)
    meta = info.get("trace_metadata") or info.get("request_metadata") or {}
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    raw = data.get("spans")
    readable = isinstance(raw, list) and bool(raw) and all(isinstance(s, dict) and isinstance(s.get("attributes"), dict) for s in raw)
    starts = [t for t in (nanos(s.get("start_time_unix_nano", s.get("start_time"))) for s in raw if isinstance(s, dict)) if t is not None] \
        if isinstance(raw, list) else []
    start = min(starts) if starts else nanos(info.get("request_time"))
    return Seen(str(tid), meta.get(SESSION) if isinstance(meta, dict) else None, start, readable)


def _resumes(record: dict[str, Any]) -> tuple[str, Any, bool] | None:
    """`(session, start, resumed)` of a decoded trace that names a session; `resumed`: its root span's input is a LangGraph
    `Command` with a `resume` (`conventions.langgraph`'s test); `None` for a trace without a session."""
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    meta = info.get("trace_metadata") or info.get("request_metadata") or {}
    session = meta.get(SESSION) if isinstance(meta, dict) else None
    if not isinstance(session, str) or not session or in_progress(record):
        return None
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    spans = [s for s in data.get("spans") or [] if isinstance(s, dict)]
    roots = [s for s in spans if not (s.get("parent_span_id") or s.get("parent_id"))]
    starts = [nanos(s.get("start_time_unix_nano", s.get("start_time"))) for s in roots]
    start = min((t for t in starts if t is not None), default=None)
    got = unjson((roots[0].get("attributes") or {}).get("mlflow.spanInputs")) if len(roots) == 1 and isinstance(roots[0].get("attributes"), dict) else None
    resumed = isinstance(got, dict) and "resume" in got and set(got) <= {"graph", "update", "resume", "goto"} and got["resume"] is not None
    return session, start if start is not None else str(info.get("request_time") or ""), resumed


def read(dataset: Any) -> Iterator[RawRecord]:
    """One record per session (`group_by: conversation`, `conversation_groups`), else per line (`_read_traces`).

    A line that does not decode is yielded as it is, for `adapt` to name its error; `dataset.limit` counts records
    (a `CodeAgent`'s tool calls, which MLflow writes as traces of their own, are read in their run's: `mlflow_code_tools`)."""
    by_session = Options.model_validate(dataset.options or {}).group_by == "conversation"
    records = group_lines(dataset, _SESSION_FIELD, SESSION.encode(), _seen) if by_session else _read_traces(dataset)
    # (a trace still in progress skipped with a warning, `mlflow_progress`; a smolagents run on the memory of the one before,
    # `reset=False`, joined to it, `mlflow_run_on`)
    yield from run_on(dataset, joined(dataset, finished(records), SESSION), _Joined, SESSION)


def _read_traces(dataset: Any) -> Iterator[RawRecord]:
    """Every line as its own record, except a paused LangGraph run's traces, which are one (module docstring).

    A line that names a session (`mlflow.trace.session`) waits until the file is read (its bytes only, not
    decoded), since a resume may be written before the run it resumes (`search_traces` lists the newest
    first); the others are yielded as they are read. A line that does not decode is yielded as it is, for
    `adapt` to name its error.
    """
    held: dict[str, list[tuple[Any, int, RawRecord, bool]]] = {}
    for n, raw in enumerate(read_lines(dataset)):
        data = raw.payload.data if isinstance(raw.payload, JsonLine) else None
        if raw.error is not None or not isinstance(data, bytes) or SESSION.encode() not in data:
            yield raw
            continue
        try:
            record = json.loads(data)
            got = _resumes(record) if isinstance(record, dict) else None
        except (ValueError, RecursionError):
            got = None
        if got is None:
            yield raw
            continue
        held.setdefault(got[0], []).append((got[1], n, raw, got[2]))
    for traces in held.values():
        if not any(resumed for *_, resumed in traces):
            yield from (raw for _, _, raw, _ in sorted(traces, key=lambda t: t[1]))  # (file order)
            continue
        chains: list[list[RawRecord]] = []
        for _, _, raw, resumed in sorted(traces, key=lambda t: (str(type(t[0])), t[0], t[1])):
            if resumed and chains:
                chains[-1].append(raw)
            else:
                chains.append([raw])
        for chain in chains:
            first = chain[0]
            yield first if len(chain) == 1 else RawRecord(first.file, first.line, _Joined([r.payload for r in chain]), end=first.end)


register_format(Format("mlflow", read=read, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options or {}), options=Options))
