"""Forced tool calls and OpenAI's `n`: which requests the simulator refuses, which tool a request forces, and the choices it sends.

Tool choice, as the providers define it:

- OpenAI: `tool_choice: {type: function, function: {name}}` forces that
  function (the reply's `finish_reason` is then `stop`, as OpenAI's is), and
  `"required"` forces a call of the first function (`finish_reason:
  tool_calls`); `"auto"`, `"none"` or none at all get the usual reply. A
  forced call's `arguments` are the JSON the simulator makes for the
  function's `parameters`, as it makes a structured output for a schema.
- Anthropic: `{type: tool, name}` forces that tool and `{type: any}` the first
  one; `{type: auto}` or none at all answers with the first tool, as a model
  given one tool to record its verdict does; `{type: none}` gets text.

Refused, with the providers' 400s: a forced name that no tool has, a tool
choice without tools, an OpenAI `tool_choice` string that is not one of its
three, OpenAI's `n` outside 1..128 or not an integer, and (first) a message or
tool of a shape the provider refuses (`shapes`). `n` choices are `n`
samples of the request: with the simulator's `noise` each is the next
occurrence of the request, so they differ as repeated requests do.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, NamedTuple

from tracejudge.simulator.shapes import Refusal, kind, shape_error

__all__ = ["MAX_N", "Forced", "Refusal", "choice_count", "forced_tool", "openai_choice", "reply_text", "request_error"]

MAX_N = 128  # OpenAI's bound on `n` for chat completions


class Forced(NamedTuple):
    """The tool a request makes the model call: its name, its parameters' schema, and how (`named`, `required`, `auto`)."""

    name: str
    schema: dict[str, Any]
    how: str


def _openai_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [t["function"] for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("function"), dict)]


def _anthropic_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    # (a server tool such as web search has no `input_schema`: the model cannot be made to fill one in)
    return [t for t in body.get("tools") or [] if isinstance(t, dict) and "input_schema" in t]


def _n_error(n: Any) -> Refusal | None:
    if n is None:
        return None
    if not isinstance(n, int) or isinstance(n, bool):
        return Refusal(f"Invalid type for 'n': expected an integer, but got {kind(n)} instead.", "n", "invalid_type")
    if n < 1:
        return Refusal(f"Invalid 'n': integer below minimum value. Expected a value >= 1, but got {n} instead.", "n", "integer_below_min_value")
    if n > MAX_N:
        return Refusal(f"Invalid 'n': integer above maximum value. Expected a value <= {MAX_N}, but got {n} instead.", "n",
                       "integer_above_max_value")
    return None


def _max_tokens_error(body: dict[str, Any], anthropic: bool) -> Refusal | None:
    """Why the provider refuses the request's `max_tokens` (OpenAI's `max_completion_tokens` too), or None: a whole
    number of at least 1, as both APIs require. A 0 was read as none asked (the whole reply sent) and a -1 as a cut
    there, billed as -1 completion tokens, where a real server answers 400."""
    for key in ("max_tokens",) if anthropic else ("max_tokens", "max_completion_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            if anthropic:
                return Refusal(f"{key}: Input should be a valid integer")
            return Refusal(f"Invalid type for '{key}': expected an integer, but got {kind(value)} instead.", key, "invalid_type")
        if value < 1:
            if anthropic:
                return Refusal(f"{key}: Input should be greater than or equal to 1")
            return Refusal(f"Invalid '{key}': integer below minimum value. Expected a value >= 1, but got {value} instead.", key,
                           "integer_below_min_value")
    return None


def request_error(body: dict[str, Any], anthropic: bool) -> Refusal | None:
    """Why the provider would refuse `body`: its shape (`shapes.shape_error`), `max_tokens`, `n` or tool choice (see the
    module doc), or None."""
    refused = shape_error(body, anthropic) or _max_tokens_error(body, anthropic)
    if refused is not None:
        return refused
    choice = body.get("tool_choice")
    if anthropic:
        if choice is None:
            return None
        if not body.get("tools"):
            return Refusal("tool_choice may only be specified while providing tools.")
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind not in ("auto", "any", "tool", "none"):
            return Refusal("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
        name = choice.get("name") if kind == "tool" else None
        if kind == "tool" and not isinstance(name, str):
            return Refusal("tool_choice.tool.name: Field required")
        if kind == "tool" and name not in [t.get("name") for t in _anthropic_tools(body)]:
            return Refusal(f"Tool '{name}' not found in provided tools")
        return None
    refused = _n_error(body.get("n"))
    if refused is not None or choice is None:
        return refused
    if not body.get("tools"):
        return Refusal("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice")
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            return Refusal(f"Invalid value: '{choice}'. Supported values are: 'none', 'auto', and 'required'.", "tool_choice", "invalid_value")
        return None
    function = choice.get("function") if isinstance(choice, dict) else None
    if not isinstance(function, dict):
        return Refusal("Missing required parameter: 'tool_choice.function'.", "tool_choice.function", "missing_required_parameter")
    if not function.get("name"):
        return Refusal("Missing required parameter: 'tool_choice.function.name'.", "tool_choice.function.name", "missing_required_parameter")
    if function["name"] not in [f.get("name") for f in _openai_tools(body)]:
        return Refusal(f"Tool choice '{function['name']}' not found in 'tools' parameter.", "tool_choice")
    return None


def choice_count(body: dict[str, Any], anthropic: bool) -> int:
    """How many choices the reply holds: OpenAI's `n` (1 when absent); Anthropic has no `n`."""
    return 1 if anthropic or body.get("n") is None else int(body["n"])


def forced_tool(body: dict[str, Any], anthropic: bool) -> Forced | None:
    """The tool a request (checked by `request_error`) makes the model call, or None when it answers as usual."""
    choice = body.get("tool_choice")
    if anthropic:
        tools = _anthropic_tools(body)
        kind = str(choice.get("type")) if isinstance(choice, dict) else "auto"
        if not tools or kind == "none":
            return None
        named = choice.get("name") if isinstance(choice, dict) and kind == "tool" else None
        tool = next((t for t in tools if t.get("name") == named), None) if named is not None else tools[0]
        if tool is None:
            return None
        return Forced(str(tool.get("name")), tool.get("input_schema") or {"type": "object"}, "named" if named is not None else kind)
    functions = _openai_tools(body)
    if isinstance(choice, dict):
        named = (choice.get("function") or {}).get("name")
        function = next((f for f in functions if f.get("name") == named), None)
        return None if function is None else Forced(str(named), function.get("parameters") or {"type": "object"}, "named")
    if choice == "required" and functions:
        return Forced(str(functions[0]["name"]), functions[0].get("parameters") or {"type": "object"}, "required")
    return None


def openai_choice(index: int, text: str, finish: str, forced: Forced | None, as_call: bool, rid: str) -> dict[str, Any]:
    """Choice `index` of an OpenAI reply: `text` as the message, or, `as_call`, as the forced tool call's `arguments`.

    A forced call ends with `finish_reason` `stop` when the request named the
    function and `tool_calls` when it said `required` (OpenAI's own), `length`
    when it was cut short (its `arguments` then are cut JSON).
    """
    if forced is None or not as_call:
        return {"index": index, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
    call_id = "call_" + hashlib.sha256(f"{rid}:{index}".encode()).hexdigest()[:24]
    call = {"id": call_id, "type": "function", "function": {"name": forced.name, "arguments": text}}
    reason = finish if finish == "length" else ("stop" if forced.how == "named" else "tool_calls")
    return {"index": index, "message": {"role": "assistant", "content": None, "tool_calls": [call]}, "finish_reason": reason}


def reply_text(payload: dict[str, Any]) -> str:
    """A reply's completion text as a character-counting gateway sees it: every choice's text or tool call
    arguments (an Anthropic tool call's input as JSON)."""
    if "choices" in payload:
        parts = []
        for choice in payload["choices"]:
            message = choice["message"]
            parts.append(str(message.get("content") or "") + "".join(c["function"]["arguments"] for c in message.get("tool_calls") or []))
        return "".join(parts)
    return "".join(b.get("text") or json.dumps(b.get("input")) for b in payload.get("content") or [])
