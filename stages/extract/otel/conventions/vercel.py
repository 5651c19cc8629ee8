"""The Vercel AI SDK's telemetry (`experimental_telemetry`).

What counts: `ai.*.doGenerate` / `ai.*.doStream` spans are model requests
(messages in `ai.prompt.messages`, answer in `ai.response.text`, calls in
`ai.response.toolCalls`), `ai.toolCall` spans are tool calls
(`ai.toolCall.{name,id,args,result}`, or `input` / `output` in AI SDK 5),
and the outer `ai.generateText` / `ai.streamText` / `ai.generateObject`
span is the run: its `ai.prompt` is the request, `ai.response.text` the
answer. Usage from `ai.usage.promptTokens` / `completionTokens` (or
`inputTokens` / `outputTokens`). The operation is `ai.operationId`, else the
span name.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.conventions.genai import span_error
from tracejudge.stages.extract.otel.conventions.openinference import request_text
from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, as_int, present, tool_call_part, unjson

__all__ = ["NAME", "read"]

NAME = "vercel-ai"
_RUNS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")


def read(span: Span) -> View | None:
    """The AI SDK reading of `span`, or `None` when it is not one of its spans."""
    a = span.attrs
    op = a.get("ai.operationId") if isinstance(a.get("ai.operationId"), str) else span.name
    if not op.startswith("ai."):
        return None
    v = View()
    if op.endswith((".doGenerate", ".doStream")):
        v.role = "model"
        v.inputs = normalise(a.get("ai.prompt.messages"))
        parts: list[dict[str, Any]] = []
        text = a.get("ai.response.text")
        if isinstance(text, str) and text:
            parts.append({"type": "text", "content": text})
        for tc in unjson(a.get("ai.response.toolCalls")) or []:
            if isinstance(tc, dict):
                parts.append(tool_call_part(tc.get("toolCallId"), tc.get("toolName"), tc.get("args", tc.get("input"))))
        v.outputs = [{"role": "assistant", "parts": parts}] if parts else []
        v.usage_in = as_int(a.get("ai.usage.promptTokens", a.get("ai.usage.inputTokens")))
        v.usage_out = as_int(a.get("ai.usage.completionTokens", a.get("ai.usage.outputTokens")))
        v.error = span_error(span)
    elif op == "ai.toolCall":
        v.role = "tool"
        v.tool_name = a.get("ai.toolCall.name") if isinstance(a.get("ai.toolCall.name"), str) else None
        cid = a.get("ai.toolCall.id")
        v.call_id = str(cid) if present(cid) else None
        args = a.get("ai.toolCall.args", a.get("ai.toolCall.input", MISSING))
        v.args = args if present(args) else MISSING
        result = a.get("ai.toolCall.result", a.get("ai.toolCall.output", MISSING))
        v.result = unjson(result) if present(result) else MISSING
        v.error = span_error(span)
    elif op in _RUNS:
        v.role = "agent"
        prompt = unjson(a.get("ai.prompt"))
        if isinstance(prompt, dict) and isinstance(prompt.get("prompt"), str):
            v.request = prompt["prompt"]
        else:
            v.request = request_text(prompt)
        text = a.get("ai.response.text")
        v.answer = text if isinstance(text, str) and text else None
        v.error = span_error(span)
    return v
