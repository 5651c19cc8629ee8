"""Framework payloads that tracers record in place of a tool's arguments or result.

Instrumentations record what the framework hands its callback, not what the
model sent: smolagents' `{"args": [...], "kwargs": {...},
"sanitize_inputs_outputs": ...}`, LangChain's `{"input_str", "inputs",
"tags", "metadata"}` callback payload (with `input_str` a Python `repr`),
Langfuse's `@observe` `{"args", "kwargs"}`, and results as a serialised
LangChain `ToolMessage` (or `{"output": ToolMessage}`). These helpers take
the real value out; whenever they had to, the assembler prefers the model's
own tool-call part for arguments.
"""

from __future__ import annotations

import io
import tokenize
from typing import Any

from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["documents", "unwrap_args", "unwrap_result"]

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


def unwrap_result(value: Any) -> tuple[Any, str | None, str | None]:
    """`(result, error, call_id)`: the tool's result out of a framework payload.

    A LangChain `ToolMessage` (serialised with `dumpd`, with
    `messages_to_dict`, as a plain dict, or under `{"output": ...}`) gives
    its `content` and the `tool_call_id` it answers; its `status: "error"`
    gives an error carrying that content.
    """
    value = unjson(value)
    if isinstance(value, dict) and "output" in value and set(value) <= {"output", "kwargs", "tags", "metadata"}:
        inner = unjson(value["output"])
        if isinstance(inner, str) and inner.startswith("content="):
            # OpenInference's LangChain instrumentation (0.1.45) recorded the message's str()
            fields = _repr_fields(inner)
            inner = {"type": "tool", **fields} if fields is not None and {"content", "tool_call_id"} <= set(fields) else inner
        if _tool_message(inner) is not None:
            value = inner  # LangChain's on_tool_end payload; any other {"output": …} is the tool's own value
    msg = _tool_message(value)
    if msg is not None:
        content = unjson(msg.get("content"))
        cid = msg.get("tool_call_id")
        cid = str(cid) if isinstance(cid, (str, int)) and cid != "" else None
        return content, str(msg.get("content")) if msg.get("status") == "error" else None, cid
    return value, None, None


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
