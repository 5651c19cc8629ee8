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
A LangChain retriever's span (`gen_ai.operation.name` `vector_db_retrieve`,
written as a `task`) is a retrieval: its passages are the `Document`s of
`{"documents": […]}` in its output (text, and the id, score and source their
metadata holds), its question the `query` of its input.

A tool span's result is LangChain's `on_tool_end` payload, `{"output": …,
"kwargs": {…, "name": <tool>}}`: with ToolNode the output is a `ToolMessage`,
with a tool invoked on plain arguments (`tool.invoke(args)` in a custom graph
node) the tool's bare return value. Both are unwrapped, the latter only when
`kwargs.name` is the span's tool (see `payloads.unwrap_result`).

A LangChain model call whose arguments were not JSON (`invalid_tool_calls`)
is missing from the model span's output messages; the chains around it
record the `AIMessage` whole. `invalid_calls` (run on a whole group)
gives the model span those calls, with their raw arguments text, from the
enclosing chain output whose message carries the span's response id.

A LangGraph agent that a tool runs (`researcher.invoke(...)` in the tool's body) is an `invoke_agent <name>` span under
the tool's `execute_tool` span, beside (not around) the graph's own spans that hold its model requests: nothing above
those requests names the agent that made them. `delegated_agents` (on a whole group) gives the tool's view that name,
with which `nesting` labels the steps made inside the call (the other LangChain instrumentations name it only as the
graph's chain span: `graph_names`).
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.conventions.genai import span_error
from tracejudge.stages.extract.otel.conventions.graph_names import name_calls
from tracejudge.stages.extract.otel.conventions.openinference import answer_text, request_text
from tracejudge.stages.extract.otel.conventions.openllmetry_mcp import mcp_call
from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.payloads import documents, unwrap_args, unwrap_result
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.dropped import front_cut, indexed
from tracejudge.stages.extract.otel.view import View, as_int, nested, present, unjson
from tracejudge.stages.extract.otel.wrapped import HOPS

__all__ = ["NAME", "callback_results", "delegated_agents", "invalid_calls", "read"]

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
        found = indexed(prompts)  # (a history that lost its first messages to the attribute limit: from its first whole one, `dropped`)
        if found is not None:
            v.input_start, _, whole = front_cut(found, span.dropped_attributes > 0, lambda p: isinstance(p, dict) and bool(p.get("role")))
            v.inputs = normalise([_parts_text(p) if span.scope == _VERTEXAI else p for p in whole if isinstance(p, dict)])
        v.outputs = normalise([{"role": "assistant", **c} for c in completions if isinstance(c, dict)]) if isinstance(completions, list) else None
        v.usage_in = as_int(a.get("gen_ai.usage.prompt_tokens", a.get("gen_ai.usage.input_tokens")))
        v.usage_out = as_int(a.get("gen_ai.usage.completion_tokens", a.get("gen_ai.usage.output_tokens")))
        v.error = span_error(span)
        return v
    if a.get("gen_ai.operation.name") == "vector_db_retrieve" or span.name.startswith("vector_db_retrieve "):
        return _retrieval(a)
    v.role = _KINDS.get(str(kind))
    entity = a.get("traceloop.entity.name")
    if v.role == "tool":
        v.tool_name = entity if isinstance(entity, str) and entity else span.name.removesuffix(".tool")
        if present(a.get("traceloop.entity.input")):
            v.args, v.args_wrapped = unwrap_args(a["traceloop.entity.input"])
        if present(a.get("traceloop.entity.output")):
            v.result, v.error, v.call_id = unwrap_result(a["traceloop.entity.output"], tool_name=v.tool_name)
        v.error = span_error(span) or v.error
        mcp_call(span, v)  # the MCP client instrumentation's own wrappers around a `tools/call`'s arguments and result
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


_VERTEXAI = "opentelemetry.instrumentation.vertexai"


def _parts_text(prompt: dict[str, Any]) -> dict[str, Any]:
    """`prompt` with its content read as the list of content parts whose JSON text OpenLLMetry's vertexai instrumentation
    (0.62) writes as `gen_ai.prompt.{i}.content` (`[{"type": "text", "text": …}]`); unchanged when it holds no such list."""
    content = prompt.get("content")
    if isinstance(content, str) and content.startswith("[{"):
        parts = unjson(content)
        if isinstance(parts, list) and all(isinstance(x, dict) and isinstance(x.get("type"), str) for x in parts):
            return {**prompt, "content": parts}
    return prompt


def _retrieval(a: dict[str, Any]) -> View:
    """A LangChain retriever's run (`on_retriever_*`): a `task` span holding `{"query", …}` in and `{"documents": […]}` out."""
    v = View(role="retrieval")
    raw = a.get("traceloop.entity.output", a.get("gen_ai.task.output"))
    v.documents = documents(raw) if present(raw) else None
    asked = unjson(a.get("traceloop.entity.input", a.get("gen_ai.task.input")))
    query = asked.get("query") if isinstance(asked, dict) else None
    v.query = query if isinstance(query, str) and query.strip() else None
    return v


def callback_results(spans: list[Span], views: dict[str, View]) -> None:
    """Give OpenLLMetry's LangChain tool spans their result out of LangChain's `on_tool_end` payload (in `views`).

    The instrumentation writes the same payload as `gen_ai.tool.call.result`, which the GenAI reader
    reads first and without the tool's name, so keeps `{"output": …, "kwargs": {…}}` whole when the
    output is a tool's bare value. Here the span is known to be OpenLLMetry's (`traceloop.span.kind` is
    `tool`) and its tool's name is known: the payload is unwrapped as `read` does, once, and only when
    `kwargs.name` is that tool (`payloads.unwrap_result`). A view whose result is not that payload as
    the GenAI reader left it is not touched.
    """
    for span in spans:
        view = views.get(span.span_id)
        a = span.attrs
        if view is None or view.role != "tool" or a.get("traceloop.span.kind") != "tool" or not view.tool_name:
            continue
        raw = a.get("traceloop.entity.output", a.get("gen_ai.tool.call.result"))
        if not present(raw):
            continue
        plain = unwrap_result(raw)
        named = unwrap_result(raw, tool_name=view.tool_name)
        if named != plain and view.result == plain[0]:
            view.result = named[0]
            view.error = view.error or named[1]
            view.call_id = view.call_id or named[2]


def delegated_agents(spans: list[Span], views: dict[str, View]) -> None:
    """Give each OpenLLMetry tool span the name of the agent run beside its steps (module docstring), in `views`.

    Only a tool span (`traceloop.span.kind` `tool`) without an agent name of its own, whose agent children
    (`gen_ai.agent.name`) name one agent, and not LangGraph's name for an unnamed graph.
    """
    named: dict[str, set[str]] = {}
    kinds = {s.span_id: s.attrs.get("traceloop.span.kind") for s in spans}
    for span in spans:
        name = span.attrs.get("gen_ai.agent.name")
        if span.parent_id is not None and isinstance(name, str) and name and views[span.span_id].role == "agent":
            named.setdefault(span.parent_id, set()).add(name)
    name_calls({sid: found for sid, found in named.items() if kinds.get(sid) == "tool"}, views)  # (`graph_names`' rule)


def invalid_calls(spans: list[Span], views: dict[str, View]) -> None:
    """Give each model span of `spans` the LangChain `invalid_tool_calls` its enclosing chains recorded (in `views`).

    OpenLLMetry's LangChain instrumentation writes a model span's output messages from the parsed
    `tool_calls` alone: a call whose arguments were not JSON is lost there, though the model asked for
    it. The chain spans above it (`RunnableSequence`, the graph node) record the `AIMessage` with its
    `invalid_tool_calls`; the message is the span's when its `response_metadata.id` is the span's
    `gen_ai.response.id` (without a response id nothing is added: another request's message could
    be taken). A call already in the span's output (same id) is not added twice.
    """
    index = {s.span_id: s for s in spans}
    for span in spans:
        view = views.get(span.span_id)
        rid = span.attrs.get("gen_ai.response.id")
        if view is None or view.role != "model" or not isinstance(rid, str) or not rid:
            continue
        found: list[dict[str, Any]] = []
        node, hops = index.get(span.parent_id or ""), 0
        while node is not None and not found and hops < HOPS:  # the nearest chain that recorded this response
            found = _invalid_parts(node, rid)
            node, hops = index.get(node.parent_id or ""), hops + 1
        have = {p.get("id") for m in view.outputs or [] for p in m.get("parts") or [] if p.get("type") == "tool_call"}
        new = [p for p in found if p.get("id") is None or p["id"] not in have]
        if new:
            outputs = [dict(m) for m in view.outputs or []]
            target = next((m for m in reversed(outputs) if m.get("role") == "assistant"), None)
            if target is None:
                outputs.append(target := {"role": "assistant", "parts": []})
            target["parts"] = [*(target.get("parts") or []), *new]
            view.outputs = outputs


def _invalid_parts(span: Span, response_id: str) -> list[dict[str, Any]]:
    """The invalid tool-call parts of the `AIMessage` with `response_id` in `span`'s recorded chain output."""
    out = unjson(span.attrs.get("traceloop.entity.output"))
    out = out.get("outputs") if isinstance(out, dict) and "outputs" in out else out
    out = out.get("messages") if isinstance(out, dict) and isinstance(out.get("messages"), list) else out
    for raw in out if isinstance(out, list) else [out]:
        fields = raw.get("kwargs") if isinstance(raw, dict) and isinstance(raw.get("kwargs"), dict) else raw
        meta = fields.get("response_metadata") if isinstance(fields, dict) else None
        if isinstance(meta, dict) and meta.get("id") == response_id and fields.get("invalid_tool_calls"):
            msgs = normalise([raw]) or []
            return [p for m in msgs for p in m.get("parts") or [] if p.get("type") == "tool_call" and "invalid" in p]
    return []
