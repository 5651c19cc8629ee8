"""The request shapes the providers refuse before reading anything else, with their 400 messages (`shape_error`).

A message that is not an object, content that is neither text nor a list of blocks, a tool that is not
an object or lacks what its kind needs (an OpenAI function's `name`, an Anthropic custom tool's `name`
and `input_schema`) is refused by both APIs with a 400 `invalid_request_error` naming the place (OpenAI:
`param` `messages[0]`, code `invalid_type` or `missing_required_parameter`; Anthropic: the path
`messages.0: Input should be a valid dictionary`). The simulator said 500, or answered as if the tool
were not there. Only the shapes are checked; roles, block types and schemas' contents are not.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Refusal", "kind", "shape_error"]


class Refusal(NamedTuple):
    """A request the provider refuses with a 400 `invalid_request_error`: the message, OpenAI's `param` and `code`."""

    message: str
    param: str | None = None
    code: str | None = None


def kind(value: Any) -> str:
    """A JSON value's kind as OpenAI's type errors name it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else "null"


def _openai_type(where: str, expected: str, value: Any) -> Refusal:
    return Refusal(f"Invalid type for '{where}': expected {expected}, but got {kind(value)} instead.", where, "invalid_type")


def _openai_missing(where: str) -> Refusal:
    return Refusal(f"Missing required parameter: '{where}'.", where, "missing_required_parameter")


def _openai(body: dict[str, Any]) -> Refusal | None:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return _openai_type("messages", "an array of objects", messages)
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            return _openai_type(f"messages[{i}]", "an object", m)
        content = m.get("content")
        if content is not None and not isinstance(content, (str, list)):
            return _openai_type(f"messages[{i}].content", "one of a string or array of objects", content)
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        return _openai_type("tools", "an array of objects", tools)
    for i, t in enumerate(tools or []):
        if not isinstance(t, dict):
            return _openai_type(f"tools[{i}]", "an object", t)
        if t.get("type", "function") != "function":
            continue  # (another kind of tool, `custom` say: its own shape, not checked here)
        function = t.get("function")
        if function is None:
            return _openai_missing(f"tools[{i}].function")
        if not isinstance(function, dict):
            return _openai_type(f"tools[{i}].function", "an object", function)
        if not function.get("name"):
            return _openai_missing(f"tools[{i}].function.name")
        if "parameters" in function and not isinstance(function["parameters"], dict):
            return _openai_type(f"tools[{i}].function.parameters", "an object", function["parameters"])
    return None


def _content_error(where: str, content: Any) -> Refusal | None:
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return Refusal(f"{where}: Input should be a valid string")
    for j, block in enumerate(content):
        if not isinstance(block, dict):
            return Refusal(f"{where}.{j}: Input should be a valid dictionary")
    return None


def _anthropic(body: dict[str, Any]) -> Refusal | None:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return Refusal("messages: Input should be a valid list")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            return Refusal(f"messages.{i}: Input should be a valid dictionary")
        if "content" not in m:
            return Refusal(f"messages.{i}.content: Field required")
        refused = _content_error(f"messages.{i}.content", m["content"])
        if refused is not None:
            return refused
    if "system" in body and body["system"] is not None:
        refused = _content_error("system", body["system"])
        if refused is not None:
            return refused
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        return Refusal("tools: Input should be a valid list")
    for i, t in enumerate(tools or []):
        if not isinstance(t, dict):
            return Refusal(f"tools.{i}: Input should be a valid dictionary")
        if t.get("type", "custom") != "custom":
            continue  # a server tool (web search, code execution): its own fields
        if not isinstance(t.get("name"), str):
            return Refusal(f"tools.{i}.custom.name: Field required")
        if not isinstance(t.get("input_schema"), dict):
            return Refusal(f"tools.{i}.custom.input_schema: " + ("Field required" if "input_schema" not in t else "Input should be a valid dictionary"))
    return None


def shape_error(body: dict[str, Any], anthropic: bool) -> Refusal | None:
    """Why the provider refuses `body`'s messages, system prompt or tools by their shape (see the module doc), or None."""
    return _anthropic(body) if anthropic else _openai(body)
