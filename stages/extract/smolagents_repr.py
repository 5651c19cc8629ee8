"""The tool calls of a smolagents `ChatMessage` that was written as its `repr()`.

smolagents 1.13-1.15 kept the model's message as an object in memory, so a
run written with `json.dumps(..., default=str)` holds it as text:
`ChatMessage(role='assistant', content=None, tool_calls=[ChatMessageToolCall(
function=ChatMessageToolCallDefinition(arguments={'city': 'Paris'},
name='get_weather', description=None), id='call_1', type='function')], raw=…)`
(1.13 writes the role as `<MessageRole.ASSISTANT: 'assistant'>`). That text
is parsed as a Python expression and only its literals are read; nothing in
it is evaluated. The OpenAI response the message keeps (`raw=ChatCompletion(…
usage=CompletionUsage(completion_tokens=…, prompt_tokens=…))`) is the only
place these runs kept the step's tokens.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from tracejudge.stages.extract.common import python_literal

__all__ = ["message_tool_calls", "message_usage"]

_ENUM = re.compile(r"<\w+\.\w+: ('[^']*'|\"[^\"]*\")>")  # an Enum's repr: <MessageRole.ASSISTANT: 'assistant'>


def _keywords(node: ast.AST, func: str) -> dict[str, ast.AST] | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == func:
        return {k.arg: k.value for k in node.keywords if k.arg}
    return None


def _literal(node: ast.AST | None) -> Any:
    return python_literal(node) if node is not None else None


def _parse(text: Any) -> dict[str, ast.AST] | None:
    """The keyword arguments of a `ChatMessage(...)` repr; None when `text` is not one."""
    if not isinstance(text, str) or not text.startswith("ChatMessage(") or len(text) > 1_000_000:
        return None
    try:
        tree = ast.parse(_ENUM.sub(r"\1", text), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _keywords(tree.body, "ChatMessage")


def message_usage(text: Any) -> dict[str, int]:
    """`{"input_tokens", "output_tokens"}` of the OpenAI `CompletionUsage` in a `ChatMessage(...)` repr's `raw`; `{}` when none."""
    message = _parse(text)
    raw = message.get("raw") if message is not None else None
    for node in ast.walk(raw) if raw is not None else ():
        usage = _keywords(node, "CompletionUsage")
        if usage is not None:
            pair = {"input_tokens": _literal(usage.get("prompt_tokens")), "output_tokens": _literal(usage.get("completion_tokens"))}
            return {k: v for k, v in pair.items() if isinstance(v, int) and not isinstance(v, bool)}
    return {}


def message_tool_calls(text: Any) -> list[dict[str, Any]] | None:
    """`[{"id", "function": {"name", "arguments"}}]` of a `ChatMessage(...)` repr; None when `text` is not one."""
    message = _parse(text)
    listed = message.get("tool_calls") if message is not None else None
    if not isinstance(listed, ast.List):
        return None
    calls = []
    for item in listed.elts:
        call = _keywords(item, "ChatMessageToolCall")
        fn = _keywords(call.get("function"), "ChatMessageToolCallDefinition") if call is not None else None
        name = _literal(fn.get("name")) if fn is not None else None
        if not isinstance(name, str) or not name:
            return None
        calls.append({"id": _literal(call.get("id")), "function": {"name": name, "arguments": _literal(fn.get("arguments"))}})
    return calls
