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

An agent run can end at a tool call (`tool_use_behavior="stop_on_first_tool"`
or `StopAtTools`): its `final_output` is a tool's output, and no model
request follows the call. The SDK records neither the behaviour nor the
final output, so `stopped_runs` reads it off the run's shape (for any
convention that records the SDK's spans; format `openai-agents` puts what
it found on the agent span as `openai_agents.final_output`, which is the
agent's answer here). See `stopped_runs` for what the trace cannot tell.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tracejudge.stages.extract.otel.conventions.langfuse import usage_pair
from tracejudge.stages.extract.otel.messages import normalise, response_output
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, present

__all__ = ["FINAL_OUTPUT", "NAME", "error_text", "read", "stopped_runs"]

NAME = "openai-agents"
_ROLES = {"function": "tool", "generation": "model", "response": "model", "agent": "agent"}
FINAL_OUTPUT = "openai_agents.final_output"  # set by format `openai-agents` (not the SDK): a run's output that was a tool's


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
        answer = span.attrs.get(FINAL_OUTPUT)
        v.answer = answer if isinstance(answer, str) and answer else None
    return v


def stopped_runs(spans: list[Span], kind: Callable[[Span], str | None], view: Callable[[Span], View]) -> list[tuple[Span, Span, str]]:
    """`(agent span, tool span, final output text)` of every Agents SDK run that ended at a tool call.

    `kind(span)` says what a span of the SDK is: `agent`, `model` (a
    generation or response), `tool` (a function call), `handoff`, or `None`;
    `view(span)` is its reading (the agent's `error`, the model's `outputs`,
    the tool's `result`). A span's run is its nearest agent ancestor; spans
    under a tool span (an agent called as a tool) belong to that call, not to
    the run around it. The SDK's loop is strictly model request → its tools
    → next request, so tool spans starting after the run's last model request
    started are that request's calls: when there are some, and the agent span
    records no error (max_turns, a tool raising out of the run, a tripped
    guardrail: those mark it) and no handoff left the agent after that request,
    no model request followed the calls and the run's `final_output` is a
    tool's output. A normal run always ends with a request that gives text.

    What the trace cannot tell: which tool it was when the last request made
    several calls (`stop_on_first_tool` returns the first in the model's
    order, taken here; `StopAtTools` naming a later one returns that one's);
    a custom `tool_use_behavior` function, whose `final_output` may be any
    value (the first call's output is taken); a tool output not recorded
    (`trace_include_sensitive_data=False`: no output, nothing is taken); and
    a run stopped from outside (a cancelled task) that left no error on its
    agent span, which reads as a stop at the tool. A non-text output is given
    as JSON.
    """
    index = {s.span_id: s for s in spans}

    def owner(span: Span) -> Span | None:
        """The nearest agent span above `span`; `None` when a tool span comes first (inside a call)."""
        node, hops = span, 0
        while node.parent_id in index and hops < 10_000:
            node, hops = index[node.parent_id], hops + 1  # type: ignore[index]
            k = kind(node)
            if k == "tool":
                return None
            if k == "agent":
                return node
        return None

    own: dict[str, dict[str, list[Span]]] = {}
    for span in spans:
        k = kind(span)
        if k in ("model", "tool", "handoff") and (agent := owner(span)) is not None:
            own.setdefault(agent.span_id, {}).setdefault(k, []).append(span)
    out = []
    for agent_id, mine in own.items():
        agent = index[agent_id]
        if not mine.get("model") or not mine.get("tool") or view(agent).error:
            continue
        if _in_tool(agent, index, kind):
            continue  # an agent called as a tool: its output is that call's result, not the case's
        last = max(mine["model"], key=lambda s: (s.start, s.span_id))
        after = sorted((t for t in mine["tool"] if t.start >= last.start), key=lambda s: (s.start, s.span_id))
        if not after or any(h.start >= last.start for h in mine.get("handoff", [])):
            continue
        tool = _first_called(after, view(last).outputs, view)
        result = view(tool).result
        if present(result) and result is not None:
            out.append((agent, tool, result if isinstance(result, str) else json.dumps(result, default=str)))
    return out


def _in_tool(span: Span, index: dict[str, Span], kind: Callable[[Span], str | None]) -> bool:
    node, hops = span, 0
    while node.parent_id in index and hops < 10_000:
        node, hops = index[node.parent_id], hops + 1  # type: ignore[index]
        if kind(node) == "tool":
            return True
    return False


def _first_called(tools: list[Span], outputs: list[dict[str, Any]] | None, view: Callable[[Span], View]) -> Span:
    """Of the tool spans of one request, the model's first call that has one (by name), else the first that started.

    The Agents SDK records no call id on a function span; the request's output (chat messages) names its calls in
    order. A Responses API request's output is not in the export: the SDK starts the calls in the model's order.
    """
    names = [p.get("name") for m in outputs or [] for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "tool_call"]
    for name in names:
        found = next((t for t in tools if view(t).tool_name == name), None)
        if found is not None:
            return found
    return tools[0]


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
