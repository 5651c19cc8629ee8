"""OpenAI Responses API hosted tools: calls the API ran inside the response, read as calls of their step.

A Responses API response that ran a hosted tool holds the tool's item in its `output`, beside the `message` it
answered with: `web_search_call`, `file_search_call`, `code_interpreter_call`, `image_generation_call` (the API's
built-in tools) and `mcp_call` (a remote MCP server's tool, the `mcp` tool). No function span and no later
request's `function_call_output` records them: the call and what it returned are the item. Each becomes, in the
output's order, the two parts Anthropic's server tools make (`otel/server_blocks.py`), so one reading serves both
(format `otel`'s `otel/server_tools.py`: the result from the same response, the text after the last hosted call the
step's output; format `openai-messages` reads its items alike):

- `{"type": "tool_call", "id": <item id>, "name", "arguments", "server": True}`;
- `{"type": "tool_call_response", "id": <item id>, "response", "error", "server": True}`.

| item | name | arguments | response |
|---|---|---|---|
| `web_search_call` | `web_search` | its `action` (`{"type": "search", "query"}`, `open_page`, `find`) | the action's `sources`, when the response included them (`include: ["web_search_call.action.sources"]`), else null |
| `file_search_call` | `file_search` | `{"queries"}` | its `results` (null unless included) |
| `code_interpreter_call` | `code_interpreter` | `{"code", "container_id"}` | its `outputs` (`logs`, `image` objects; null unless included) |
| `image_generation_call` | `image_generation` | `{}` | `"<image: N characters of base64>"`: the image itself is not copied into results |
| `mcp_call` | the MCP tool's `name` | its `arguments` (JSON text decoded) | its `output` (JSON text decoded) |

Keys the API set to null in `action` are left out. A call whose `status` is `failed` fails with "status: failed";
an `mcp_call`'s `error` is its error. Items the client runs (`computer_call`, `local_shell_call`,
`custom_tool_call`), MCP listings and approval requests are no hosted calls and are not read here.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.common import maybe_json

__all__ = ["HOSTED", "hosted_parts", "is_hosted"]

HOSTED = {"web_search_call": "web_search", "file_search_call": "file_search", "code_interpreter_call": "code_interpreter",
          "image_generation_call": "image_generation", "mcp_call": None}  # item type → tool name (None: the item's `name`)


def is_hosted(item: Any) -> bool:
    """Whether `item` (a Responses API output item) is a hosted tool's call."""
    return isinstance(item, dict) and item.get("type") in HOSTED


def hosted_parts(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The call and result parts of hosted item `item` (`is_hosted` holds): see the module docstring."""
    kind = item["type"]
    name = HOSTED[kind] or item.get("name") or kind
    cid = item.get("id")
    cid = None if cid in (None, "") else str(cid)
    error: str | None = None
    if kind == "web_search_call":
        action = item.get("action") if isinstance(item.get("action"), dict) else {}
        args: Any = {k: v for k, v in action.items() if v is not None and k != "sources"}
        result: Any = action.get("sources")
    elif kind == "file_search_call":
        args, result = {"queries": item.get("queries")}, item.get("results")
    elif kind == "code_interpreter_call":
        args = {k: item.get(k) for k in ("code", "container_id") if item.get(k) is not None}
        result = item.get("outputs")
    elif kind == "image_generation_call":
        image = item.get("result")
        args, result = {}, (f"<image: {len(image)} characters of base64>" if isinstance(image, str) and image else None)
    else:  # mcp_call
        args, result = maybe_json(item.get("arguments")), maybe_json(item.get("output"))
        if args in (None, ""):
            args = {}
        raw = item.get("error")
        error = raw if isinstance(raw, str) and raw else None if raw in (None, "", {}) else str(raw)
    if error is None and item.get("status") == "failed":
        error = "status: failed"
    return [{"type": "tool_call", "id": cid, "name": name, "arguments": args, "server": True},
            {"type": "tool_call_response", "id": cid, "response": result, "error": error, "server": True}]
