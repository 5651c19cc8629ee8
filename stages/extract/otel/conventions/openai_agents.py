"""The OpenAI Agents SDK's own tracing (`Span.export()`), as format `openai-agents` puts it in a span.

The format keeps an exported span's `span_data` as the attribute
`openai_agents.span_data` and its `error` as `openai_agents.error`. What
counts, by `span_data.type`: `function` is a tool call (`name`; `input`, the
JSON the model sent, is the arguments; `output` the result; the span's
`error` `{message, data}` the error, as `"<message>: <data.error>"`);
`generation` (Chat Completions models) and `response` (Responses API
models) are model requests (a generation's `input` / `output` messages;
`usage.input_tokens` / `output_tokens`); `agent` is an agent run named by
`name` (its `error` the run's failure). `handoff`, `guardrail` and `custom` spans are noise (the format
lists them in its metadata); a handoff the model asked for
(`transfer_to_<agent>`) is a call through the model's own tool-call part.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.stages.extract.otel.conventions.langfuse import usage_pair
from tracejudge.stages.extract.otel.messages import normalise, response_output
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, present

__all__ = ["NAME", "error_text", "read"]

NAME = "openai-agents"
_ROLES = {"function": "tool", "generation": "model", "response": "model", "agent": "agent"}


def read(span: Span) -> View | None:
    """The Agents SDK reading of `span`, or `None` when it has no `openai_agents.span_data`."""
    data = span.attrs.get("openai_agents.span_data")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        return None
    kind = data["type"]
    v = View(role=_ROLES.get(kind))
    error = error_text(span.attrs.get("openai_agents.error"))
    if v.role == "tool":
        name = data.get("name")
        v.tool_name = name if isinstance(name, str) and name else None
        if present(data.get("input")):
            v.args = data["input"]
        if data.get("output") is not None:
            v.result = data["output"]
        v.error = error
    elif v.role == "model":
        if kind == "generation":
            v.inputs = normalise(data.get("input"))
            # A streamed run records the model's answer as the Responses API response it was streamed as.
            v.outputs = response_output(data.get("output")) or normalise(data.get("output"))
        v.usage_in, v.usage_out = usage_pair(data.get("usage"))
        v.error = error
    elif v.role == "agent":
        name = data.get("name")
        v.agent_name = name if isinstance(name, str) and name else None
        v.error = error  # the run's own failure ("Max turns exceeded", "Error in agent run: …")
    return v


def error_text(err: Any) -> str | None:
    """A span's `error` (`{message, data}`) as `"<message>: <data.error>"` (the data as JSON when it has no `error` text)."""
    if not err:
        return None
    if not isinstance(err, dict):
        return str(err)
    message = str(err.get("message") or "error")
    data = err.get("data")
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return f"{message}: {data['error']}"
    return f"{message}: {json.dumps(data, default=str)}" if data else message
