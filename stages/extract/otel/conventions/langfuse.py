"""Langfuse's Python SDK (version 3 on, built on OpenTelemetry).

What counts: `langfuse.observation.type` `generation` is a model request,
`tool` a tool call, `agent` an agent run, `span` / `chain` a chain (an anchor
at the root; so is an `agent` that is a LangGraph node, one whose metadata
names `langgraph_node`, as Langfuse's LangChain handler types the node
named "agent"), `retriever` a retrieval; `event`, `embedding`, `guardrail`,
`evaluator` are noise. Payloads are `langfuse.observation.input` / `output`
(JSON): a generation's input is its message list, its output the assistant
message (or a completion body); a tool's input is the call's arguments
(unwrapped from `@observe`'s `{"args", "kwargs"}`: keyword arguments by name, positional
ones, which it records unnamed, as a list under `args`), its output the result.
Level `ERROR` with `langfuse.observation.status_message` (or an ERROR
status) is the error. `langfuse.trace.input` / `output` (SDK 3), else the
root observation's, are the request and the answer; usage comes from
`langfuse.observation.usage_details` (`input` / `output`, or the OpenAI names).
A tool's call id is `langfuse.observation.metadata.tool_call_id` when
recorded (SDK 5 writes metadata values as JSON text: `"\"call_1\""`); a
retriever's output gives the retrieved passages. Langfuse's LangChain
`CallbackHandler` records a ToolNode tool's output as the serialised
`ToolMessage`: its `content` is the result when it names the span's tool or
call (see `payloads.tool_message_result`). A `span`
named like a tool the trace's model asked for is that tool's call (see
`promote_tool_spans`), as the `langfuse` format reads a `SPAN`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tracejudge.stages.extract.otel.conventions.genai import span_error
from tracejudge.stages.extract.otel.conventions.openinference import answer_text, request_text
from tracejudge.stages.extract.otel.messages import normalise, normalise_one
from tracejudge.stages.extract.otel.payloads import documents, tool_message_result, unwrap_args
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, as_int, present, unjson

__all__ = ["NAME", "read", "generation_outputs", "promote_tool_spans", "split_back", "usage_pair"]

NAME = "langfuse"
_ROLES = {"generation": "model", "tool": "tool", "agent": "agent", "span": "chain", "chain": "chain", "retriever": "retrieval"}


def read(span: Span) -> View | None:
    """The Langfuse reading of `span`, or `None` when it has no `langfuse.observation.type`."""
    a = span.attrs
    kind = a.get("langfuse.observation.type")
    if not isinstance(kind, str) and "langfuse.trace.input" not in a and "langfuse.trace.output" not in a:
        return None
    v = View(role=_ROLES.get(str(kind).lower()))
    if v.role == "agent" and "langfuse.observation.metadata.langgraph_node" in a:
        v.role = "chain"  # the LangChain handler types LangGraph's node named "agent" as an agent: it is a step of the graph
    raw_in, raw_out = a.get("langfuse.observation.input", MISSING), a.get("langfuse.observation.output", MISSING)
    error = span_error(span)
    if str(a.get("langfuse.observation.level", "")).upper() == "ERROR":
        msg = a.get("langfuse.observation.status_message")
        error = error or (str(msg) if present(msg) and msg != "" else "error")
    v.error = error
    if v.role == "model":
        v.inputs = normalise(raw_in) if raw_in is not MISSING else None
        v.outputs = generation_outputs(unjson(raw_out)) if raw_out is not MISSING else None
        v.usage_in, v.usage_out = usage_pair(unjson(a.get("langfuse.observation.usage_details")))
    elif v.role == "tool":
        v.tool_name = span.name
        if present(raw_in):
            v.args, v.args_wrapped = unwrap_args(raw_in)
            v.args = _call_args(v.args)
        cid = unjson(a.get("langfuse.observation.metadata.tool_call_id"))
        v.call_id = str(cid) if present(cid) and cid != "" and not isinstance(cid, (dict, list)) else None
        if present(raw_out):
            msg = tool_message_result(raw_out, v.tool_name, v.call_id)
            if msg is None:
                v.result = unjson(raw_out)
            else:
                v.result, error, v.call_id = msg[0], msg[1], v.call_id or msg[2]
                v.error = v.error or error
    elif v.role == "retrieval":
        v.documents = documents(raw_out) if present(raw_out) else None
    elif v.role in ("agent", "chain") or kind is None:
        request = a.get("langfuse.trace.input", raw_in)
        answer = a.get("langfuse.trace.output", raw_out)
        v.request = request_text(_kwargs(request)) if present(request) else None
        v.answer = answer_text(answer) if present(answer) else None
        if v.role == "agent":
            v.agent_name = span.name
    return v


def promote_tool_spans(spans: list[Span], views: dict[str, View]) -> None:
    """Read each `span` observation of `spans` named like a tool a model request asked for as that tool's call (in `views`).

    Langfuse's SDK before `as_type="tool"` (3.2 and earlier: `@observe` knows only `generation`)
    records an observed tool function as a plain `span`: its arguments, result and ERROR level
    are then the call's.
    """
    asked = {p.get("name") for v in views.values() if v.role == "model" for m in v.outputs or [] for p in m.get("parts") or [] if p.get("type") == "tool_call"}
    for span in spans:
        view = views.get(span.span_id)
        if view is None or view.role != "chain" or span.attrs.get("langfuse.observation.type") != "span" or span.name not in asked:
            continue
        tool = read(dataclasses.replace(span, attrs={**span.attrs, "langfuse.observation.type": "tool"}))
        if tool is not None:
            tool.conventions = view.conventions
            views[span.span_id] = tool


def _call_args(args: Any) -> Any:
    """A tool's arguments out of what `@observe` recorded: `{"args": [<positional>], "kwargs": {<keyword>}}` (the SDK's
    `_get_input_from_func_args`, `self`/`cls` left out), with no parameter names.

    Keyword arguments are the call's by name; positional ones, whose names the record does not hold, stay a list under
    `args` (a name guessed would be a name the call never had); a call with neither has `{}`. So `f("#W1", note="x")`
    reads `{"args": ["#W1"], "note": "x"}`, and `f(order_id="#W1")` `{"order_id": "#W1"}` (`unwrap_args`). A keyword
    argument named `args` keeps the record whole. The model's tool-call part, when there is one, still gives the names."""
    if not (isinstance(args, dict) and set(args) == {"args", "kwargs"}):
        return args
    positional, keyword = args["args"] if args["args"] is not None else [], args["kwargs"] if args["kwargs"] is not None else {}
    if not isinstance(positional, list) or not isinstance(keyword, dict) or "args" in keyword:
        return args
    return {**({"args": positional} if positional else {}), **keyword}


def _kwargs(value: Any) -> Any:
    """`@observe` records a function's inputs as `{"args": [...], "kwargs": {...}}`."""
    got, wrapped = unwrap_args(value)
    if wrapped and isinstance(got, dict) and set(got) == {"args", "kwargs"}:
        args = got.get("args") or []
        if len(args) == 1:
            return args[0]
    return got


def generation_outputs(value: Any) -> list[dict[str, Any]] | None:
    """Output messages of a generation: an assistant message, a message list, or a completion body."""
    if isinstance(value, dict) and isinstance(value.get("choices"), list):
        return normalise([c.get("message") for c in value["choices"] if isinstance(c, dict)])
    if isinstance(value, dict):
        msg = normalise_one({"role": "assistant", **value} if "role" not in value else value)
        return [msg] if msg is not None else None
    if isinstance(value, list):
        return normalise(value)
    if isinstance(value, str) and value:
        return [{"role": "assistant", "parts": [{"type": "text", "content": value}]}]
    return None


def split_back(usage: dict[str, Any], side: str) -> int | None:
    """All the `side` (`"input"` or `"output"`) tokens of a usage mapping in Langfuse's names: `usage[side]` plus each
    `<side>_<kind>` count; `None` without `usage[side]`.

    Langfuse's usage types are disjoint and add up to `total`: its LangChain handler takes each `input_token_details` /
    `output_token_details` count (`cache_read`, `reasoning`, ...) out of `input` / `output` and lists it as
    `input_cache_read`, `output_reasoning`, ... (`priority*` tiers are the exception: not taken out, so not added back).
    Without them a reasoning model's output and a cached prompt read short.
    """
    base = as_int(usage.get(side))
    if base is None:
        return None
    head = side + "_"
    parts = (as_int(v) for k, v in usage.items() if isinstance(k, str) and k.startswith(head) and k != side + "_tokens"
             and not k[len(head):].startswith("priority"))
    return base + sum(n for n in parts if n is not None)


def usage_pair(usage: Any) -> tuple[int | None, int | None]:
    """`(input, output)` tokens of a usage mapping in Langfuse's names (`split_back`), else OpenAI's; `(None, None)` for
    anything but a mapping."""
    if not isinstance(usage, dict):
        return None, None
    ins = split_back(usage, "input")
    outs = split_back(usage, "output")
    if ins is None:
        ins = next((as_int(usage[k]) for k in ("prompt_tokens", "input_tokens") if as_int(usage.get(k)) is not None), None)
    if outs is None:
        outs = next((as_int(usage[k]) for k in ("completion_tokens", "output_tokens") if as_int(usage.get(k)) is not None), None)
    return ins, outs
