"""Anthropic server tool blocks as parts of the normalised message form (`view`), read as format `anthropic-messages` reads them.

A Messages API response that ran a server tool (`server_tool_use`: web_search, web_fetch, code execution, tool search;
`mcp_tool_use` with the MCP connector) holds the call and, right behind it, its result block (`web_search_tool_result`,
`web_fetch_tool_result`, …, `mcp_tool_result`) in the same assistant message: the API ran the tool, no later request
sends its result. The blocks become, in the message's order:

- `{"type": "tool_call", "id", "name", "arguments", "server": True}`, `arguments` the block's `input`;
- `{"type": "tool_call_response", "id": <its tool_use_id>, "response", "error", "server": True}`, with `response` and
  `error` what the native reader makes of the block (`TraceBuilder.set_result`): text content (a string, or a list of
  text blocks as the MCP connector sends it) is its text, JSON text decoded; other content (a web search's list of
  results, a fetched document, a code execution's result object) stays as recorded; `error` is the text of a block
  with `is_error: true` (`"error"` when it has none), a `*_error` content object's `error_message` else its
  `error_code`, an MCP CallToolResult's own error, else `None` (a script that exited non-zero is a result).

A client `tool_result` block is not one of these (`messages` reads it as any tool response).
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.anthropic_messages import SERVER_CALLS, is_result, result_error
from tracejudge.stages.extract.common import maybe_json, mcp_error, text_of
from tracejudge.stages.extract.otel.view import tool_call_part

__all__ = ["flattened_blocks", "is_server_block", "server_part"]


def is_server_block(kind: Any) -> bool:
    """Whether a content block `type` is a server tool's call or result (not a client `tool_use` / `tool_result`)."""
    return kind in SERVER_CALLS or (kind != "tool_result" and is_result(kind))


def server_part(block: dict[str, Any]) -> dict[str, Any]:
    """The part of server tool block `block` (`is_server_block` of its type holds): see the module docstring."""
    if block.get("type") in SERVER_CALLS:
        return {**tool_call_part(block.get("id"), block.get("name"), block.get("input")), "server": True}
    content = block.get("content")
    text = content if isinstance(content, str) else text_of(content)
    result = maybe_json(text if text is not None else content)
    flag = result_error(block)
    error = flag if isinstance(flag, str) and flag else (text or "error") if flag else mcp_error(result)
    cid = block.get("tool_use_id")
    return {"type": "tool_call_response", "id": None if cid in (None, "") else str(cid), "response": result, "error": error, "server": True}


def flattened_blocks(contents: list[Any]) -> list[dict[str, Any]] | None:
    """The Anthropic content blocks of a message OpenInference flattened into `contents.{k}` (`message_content` /
    `tool_call` of each, by index), when one of them is a server tool's result; `None` otherwise (read as before).

    The flattening writes a server call as a `tool_use` content (`tool_call.{id,function.name,function.arguments}`),
    like a client call, and a result block as a content of the block's type whose `text` is the block's JSON. A
    `tool_use` whose id a result block of the same message answers is a server call; text and `reasoning` contents
    stay text and thinking blocks; a result whose text is no JSON block is left out.
    """
    if not any(isinstance(c, dict) and isinstance(c.get("message_content"), dict) and is_server_block(c["message_content"].get("type"))
               for c in contents):
        return None
    blocks: list[dict[str, Any]] = []
    for c in contents:
        said = c.get("message_content") if isinstance(c, dict) else None
        call = c.get("tool_call") if isinstance(c, dict) else None
        if isinstance(call, dict):
            fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
            blocks.append({"type": "tool_use", "id": call.get("id"), "name": fn.get("name"), "input": fn.get("arguments")})
        elif isinstance(said, dict) and is_server_block(said.get("type")):
            block = maybe_json(said.get("text"))
            if isinstance(block, dict) and is_server_block(block.get("type")):
                blocks.append(block)
        elif isinstance(said, dict) and isinstance(said.get("text"), str):
            blocks.append({"type": "thinking", "thinking": said["text"]} if said.get("type") == "reasoning" else {"type": "text", "text": said["text"]})
    answered = {str(b.get("tool_use_id")) for b in blocks if b.get("type") != "tool_use" and b.get("tool_use_id") is not None}
    return [{**b, "type": "server_tool_use"} if b.get("type") == "tool_use" and str(b.get("id")) in answered else b for b in blocks]
