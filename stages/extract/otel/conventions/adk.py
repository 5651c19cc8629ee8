"""Google ADK's own span attributes: the Gemini request and response of a `call_llm` span.

ADK (Python) writes `gcp.vertex.agent.llm_request` (`{"model", "config",
"contents": [Content]}`) and `gcp.vertex.agent.llm_response` (`{"content":
Content, "finish_reason", "usage_metadata"}`) as JSON text on its `call_llm`
span in every telemetry mode, while the GenAI keys of the `generate_content`
span inside it may carry no content at all (content capture off, or events
that say `<elided>`). The request's `config.system_instruction` (the agent's instruction) leads its input as a
`system` message. A Gemini `Content` is `{"role": "user" | "model",
"parts": [{"text"} | {"function_call": {"id", "name", "args"}} |
{"function_response": {"id", "name", "response"}}]}`.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.view import tool_call_part, tool_response_part, unjson

__all__ = ["ADK_PREFIX", "ADK_REQUEST", "ADK_RESPONSE", "ADK_SCOPE", "adk_messages", "gemini_part", "said", "unwrap_results"]

ADK_SCOPE = "gcp.vertex.agent"  # ADK's instrumentation scope name
ADK_PREFIX = "gcp.vertex.agent."
ADK_REQUEST = "gcp.vertex.agent.llm_request"
ADK_RESPONSE = "gcp.vertex.agent.llm_response"


def said(messages: list[dict[str, Any]] | None) -> bool:
    """Whether a normalised message list holds any part (a list of empty messages recorded nothing)."""
    return any(m.get("parts") for m in messages or [])


def unwrap_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` (normalised) with each tool response of the form `{"result": X}` read as `X`.

    ADK sends the model a tool's return value that is no mapping wrapped so, in its function responses and so in
    every message key of its spans (GenAI keys, events, its own request): the tool returned `X`, as its span's result
    key says once unwrapped (`genai`).
    """
    return [dict(m, parts=[_unwrapped(p) for p in m["parts"]]) if isinstance(m.get("parts"), list) else m for m in messages]


def _unwrapped(part: Any) -> Any:
    response = part.get("response") if isinstance(part, dict) and part.get("type") == "tool_call_response" else None
    return dict(part, response=response["result"]) if isinstance(response, dict) and set(response) == {"result"} else part


def adk_messages(attrs: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Normalised `(inputs, outputs)` of an ADK `call_llm` span; empty lists where nothing was recorded.

    Text that is not JSON, and contents that are not Gemini `Content`
    objects, give nothing (never an error: these are a vendor's debug keys).
    """
    request = unjson(attrs.get(ADK_REQUEST))
    response = unjson(attrs.get(ADK_RESPONSE))
    contents = request.get("contents") if isinstance(request, dict) else None
    inputs = [m for m in (_message(c, "user") for c in contents if isinstance(contents, list)) if m] if isinstance(contents, list) else []
    config = request.get("config") if isinstance(request, dict) else None
    told = _instruction(config.get("system_instruction")) if isinstance(config, dict) else None
    out = _message(response.get("content"), "assistant") if isinstance(response, dict) else None
    return ([told] if told else []) + inputs, [out] if out else []


def _instruction(value: Any) -> dict[str, Any] | None:
    """The request's `config.system_instruction` as its leading `system` message (`None`: none): the agent's
    instruction, which Gemini takes apart from `contents`, as text, a `Content`, a `Part` or a list of either."""
    if isinstance(value, dict) and isinstance(value.get("parts"), list):
        value = value["parts"]
    items = value if isinstance(value, list) else [value]
    parts = [p for p in ({"type": "text", "content": x} if isinstance(x, str) else gemini_part(x) for x in items) if p is not None]
    parts = [p for p in parts if p["type"] != "text" or p["content"]]
    return {"role": "system", "parts": parts} if parts else None


def _message(content: Any, default_role: str) -> dict[str, Any] | None:
    if not isinstance(content, dict):
        return None
    parts = [p for p in (gemini_part(raw) for raw in content.get("parts") or []) if p is not None]
    if not parts:
        return None
    role = content.get("role") if isinstance(content.get("role"), str) else default_role
    role = "assistant" if role == "model" else role
    if all(p["type"] == "tool_call_response" for p in parts):
        role = "tool"  # Gemini sends function responses in a `user` content
    return {"role": role, "parts": parts}


def gemini_part(raw: Any) -> dict[str, Any] | None:
    """One Gemini `Part` as a normalised part (`view`): its text (a `thought` one as reasoning), `function_call` or
    `function_response`; `None` for any other part."""
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("text"), str):
        return {"type": "reasoning" if raw.get("thought") else "text", "content": raw["text"]}
    call = raw.get("function_call")
    if isinstance(call, dict):
        return tool_call_part(call.get("id"), call.get("name"), call.get("args"))
    answer = raw.get("function_response")
    if isinstance(answer, dict):
        # the name stays: ADK's parts often carry no id, and a response then pairs with its call by name
        return {**tool_response_part(answer.get("id"), answer.get("response")), "name": answer.get("name")}
    return None
