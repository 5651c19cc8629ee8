"""Steps from a tree of spans: what the span-shaped native exports (`openai-agents`, `langfuse`, `mlflow`) share.

Each of those adapters turns its records into `Node`s — a model request, a
tool call, or something else — and `assemble` builds the native trace:

- nodes are taken in start order (ties keep the record's order); a model
  request nested inside another model request is the same request and is
  skipped;
- every model request starts a step; the tool calls its output asked for
  (`parts`: OpenAI `tool_calls`, Responses `function_call` items) are the
  step's calls, in the model's order;
- a tool node pairs with a waiting part by call id, else with the earliest
  waiting part of the same name; the call then takes its arguments from the
  part (the model's own JSON) when the part has them and its result/error
  from the tool node. A tool node that pairs with no part is a call of the
  latest step (a step of its own before the first model request); a part
  that no tool node answered stays a call without result (a handoff);
- the user's side comes from the model requests' input messages: the user
  messages of a request past the ones seen before are new turns, placed
  before that request's step (`trace.user_messages`);
- usage sums the model requests' tokens and counts them as requests.

The message helpers read OpenAI Chat Completions messages (also under
`choices[].message`), Responses API items and plain strings, which is what
the SDKs and autologgers record as model input/output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tracejudge.stages.extract.common import maybe_json, text_of

__all__ = ["MISSING", "Node", "assemble", "count", "input_messages", "model_output", "passages", "timestamp", "user_texts"]

MISSING: Any = object()  # arguments the recording did not keep


@dataclass(slots=True)
class Node:
    """One span, as `assemble` needs it.

    `kind` is `model`, `tool` or `other`; `start` a number (seconds or
    nanoseconds, one unit per trace), digits or ISO 8601 text. Model nodes fill `parts` (`{"id", "name",
    "arguments"}`), `text`, `messages` (their input messages) and token
    counts; tool nodes fill `call_id`, `arguments` (`MISSING` when not
    recorded), `result` and `error`.
    """

    id: str
    parent: str | None
    start: Any
    kind: str
    name: str | None = None
    parts: list[dict[str, Any]] = field(default_factory=list)
    text: str | None = None
    messages: list[Any] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    call_id: str | None = None
    arguments: Any = MISSING
    result: Any = None
    error: str | None = None


def _tool_call_part(tc: Any) -> dict[str, Any] | None:
    """`{"id", "name", "arguments"}` of one OpenAI `tool_calls` entry (also flattened or LangChain's `args`)."""
    if not isinstance(tc, dict):
        return None
    fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        return None
    args = fn["arguments"] if "arguments" in fn else fn.get("args", MISSING)
    cid = tc.get("id", tc.get("call_id"))
    return {"id": None if cid is None else str(cid), "name": name, "arguments": args}


def model_output(value: Any) -> tuple[str | None, list[dict[str, Any]]]:
    """The text and requested tool calls of a model output.

    Reads an assistant message, a list of messages or Responses items, a
    Chat Completions response (`choices[0].message`), a Responses response
    (`output` items) or plain text. Returns `(text or None, parts)`.
    """
    value = maybe_json(value)
    if isinstance(value, str):
        return (value or None), []
    if isinstance(value, dict):
        if isinstance(value.get("choices"), list):
            first = value["choices"][0] if value["choices"] else None
            return model_output(first.get("message") if isinstance(first, dict) else None)
        if isinstance(value.get("output"), list) and "role" not in value:
            return model_output(value["output"])
        value = [value]
    if not isinstance(value, list):
        return None, []
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":
            part = _tool_call_part({"id": item.get("call_id", item.get("id")), "name": item.get("name"), "arguments": item.get("arguments")})
            parts += [part] if part else []
        elif item.get("role", "assistant") == "assistant" and kind in (None, "message"):
            text = text_of(item.get("content"))
            texts += [text] if text else []
            extra = item.get("additional_kwargs") if isinstance(item.get("additional_kwargs"), dict) else {}
            calls = item.get("tool_calls") or extra.get("tool_calls")
            for tc in calls if isinstance(calls, list) else []:
                part = _tool_call_part(tc)
                parts += [part] if part else []
    return ("\n".join(texts) if texts else None), parts


def input_messages(value: Any) -> list[Any]:
    """The message list of a model input: a list, `{"messages": [...]}`, Responses `{"input": ...}`, or text (one user message)."""
    value = maybe_json(value)
    if isinstance(value, dict):
        for key in ("messages", "input"):
            if key in value:
                return input_messages(value[key])
        return []
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return value if isinstance(value, list) else []


def user_texts(messages: list[Any]) -> list[Any]:
    """What the user said in a message list, in order: text, or the content parts when they are not text."""
    out = []
    for msg in messages:
        if isinstance(msg, dict) and msg.get("role") == "user" and msg.get("type", "message") == "message":
            content = msg.get("content")
            text = text_of(content)
            out.append(text if text is not None else content)
    return out


def count(mapping: Any, *keys: str) -> int | None:
    """The first of `keys` in `mapping` holding a number, as an int (token counts, milliseconds); `None` when none does."""
    if not isinstance(mapping, dict):
        return None
    return next((int(mapping[k]) for k in keys if isinstance(mapping.get(k), (int, float)) and not isinstance(mapping[k], bool)), None)


def _start(value: Any) -> int | float | None:
    """A start time as a number: a number as is, digits (OTLP's int64 as text) as an int, ISO 8601 text in seconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return timestamp(value)


def timestamp(value: Any) -> float | None:
    """Seconds since the epoch of an ISO 8601 time (`Z` or an offset), `None` when it is not one."""
    try:
        return datetime.fromisoformat(value).timestamp() if isinstance(value, str) else None
    except ValueError:
        return None


def passages(value: Any) -> list[dict[str, Any]]:
    """Retrieved documents as native passages: LangChain/MLflow `Document`s (`page_content`, `metadata`, `id`) or `{content|text, score}`."""
    value = maybe_json(value)
    if isinstance(value, dict):
        value = next((value[k] for k in ("documents", "docs", "results") if isinstance(value.get(k), list)), [value])
    out = []
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
        pid = doc.get("id") or meta.get("chunk_id") or meta.get("id")
        score = doc.get("score", meta.get("score"))
        source = meta.get("doc_uri") or meta.get("source")
        out.append({"id": None if pid is None else str(pid), "content": content,
                    "score": float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
                    "source": None if source is None else str(source)})
    return out


def _nested_model(node: Node, by_id: dict[str, Node]) -> bool:
    seen = set()
    parent = by_id.get(node.parent) if node.parent else None
    while parent is not None and parent.id not in seen:
        if parent.kind == "model":
            return True
        seen.add(parent.id)
        parent = by_id.get(parent.parent) if parent.parent else None
    return False


def _call(part: dict[str, Any] | None, tool: Node | None) -> dict[str, Any]:
    name = tool.name if tool is not None and tool.name else (part or {}).get("name")
    cid = (part or {}).get("id") or (tool.call_id if tool is not None else None)
    call: dict[str, Any] = {"id": cid, "name": name}
    args = part["arguments"] if part is not None and part.get("arguments", MISSING) is not MISSING else MISSING
    if args is MISSING and tool is not None:
        args = tool.arguments
    if args is MISSING:
        call["arguments_missing"] = True
    else:
        call["arguments"] = args
    if tool is not None:
        call["result"] = tool.result
        call["error"] = tool.error
    return call


def _tool_replies(histories: Any) -> dict[str, Any]:
    """Tool results the agent sent back to the model, by call id, from later requests' input messages."""
    out: dict[str, Any] = {}
    for messages in histories:
        for msg in messages:
            if not isinstance(msg, dict):
                continue
            if msg.get("role") == "tool" and msg.get("tool_call_id") is not None:
                content = msg.get("content")
                out[str(msg["tool_call_id"])] = text_of(content) if isinstance(content, list) else content
            elif msg.get("type") == "function_call_output" and msg.get("call_id") is not None:
                out[str(msg["call_id"])] = msg.get("output")
    return out


def assemble(nodes: list[Node]) -> dict[str, Any]:
    """The native trace mapping (`steps`, `user_messages`, `output`, `usage`) of one tree of nodes.

    `output` is the text of the last model request that called no tool (or
    of the last one with text), `None` without model text. The caller adds
    what its format knows better (the run's own input/output, latency).
    """
    for n in nodes:  # ids as the tree needs them: text, whatever the recording held
        n.id = str(n.id)
        n.parent = str(n.parent) if isinstance(n.parent, (str, int)) and not isinstance(n.parent, bool) else None
        n.start = _start(n.start)
    by_id = {n.id: n for n in nodes}
    ordered = [n for _, n in sorted(enumerate(nodes), key=lambda p: (p[1].start is None, p[1].start or 0, p[0]))]
    steps: list[dict[str, Any]] = []
    waiting: list[tuple[int, dict[str, Any], dict[str, Any]]] = []  # (position, part, its step) not answered by a tool node yet
    users: list[dict[str, Any]] = []
    seen_users = 0
    tokens = [0, 0]
    requests = 0
    final: str | None = None
    for node in ordered:
        if node.kind == "model" and not _nested_model(node, by_id):
            said = user_texts(node.messages)
            users += [{"step": len(steps), "content": c} for c in said[seen_users:]]
            seen_users = max(seen_users, len(said))
            step: dict[str, Any] = {"thought": None, "tool_calls": [], "output": None, "_parts": list(node.parts)}
            if node.parts:
                step["thought"] = node.text
            else:
                step["output"] = node.text
            if node.text:
                final = node.text if not node.parts or final is None else final
            waiting += [(i, p, step) for i, p in enumerate(node.parts)]
            steps.append(step)
            requests += 1
            tokens[0] += node.input_tokens or 0
            tokens[1] += node.output_tokens or 0
        elif node.kind == "tool":
            at = next((k for k, w in enumerate(waiting) if node.call_id and w[1].get("id") == node.call_id), None)
            at = at if at is not None else next((k for k, w in enumerate(waiting) if w[1]["name"] == node.name), None)
            if at is not None:
                pos, part, owner = waiting.pop(at)
                owner["tool_calls"].append((pos, _call(part, node)))
            else:
                if not steps:
                    steps.append({"thought": None, "tool_calls": [], "output": None, "_parts": []})
                steps[-1]["tool_calls"].append((len(steps[-1]["_parts"]) + len(steps[-1]["tool_calls"]), _call(None, node)))
    for i, part, step in waiting:  # asked for, never run (a handoff): a call without result
        step["tool_calls"].append((i, _call(part, None)))
    for step in steps:
        del step["_parts"]
        step["tool_calls"] = [c for _, c in sorted(step["tool_calls"], key=lambda p: p[0])]
    replies = _tool_replies(n.messages for n in nodes if n.kind == "model")
    for step in steps:
        for call in step["tool_calls"]:
            if call.get("result") is None and call["id"] in replies:
                call["result"] = replies[call["id"]]
    usage: dict[str, Any] = {"requests": requests}
    if any(tokens):
        usage.update(input_tokens=tokens[0], output_tokens=tokens[1])
    return {"steps": steps, "user_messages": users, "output": final, "usage": usage}
