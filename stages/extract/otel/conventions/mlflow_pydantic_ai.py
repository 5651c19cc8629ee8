"""MLflow's pydantic-ai autolog (`mlflow.pydantic_ai.autolog()`): a model request's messages as pydantic-ai's own.

MLflow records each `<Model>.request` span (type `LLM`, `mlflow.message.format: "pydantic_ai"`) with the request's
arguments, `{"messages": [ModelRequest | ModelResponse, …], "model_settings", …}`, and the `ModelResponse` it got,
each message as pydantic-ai dumps it: `{"kind": "request" | "response", "parts": [{"part_kind": …}, …]}`. Parts:

- a request's `system-prompt` and `user-prompt` (text, or a list of text and media items) are system and user text;
  its `tool-return` answers the call `tool_call_id` with `content` (also a tool that asked to retry, pydantic-ai 2's
  `outcome: "retried"`: what the model was sent), a `retry-prompt` with a `tool_name` likewise (an error); pydantic-ai's
  own feedback on a refused answer (a `retry-prompt` without a tool, `retry-feedback`) is not the user's words and is
  left out;
- a response's `text` is the reply, `thinking` a reasoning part, `tool-call` a call (`tool_call_id`, `tool_name`,
  `args`: JSON text or a mapping). Built-in (server) tool parts are left out.

`request_messages` / `response_messages` give them as the normalised messages of `view`, `None` for anything else.

An agent's run is an `AGENT` span named after the method MLflow patched (`Agent.run_sync` around `Agent.run`,
`Agent.run_stream`, `Agent.run_stream_sync`), with the `Agent`'s public attributes: `name` when the agent has one.
`agent_name` names it as pydantic-ai's own instrumentation does the same run (its agent span's `gen_ai.agent.name`):
that name, else pydantic-ai's `agent` — never the method's name, which named a one-agent run's turn
`Agent.run, Agent.run_sync`.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import text_message, tool_call_part, tool_response_part, unjson

__all__ = ["agent_name", "request_messages", "response_messages"]

# What pydantic-ai's instrumentation names an agent that has no name (`self.name or 'agent'`). Under MLflow's patch an
# unnamed agent keeps no name: pydantic-ai infers one from its caller's frame, which is then MLflow's wrapper.
_UNNAMED = "agent"


def agent_name(span: Span) -> str | None:
    """The agent a pydantic-ai `AGENT` span MLflow wrote ran, as pydantic-ai names it (module docstring); `None` for
    any other span."""
    a = span.attrs
    if unjson(a.get("mlflow.spanType")) != "AGENT" or unjson(a.get("mlflow.message.format")) != "pydantic_ai":
        return None
    name = unjson(a.get("name"))
    return name if isinstance(name, str) and name.strip() else _UNNAMED


def _ours(message: Any) -> bool:
    return (isinstance(message, dict) and message.get("kind") in ("request", "response") and isinstance(message.get("parts"), list)
            and all(isinstance(p, dict) and isinstance(p.get("part_kind"), str) for p in message["parts"]))


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [c for c in content if isinstance(c, str)]
        return "\n".join(texts) if texts else None
    return None


def _message(message: dict[str, Any]) -> list[dict[str, Any]]:
    """One pydantic-ai message as normalised messages (a request's parts may be several: prompt, tool returns)."""
    if message["kind"] == "response":
        parts: list[dict[str, Any]] = []
        for p in message["parts"]:
            kind = p["part_kind"]
            if kind == "text" and isinstance(p.get("content"), str) and p["content"]:
                parts.append({"type": "text", "content": p["content"]})
            elif kind == "thinking" and isinstance(p.get("content"), str) and p["content"]:
                parts.append({"type": "reasoning", "content": p["content"]})
            elif kind == "tool-call":
                parts.append(tool_call_part(p.get("tool_call_id"), p.get("tool_name"), p.get("args")))
        return [{"role": "assistant", "parts": parts}]
    out: list[dict[str, Any]] = []
    for p in message["parts"]:
        kind = p["part_kind"]
        if kind in ("system-prompt", "user-prompt"):
            out.append(text_message("system" if kind == "system-prompt" else "user", _text(p.get("content"))))
        elif kind == "tool-return" or (kind == "retry-prompt" and p.get("tool_name")):
            part = tool_response_part(p.get("tool_call_id"), p.get("content"))
            if kind == "retry-prompt":
                part["is_error"] = True
            out.append({"role": "tool", "parts": [part]})
    return out


def request_messages(inputs: Any) -> list[dict[str, Any]] | None:
    """The messages of a pydantic-ai model request as MLflow records it (`{"messages": [...]}`), else `None`."""
    msgs = inputs.get("messages") if isinstance(inputs, dict) else None
    if not isinstance(msgs, list) or not msgs or not all(_ours(m) for m in msgs):
        return None
    out = [n for m in msgs for n in _message(m)]
    # The agent's `instructions` ride on each request, not in its parts; the model is sent the newest request's, first
    told = next((m.get("instructions") for m in reversed(msgs) if m["kind"] == "request"), None)
    if isinstance(told, str) and told and text_message("system", told) not in out:
        out.insert(0, text_message("system", told))
    return out


def response_messages(outputs: Any) -> list[dict[str, Any]] | None:
    """The reply of a pydantic-ai model request (its `ModelResponse`), else `None`."""
    return _message(outputs) if _ours(outputs) and outputs["kind"] == "response" else None
