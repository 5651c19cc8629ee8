"""Format `mlflow`: MLflow traces as `Trace.to_json()` writes them, one per line.

Framing: JSONL, one trace per line: `{"info": {...}, "data": {"spans": [...]}}`.
Spans are MLflow 3's (`span_id`, `parent_span_id`, `start_time_unix_nano`,
`status: {code, message}`, `events`) or MLflow 2's (`context.span_id`,
`parent_id`, `start_time`, `status_code`); span attributes hold JSON text
(`mlflow.spanType`, `mlflow.spanInputs`, `mlflow.spanOutputs`).

What counts, by `mlflow.spanType`:

- `CHAT_MODEL` / `LLM` spans are model requests, one step each (a model
  span inside another is the same request): inputs as the OpenAI autolog
  records them (`messages`, or the Responses `input`) give the user's
  turns, outputs (a Chat Completions or Responses response, or a message)
  the text and the tool calls asked for; tokens from
  `mlflow.chat.tokenUsage`, else the output's `usage`;
- `TOOL` spans are tool calls: inputs are the arguments, outputs the
  result; status `ERROR` makes a failed call, the error being the
  exception event's `"<type>: <message>"` (else the status message). A
  call pairs with the model's tool-call part by name in order, the
  arguments then coming from the model's part;
- `RETRIEVER` outputs (`Document`s) are `trace.retrieved`;
- the case's `input` and `output` are the inputs/outputs of the top
  `AGENT` span, else of the root span: a message list gives its first user
  text, a one-key mapping (`{"question": "..."}`) its text, a response
  its assistant text; inputs of several arguments give way to the first
  user message the model received, when there is one;
- other spans (`CHAIN`, `PARSER`, `UNKNOWN`, ...) are structure; an
  exception on one of them is listed in `metadata.mlflow.errors`.

Usage: `info.execution_duration_ms` (MLflow 2: `execution_time_ms`) is the
latency. The case id is `info.trace_id` (MLflow 2: `request_id`);
`metadata.mlflow` keeps the trace name, state, session and user ids and
the user's own tags (not MLflow's `mlflow.*` ones).
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.core.records import Case
from tracejudge.core.registry import Format, NoOptions, register_format
from tracejudge.stages.extract.common import build_case, decode_line, fail, read_lines
from tracejudge.stages.extract.span_steps import Node, assemble, count, input_messages, model_output, passages, user_texts
from tracejudge.stages.load import JSON_ERRORS

__all__ = ["adapt"]

_MODEL_TYPES = {"CHAT_MODEL", "LLM"}


def _attr(attrs: dict[str, Any], key: str) -> Any:
    """An attribute's value: MLflow stores each as JSON text; text that is not JSON is kept."""
    value = attrs.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except JSON_ERRORS:
            return value
    return value


def _exception(span: dict[str, Any]) -> str | None:
    """The error of a span: its exception event (`type: message`), else an ERROR status's message."""
    events = span.get("events")
    for ev in events if isinstance(events, list) else []:
        if isinstance(ev, dict) and ev.get("name") == "exception":
            attrs = ev.get("attributes") if isinstance(ev.get("attributes"), dict) else {}
            kind, message = attrs.get("exception.type"), attrs.get("exception.message")
            if kind or message:
                return ": ".join(str(x) for x in (kind, message) if x)
    status = span.get("status")
    code = status.get("code") if isinstance(status, dict) else span.get("status_code")
    if isinstance(code, str) and code.endswith("ERROR"):
        message = status.get("message") if isinstance(status, dict) else span.get("status_message")
        return str(message or "error")
    return None


def _text(value: Any) -> Any:
    """A root/agent input or output as the case keeps it (see the module docstring)."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value.values())), str):
        return next(iter(value.values()))
    if isinstance(value, (list, dict)):
        said = user_texts(input_messages(value))
        if said:
            return said[0]
        text, _ = model_output(value)
        if text is not None:
            return text
    return value


def adapt(payload: Any, options: Any = None) -> Case:
    """Turn one `Trace.to_json()` record into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field (`data.spans[1].attributes`) for a
    span that is not an MLflow span.
    """
    record, default_id = decode_line(payload)
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    cid = str(info.get("trace_id") or info.get("request_id") or record.get("id") or default_id)
    data = record.get("data")
    spans = data.get("spans") if isinstance(data, dict) else None
    if not isinstance(spans, list):
        fail("data.spans: required list of spans is missing (write traces with Trace.to_json())", field="data.spans", case_id=cid)
    nodes, retrieved, errors, rows = [], [], [], []
    for i, span in enumerate(spans):
        attrs = span.get("attributes") if isinstance(span, dict) else None
        if not isinstance(attrs, dict):
            fail("expected a span with `attributes`", field=f"data.spans[{i}].attributes", case_id=cid)
        context = span.get("context") if isinstance(span.get("context"), dict) else {}
        sid = span.get("span_id") or context.get("span_id") or f"#{i}"
        kind = _attr(attrs, "mlflow.spanType")
        kind = kind if isinstance(kind, str) else None
        inputs, outputs = _attr(attrs, "mlflow.spanInputs"), _attr(attrs, "mlflow.spanOutputs")
        node = Node(id=str(sid), parent=span.get("parent_span_id") or span.get("parent_id"),
                    start=span.get("start_time_unix_nano", span.get("start_time")), kind="other", name=span.get("name"))
        rows.append((node, kind, inputs, outputs))
        if kind in _MODEL_TYPES:
            node.kind = "model"
            node.text, node.parts = model_output(outputs)
            node.messages = input_messages(inputs)
            usage = _attr(attrs, "mlflow.chat.tokenUsage")
            if not isinstance(usage, dict):
                usage = outputs.get("usage") if isinstance(outputs, dict) else None
            node.input_tokens = count(usage, "input_tokens", "prompt_tokens")
            node.output_tokens = count(usage, "output_tokens", "completion_tokens")
        elif kind == "TOOL":
            if not isinstance(node.name, str) or not node.name:
                fail("a TOOL span has no name", field=f"data.spans[{i}].name", case_id=cid)
            node.kind, node.arguments, node.result, node.error = "tool", inputs, outputs, _exception(span)
        else:
            if kind == "RETRIEVER":
                retrieved += passages(outputs)
            if _exception(span):
                errors.append({"span": node.id, "type": kind, "name": node.name, "error": _exception(span)})
        nodes.append(node)
    built = assemble(nodes)
    built["retrieved"] = retrieved
    ids = {n.id for n in nodes}
    agents = [r for r in rows if r[1] == "AGENT"]
    top = next((r for r in agents if r[0].parent not in {a[0].id for a in agents}), None)
    top = top or next((r for r in rows if not r[0].parent or r[0].parent not in ids), None)
    said = [m["content"] for m in built["user_messages"]]
    case_input = _text(top[2]) if top is not None and top[2] is not None else None
    if not isinstance(case_input, str) and said:  # a function's several arguments: the user's own words are the input
        case_input = said[0]
    if top is not None and top[3] is not None:
        answer = _text(top[3])
        built["output"] = answer if isinstance(answer, str) else json.dumps(answer, default=str)
    if not built["user_messages"] and isinstance(case_input, str):
        built["user_messages"] = [{"step": 0, "content": case_input}]
    ms = count(info, "execution_duration_ms", "execution_time_ms")
    if ms is not None:
        built["usage"]["latency_s"] = ms / 1000
    meta = info.get("trace_metadata") or info.get("request_metadata") or {}
    tags = info.get("tags") if isinstance(info.get("tags"), dict) else {}
    found = {"trace_name": tags.get("mlflow.traceName"), "state": info.get("state") or info.get("status"),
             "session": meta.get("mlflow.trace.session") if isinstance(meta, dict) else None,
             "user": meta.get("mlflow.trace.user") if isinstance(meta, dict) else None,
             "tags": {k: v for k, v in tags.items() if not str(k).startswith("mlflow.")} or None,
             "errors": errors or None}
    return build_case({"id": cid, "input": case_input, "turns": said[1:], "metadata": {"mlflow": {k: v for k, v in found.items() if v}},
                       "trace": built})


register_format(Format("mlflow", read=read_lines, adapt=adapt, options=NoOptions))
