"""OpenLLMetry / Traceloop (`opentelemetry-instrumentation-openai`, `-langchain`, … and the Traceloop SDK).

What counts: `traceloop.span.kind` `tool` is a tool call, `agent` an agent
run, `workflow` / `task` a chain (a turn anchor at the root); a span with
`llm.request.type` `chat` / `completion` is a model request. Model messages
come from the flattened `gen_ai.prompt.{i}.*` / `gen_ai.completion.{i}.*`
(`role`, `content`, `tool_calls.{j}.{id,name,arguments}`, `tool_call_id`;
the older `llm.prompts.*` / `llm.completions.*` too); usage from
`gen_ai.usage.prompt_tokens` / `completion_tokens` (or the input/output
names). Tool and workflow payloads are `traceloop.entity.input` /
`traceloop.entity.output` (JSON), unwrapped from LangChain's callback
payload and `{"output": ToolMessage}`; the name is `traceloop.entity.name`.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.conventions.genai import span_error
from tracejudge.stages.extract.otel.conventions.openinference import answer_text, request_text
from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.payloads import unwrap_args, unwrap_result
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, as_int, nested, present, unjson

__all__ = ["NAME", "read"]

NAME = "openllmetry"
_KINDS = {"tool": "tool", "agent": "agent", "workflow": "chain", "task": "chain"}


def read(span: Span) -> View | None:
    """The OpenLLMetry reading of `span`, or `None` when it carries none of its keys."""
    a = span.attrs
    kind = a.get("traceloop.span.kind")
    req_type = a.get("llm.request.type")
    prompts = nested(a, "gen_ai.prompt") or nested(a, "llm.prompts")
    completions = nested(a, "gen_ai.completion") or nested(a, "llm.completions")
    if not isinstance(kind, str) and req_type is None and prompts is None and completions is None:
        return None
    v = View()
    if req_type in ("chat", "completion") or (kind is None and (prompts is not None or completions is not None)):
        v.role = "model"
        v.inputs = normalise([p for p in prompts if isinstance(p, dict)]) if isinstance(prompts, list) else None
        v.outputs = normalise([{"role": "assistant", **c} for c in completions if isinstance(c, dict)]) if isinstance(completions, list) else None
        v.usage_in = as_int(a.get("gen_ai.usage.prompt_tokens", a.get("gen_ai.usage.input_tokens")))
        v.usage_out = as_int(a.get("gen_ai.usage.completion_tokens", a.get("gen_ai.usage.output_tokens")))
        v.error = span_error(span)
        return v
    v.role = _KINDS.get(str(kind))
    entity = a.get("traceloop.entity.name")
    if v.role == "tool":
        v.tool_name = entity if isinstance(entity, str) and entity else span.name.removesuffix(".tool")
        if present(a.get("traceloop.entity.input")):
            v.args, v.args_wrapped = unwrap_args(a["traceloop.entity.input"])
        if present(a.get("traceloop.entity.output")):
            v.result, v.error, v.call_id = unwrap_result(a["traceloop.entity.output"])
        v.error = span_error(span) or v.error
    elif v.role in ("agent", "chain"):
        raw_in = unjson(a.get("traceloop.entity.input"))
        if isinstance(raw_in, dict) and isinstance(raw_in.get("inputs"), (dict, list, str)):
            raw_in = raw_in["inputs"]  # LangChain's callback payload around the graph's input
        raw_out = unjson(a.get("traceloop.entity.output"))
        if isinstance(raw_out, dict) and isinstance(raw_out.get("outputs"), (dict, list, str)):
            raw_out = raw_out["outputs"]
        v.request = request_text(raw_in)
        v.answer = answer_text(raw_out)
        if v.role == "agent" and isinstance(entity, str) and entity:
            v.agent_name = entity
        v.error = span_error(span)
    return v
