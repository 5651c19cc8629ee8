"""Framework payloads that tracers record in place of a tool's arguments or result.

Instrumentations record what the framework hands its callback, not what the
model sent: smolagents' `{"args": [...], "kwargs": {...},
"sanitize_inputs_outputs": ...}`, LangChain's `{"input_str", "inputs",
"tags", "metadata"}` callback payload (with `input_str` a Python `repr`),
Langfuse's `@observe` `{"args", "kwargs"}`, and results as a serialised
LangChain `ToolMessage` (or `{"output": ToolMessage}`, or OpenLLMetry's
`{"output": <return value>, "kwargs": {..., "name": <tool>}}`). These helpers
take the real value out; whenever they had to, the assembler prefers the
model's own tool-call part for arguments. `failed_tool_messages` finds the
`ToolMessage`s with `status: "error"` a LangGraph run recorded on its chain
spans (see there).
"""

from __future__ import annotations

import io
import tokenize
from typing import Any

from tracejudge.stages.extract.common import maybe_json, python_literal
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, unjson

__all__ = ["command_message", "documents", "failed_tool_messages", "tool_message_result", "unwrap_args", "unwrap_result"]

_LC_TOOL_MESSAGE = ("ToolMessage", "ToolMessageChunk")


def unwrap_args(value: Any) -> tuple[Any, bool]:
    """`(arguments, wrapped)`: the call's arguments out of a framework payload.

    `wrapped` is True when `value` was a known wrapper or a bare value (a
    one-argument LangChain tool records only the value, so the parameter's
    name is lost): the model's part should then win.
    """
    value = unjson(value)
    if isinstance(value, dict):
        keys = set(value)
        if {"args", "kwargs"} <= keys and keys <= {"args", "kwargs", "sanitize_inputs_outputs", "self"}:
            args, kwargs = value.get("args") or [], value.get("kwargs") or {}
            if isinstance(kwargs, dict) and kwargs and not args:
                return kwargs, True
            if isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict) and not kwargs:
                return args[0], True  # smolagents passes the model's arguments as one positional mapping
            return value, True
        if "input_str" in keys and keys <= {"input_str", "inputs", "tags", "metadata", "name", "run_id", "parent_run_id", "serialized", "kwargs"}:
            inputs = value.get("inputs")
            if isinstance(inputs, dict) and inputs:
                return inputs, True
            return _literal(value.get("input_str")), True
        return value, False
    if value is None:
        return value, False
    return value, True  # a bare string or number: the parameter's name was not recorded


def _literal(text: Any) -> Any:
    """LangChain's `input_str` is `str(dict)`: read it as a Python literal (never evaluated as code)."""
    if not isinstance(text, str):
        return text
    decoded = unjson(text)
    if decoded is not text:
        return decoded
    return python_literal(text, text) if len(text) < 1_000_000 else text


def unwrap_result(value: Any, tool_name: str | None = None, call_id: str | None = None) -> tuple[Any, str | None, str | None]:
    """`(result, error, call_id)`: the tool's result out of a framework payload.

    A LangChain `ToolMessage` (serialised with `dumpd`, with
    `messages_to_dict`, as a plain dict, or under `{"output": ...}`) gives
    its `content` and the `tool_call_id` it answers; its `status: "error"`
    gives an error carrying that content. So does the `ToolMessage` in a
    LangGraph `Command(update={"messages": [...]})` a tool returned
    (`command_message`: the message the model got, not the Command).

    `tool_name` is for a caller that knows the span is OpenLLMetry's
    LangChain tool span, which records `on_tool_end` as `{"output": <what the
    tool returned>, "kwargs": <the callback's kwargs>}` whatever the tool
    returned: a tool invoked with plain arguments (`tool.invoke(args)` in a
    custom graph node, not ToolNode) returns its bare value, not a
    `ToolMessage`. That wrapper is removed, once, only when `kwargs.name` is
    `tool_name` (LangChain passes the tool's own name there); a tool whose
    own result has that shape keeps it, one level in. Without `tool_name`
    (any other convention) such a mapping is the tool's own value.

    Text is decoded when it holds a JSON object or array only: a tool that returned the text `"42"` or `"\"ok\""`
    returned that text (the model was sent it as such), as one that returned `"true"` did.
    """
    value = maybe_json(value)
    if tool_name and _callback_wrapper(value, tool_name):
        inner = maybe_json(value["output"])
        msg = _tool_message(inner) or command_message(inner, call_id)
        if msg is None:
            return inner, None, None  # the tool's own return value (a ToolMessage inside is read below)
        value = inner
    if isinstance(value, dict) and "output" in value and set(value) <= {"output", "kwargs", "tags", "metadata"}:
        inner = maybe_json(value["output"])
        if isinstance(inner, str) and inner.startswith("content="):
            # OpenInference's LangChain instrumentation (0.1.45) recorded the message's str()
            fields = _repr_fields(inner)
            inner = {"type": "tool", **fields} if fields is not None and {"content", "tool_call_id"} <= set(fields) else inner
        if _tool_message(inner) is not None or command_message(inner, call_id) is not None:
            value = inner  # LangChain's on_tool_end payload; any other {"output": …} is the tool's own value
    msg = _tool_message(value) or command_message(value, call_id)
    if msg is not None:
        content = maybe_json(msg.get("content"))
        cid = msg.get("tool_call_id")
        cid = str(cid) if isinstance(cid, (str, int)) and cid != "" else None
        return content, str(msg.get("content")) if msg.get("status") == "error" else None, cid
    return value, None, None


def _callback_wrapper(value: Any, tool_name: str) -> bool:
    """True for LangChain's `on_tool_end` payload of tool `tool_name` as OpenLLMetry records it.

    `{"output": ..., "kwargs": {...}}` and nothing else, `kwargs` holding `name` equal to the tool's name
    (LangChain's `BaseTool.run` calls `on_tool_end(output, color=..., name=self.name, **kwargs)`).
    """
    if not isinstance(value, dict) or set(value) != {"output", "kwargs"}:
        return False
    kwargs = value["kwargs"]
    return isinstance(kwargs, dict) and kwargs.get("name") == tool_name


def tool_message_result(value: Any, tool_name: str | None, call_id: str | None = None) -> tuple[Any, str | None, str | None] | None:
    """`(result, error, call_id)` when `value` is the `ToolMessage` a LangChain tool span of `tool_name` returned, else None.

    For conventions that record a tool's output as it is (MLflow's LangChain tracer: a tool that ToolNode
    ran with a tool call returns a `ToolMessage`, serialised as a plain dict). Only a message of the
    LangChain shape (`type: "tool"` with `tool_call_id` and `content`, or its `dumpd` / `messages_to_dict`
    forms) that names this tool (`name`, which `BaseTool` sets to its own name) or answers the span's
    own `call_id` is unwrapped: a tool whose genuine result merely looks like a message of another tool
    or call keeps it. The result is the `content` (the JSON text of an object or array decoded); `status: "error"` gives the error.
    """
    value = unjson(value)
    msg = _tool_message(value) or command_message(value, call_id)
    if msg is None:
        return None
    cid = msg.get("tool_call_id")
    cid = str(cid) if isinstance(cid, (str, int)) and cid != "" else None
    if not ((tool_name and msg.get("name") == tool_name) or (call_id is not None and cid == str(call_id))):
        return None
    return maybe_json(msg.get("content")), str(msg.get("content")) if msg.get("status") == "error" else None, cid


# Where conventions record a chain span's output (OpenInference, OpenLLMetry, MLflow, Langfuse).
_CHAIN_OUTPUTS = ("output.value", "traceloop.entity.output", "mlflow.spanOutputs", "langfuse.observation.output")
_DEPTH = 8  # a node's output puts its messages a few levels in (`{"outputs": {"update": {"messages": [...]}}}`)


def failed_tool_messages(spans: list[Span], views: dict[str, View]) -> None:
    """Mark as failed the tool responses the model got that LangGraph's chain spans record as `status: "error"`.

    ToolNode answers a call it could not run without running any tool (an unknown tool name: "Error:
    get_wether is not a valid tool, try one of [...]"; arguments that failed validation), so no tool
    span holds that `ToolMessage`: the call's result comes from the tool message in the model's next
    request, where every convention keeps only `tool_call_id` and `content`, not `status`. The graph's
    `tools` node (and the root span's final state) output the message whole: each one with `status:
    "error"` in the output of a chain or agent span of the group gives the model requests' response part
    with that `tool_call_id` `is_error`, so the call's error is its text. Only messages of LangChain's
    shape (`type: "tool"` with `tool_call_id`; `dumpd` and `messages_to_dict` forms too) count; a
    response part without an id is left alone. Outputs whose text names neither `tool_call_id` nor
    `"error"` are not decoded.

    A server that numbers calls per response (`call_0` every round) gives a failed round's id to other rounds'
    calls too: a response part is then marked only when its text is a failed message's content, unless no part of
    that id has such a text (then every part of the id is, as before).
    """
    failed: dict[str, set[str | None]] = {}
    for span in spans:
        view = views.get(span.span_id)
        if view is None or view.role not in ("chain", "agent"):
            continue
        for key in _CHAIN_OUTPUTS:
            raw = span.attrs.get(key)
            if isinstance(raw, str) and "tool_call_id" in raw and "error" in raw:
                _collect_failed(unjson(raw), failed, _DEPTH)
    if not failed:
        return
    models = [v for v in views.values() if v.role == "model" and v.inputs]
    by_text = {cid for cid, texts in failed.items() if None not in texts
               and any(str(p.get("id")) == cid and p.get("response") in texts for v in models for m in v.inputs for p in _responses(m))}
    for view in models:
        view.inputs = [_mark_failed(m, failed, by_text) for m in view.inputs]


def _responses(msg: dict[str, Any]) -> list[dict[str, Any]]:
    parts = msg.get("parts")
    return [p for p in parts if isinstance(p, dict) and p.get("type") == "tool_call_response" and p.get("id") is not None] if isinstance(parts, list) else []


def _collect_failed(value: Any, out: dict[str, set[str | None]], depth: int) -> None:
    if depth <= 0:
        return
    if isinstance(value, list):
        for item in value:
            _collect_failed(item, out, depth - 1)
        return
    if not isinstance(value, dict):
        return
    msg = _tool_message(value)
    if msg is not None:
        cid = msg.get("tool_call_id")
        if msg.get("status") == "error" and isinstance(cid, (str, int)) and cid != "":
            content = msg.get("content")
            out.setdefault(str(cid), set()).add(content if isinstance(content, str) else None)
        return
    for item in value.values():
        if isinstance(item, (dict, list)):
            _collect_failed(item, out, depth - 1)


def _mark_failed(msg: dict[str, Any], failed: dict[str, set[str | None]], by_text: set[str]) -> dict[str, Any]:
    def hit(p: dict[str, Any]) -> bool:
        cid = str(p["id"])
        return cid in failed and (cid not in by_text or p.get("response") in failed[cid])

    marked = [id(p) for p in _responses(msg) if hit(p)]
    if not marked:
        return msg
    # (copies: a message list may be shared with another view)
    return {**msg, "parts": [{**p, "is_error": True} if id(p) in marked else p for p in msg["parts"]]}


def _repr_fields(text: str) -> dict[str, Any] | None:
    """The fields of a pydantic model's `str()` (`a='x' b=[1, 2]`), each read as a Python literal; None when it is not one."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)]
    except (tokenize.TokenError, SyntaxError):
        return None
    if any(t.start[0] != 1 or t.end[0] != 1 for t in tokens):
        return None  # repr() escapes newlines: a second line means this is other text
    starts, depth = [], 0
    for i, t in enumerate(tokens):
        if t.type == tokenize.OP and t.string in "([{":
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        elif depth == 0 and t.type == tokenize.NAME and i + 1 < len(tokens) and tokens[i + 1].string == "=":
            starts.append(i)
    if not starts or starts[0] != 0:
        return None
    fields: dict[str, Any] = {}
    for n, i in enumerate(starts):
        end = tokens[starts[n + 1]].start[1] if n + 1 < len(starts) else len(text)
        # (a value that is no literal, an object's repr, is None: not one this reader uses)
        fields[tokens[i].string] = python_literal(text[tokens[i + 1].end[1]:end].strip())
    return fields


_COMMAND_FIELDS = frozenset({"graph", "update", "resume", "goto"})  # LangGraph's `Command`, as every instrumentation serialises it


def command_message(value: Any, call_id: str | None = None) -> dict[str, Any] | None:
    """The `ToolMessage` a LangGraph `Command` a tool returned gives the model, or None.

    A tool that updates the graph's state (a handoff, `Command(goto=…, update=…)`) returns
    `Command(update={"messages": [ToolMessage(…, tool_call_id=…)], …})`: ToolNode puts that message in
    the state, and the model gets its content as the call's result. Recorded as the Command's fields
    (`{"graph", "update", "resume", "goto"}`, `update` a mapping). The message answering `call_id` when
    it is known and one answers it, else the Command's only ToolMessage, or the only one after its last AI
    message (a handoff's update is the conversation so far plus its reply); None when it holds none, or
    several and nothing says which is this call's (the Command stays the result, as recorded).
    """
    if not isinstance(value, dict) or "update" not in value or not set(value) <= _COMMAND_FIELDS:
        return None
    update = unjson(value["update"])
    messages = update.get("messages") if isinstance(update, dict) else None
    if not isinstance(messages, list):
        return None
    decoded = [unjson(x) for x in messages]
    # (a message may be given as the OpenAI-style dict LangGraph's `add_messages` accepts, `{"role": "tool", …}`: the
    # handoff tool of LangGraph's multi-agent docs writes its reply so)
    found = [(i, m) for i, m in ((i, _tool_message(x) or _role_tool_message(x)) for i, x in enumerate(decoded)) if m is not None]
    if call_id is not None:
        mine = [f for f in found if str(f[1].get("tool_call_id")) == str(call_id)]
        found = mine or found
    elif len(found) > 1:
        # A handoff (`Command(goto=…, graph=Command.PARENT)`) carries the conversation so far plus its own reply
        # (`state["messages"] + [reply]`): the tool messages before the last AI message answered earlier calls.
        last_ai = max((i for i, x in enumerate(decoded) if _is_ai_message(x)), default=-1)
        found = [f for f in found if f[0] > last_ai]
    return found[0][1] if len(found) == 1 else None


def _role_tool_message(value: Any) -> dict[str, Any] | None:
    """An OpenAI-style tool message dict (`{"role": "tool", "tool_call_id", "content"}`), else None."""
    if isinstance(value, dict) and value.get("role") == "tool" and "tool_call_id" in value and "content" in value:
        return value
    return None


def _is_ai_message(value: Any) -> bool:
    """An AI message in any form a LangGraph state is recorded in (`dumpd`, `messages_to_dict`, a plain dict, OpenAI-style)."""
    if not isinstance(value, dict):
        return False
    if value.get("lc") == 1:
        ident = value.get("id")
        return isinstance(ident, list) and bool(ident) and ident[-1] in ("AIMessage", "AIMessageChunk")
    return value.get("type") == "ai" or value.get("role") == "assistant"


def _tool_message(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        ident = value.get("id")
        if isinstance(ident, list) and ident and ident[-1] in _LC_TOOL_MESSAGE:
            return value["kwargs"]
        return None
    if value.get("type") == "tool" and isinstance(value.get("data"), dict) and "content" in value["data"]:  # messages_to_dict
        return value["data"]
    if value.get("type") == "tool" and "tool_call_id" in value and "content" in value:
        return value
    return None


def documents(value: Any) -> list[dict[str, Any]]:
    """Retrieved passages out of a retriever's output: LangChain/MLflow `Document`s or `{content|text, score}` items.

    Reads a list (or JSON text of one, or a `{documents|docs|results: [...]}`
    wrapper; a bare string is one passage). Each passage has `content` and,
    when recorded, `id` (`id`, else `metadata.chunk_id` / `id` / `doc_uri`),
    `source` (`metadata.doc_uri` / `source`) and `score`.
    """
    value = unjson(value)
    if isinstance(value, dict):
        value = next((value[k] for k in ("documents", "docs", "results") if isinstance(value.get(k), list)), [value])
    out: list[dict[str, Any]] = []
    for doc in value if isinstance(value, list) else []:
        if isinstance(doc, str):
            out.append({"content": doc})
            continue
        if not isinstance(doc, dict):
            continue
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        content = next((doc[k] for k in ("page_content", "content", "text") if isinstance(doc.get(k), str)), None)
        if content is None:
            continue
        item: dict[str, Any] = {"content": content}
        ident = doc.get("id") or meta.get("chunk_id") or meta.get("id") or meta.get("doc_uri")
        if ident is not None:
            item["id"] = str(ident)
        source = meta.get("doc_uri") or meta.get("source")
        if source is not None:
            item["source"] = str(source)
        score = doc.get("score", meta.get("score"))
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            item["score"] = float(score)
        out.append(item)
    return out
