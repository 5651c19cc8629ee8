"""Format `mlflow`: MLflow traces as `Trace.to_json()` writes them, one per line.

Framing: JSONL, one trace per line: `{"info": {...}, "data": {"spans": [...]}}`.
Spans are MLflow 3's (`span_id`, `parent_span_id`, `start_time_unix_nano`,
`status: {code, message}`, `events`) or MLflow 2's (`context.span_id`,
`parent_id`, `start_time`, `status_code`); span attributes hold JSON text
(`mlflow.spanType`, `mlflow.spanInputs`, `mlflow.spanOutputs`).

Each span becomes a span of the `otel` model with its own attributes, read
by the `mlflow` convention and built by the `otel` assembler (see
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
  text; of a function's several arguments, the one the model was asked
  (else the model's first user message; with no model span, the first of
  `question`, `query`, `prompt`, `user_input`, `input`, `message(s)`,
  `task`, else the first text argument);
- a span whose parent is not in the trace hangs from the trace's root
  span (it stays a root when the trace has none or several);
- other spans (`PARSER`, `EMBEDDING`, ...) are structure; an
  exception on a span that is not a call is listed in `metadata.mlflow.errors`.

Span names MLflow 2.x and early 3.x made unique on storing a trace (`get_weather_1`,
`get_weather_2` for a tool called twice) are read as the name they had.

A span listed twice (same trace and span id) is read once; when the copies
differ, the last one that ended is read and its id listed in
`metadata.mlflow.duplicates`.

Usage: `info.execution_duration_ms` (MLflow 2: `execution_time_ms`) is the
latency. The case id is `info.trace_id` (MLflow 2: `request_id`);
`metadata.mlflow` keeps the trace name, state, session and user ids and
the user's own tags (not MLflow's `mlflow.*` ones).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from tracejudge.core.records import Case
from tracejudge.core.registry import Format, NoOptions, register_format
from tracejudge.stages.extract.common import build_case, decode_line, fail, read_lines
from tracejudge.stages.extract.otel.native import in_order, nanos, native_case, native_span
from tracejudge.stages.extract.otel.once import once
from tracejudge.stages.extract.otel.spans import Span, adopt_orphans
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["adapt"]

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


def _spans(cid: str, raw: list[Any]) -> tuple[list[Span], list[dict[str, Any]], list[str]]:
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
        if error and kind not in _CALL_TYPES:
            errors.append({"span": str(sid), "type": kind if isinstance(kind, str) else None, "name": span.get("name"), "error": error})
    for span, start in zip(out, in_order(starts)):
        span.start = start
    adopt_orphans(out)  # (MLflow writes one root per trace)
    return out, errors, [str(k[1]) for k in differed]


def adapt(payload: Any, options: Any = None) -> Case:
    """Turn one `Trace.to_json()` record into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field (`data.spans[1].attributes`) for a
    span that is not an MLflow span.
    """
    record, default_id = decode_line(payload)
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    cid = str(info.get("trace_id") or info.get("request_id") or record.get("id") or default_id)
    data = record.get("data")
    raw = data.get("spans") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        fail("data.spans: required list of spans is missing (write traces with Trace.to_json())", field="data.spans", case_id=cid)
    spans, errors, duplicates = _spans(cid, raw)
    meta = info.get("trace_metadata") or info.get("request_metadata") or {}
    meta = meta if isinstance(meta, dict) else {}
    tags = info.get("tags") if isinstance(info.get("tags"), dict) else {}
    found = {"trace_name": tags.get("mlflow.traceName"), "state": info.get("state") or info.get("status"),
             "session": meta.get("mlflow.trace.session"), "user": meta.get("mlflow.trace.user"),
             "tags": {k: v for k, v in tags.items() if not str(k).startswith("mlflow.")} or None, "errors": errors or None, "duplicates": duplicates or None}
    ms = next((info[k] for k in ("execution_duration_ms", "execution_time_ms") if isinstance(info.get(k), (int, float)) and not isinstance(info[k], bool)), None)
    usage = {"latency_s": ms / 1000} if ms is not None else {}
    return build_case(native_case(cid, spans, "mlflow", {k: v for k, v in found.items() if v}, usage=usage))


register_format(Format("mlflow", read=read_lines, adapt=adapt, options=NoOptions))
