"""What an OpenAI or Anthropic request or response body, recorded whole beside the flattened messages, adds to them.

OpenInference's OpenAI instrumentation flattens a request's messages into `llm.input_messages.*` and also
keeps the request body (`input.value`) and the response body (`output.value`). The flattening writes no
attribute for an empty string, so a tool message whose text was `""` reads as one with no text: a call
that returned nothing, where the tool did return, an empty string. The body still holds it.
The Responses API's server-side conversation state is in the bodies only: the response's `id` and the
request's `previous_response_id` (also in `llm.invocation_parameters`).
OpenInference's Anthropic instrumentation flattens a Messages API `tool_result` block into a tool message
without its `is_error` flag (a failed call reads as a plain result), and a result sent as a list of content
blocks as that list's JSON text; the request body keeps both as sent (`anthropic_results`).
"""

from __future__ import annotations

import re
from typing import Any

from tracejudge.stages.extract.otel.messages import normalise_one
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["anthropic_results", "fill_tool_texts", "response_ids"]

_RESPONSE_OBJECT = re.compile(r'"object"\s*:\s*"response"')


def fill_tool_texts(inputs: list[dict[str, Any]] | None, body: Any) -> None:
    """Give each tool response in `inputs` that has no text the text the request body sent for its call (`""` too).

    The body's tool messages (`{"role": "tool", "tool_call_id", "content"}`) and Responses API
    `function_call_output` items (`call_id`, `output`) are matched by call id, the k-th response naming an
    id taking the k-th text sent for it. Only text is taken; a response that has one keeps it.
    """
    missing = [p for m in inputs or [] if m.get("role") == "tool" for p in m.get("parts") or []
               if p.get("type") == "tool_call_response" and p.get("response") is None and p.get("id") is not None]
    if not missing:
        return
    decoded = unjson(body)
    items = decoded.get("messages", decoded.get("input")) if isinstance(decoded, dict) else None
    sent: dict[str, list[Any]] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("role") == "tool" and item.get("tool_call_id") is not None:
            sent.setdefault(str(item["tool_call_id"]), []).append(item.get("content"))
        elif item.get("type") == "function_call_output" and item.get("call_id") is not None:
            sent.setdefault(str(item["call_id"]), []).append(item.get("output"))
    seen: dict[str, int] = {}
    for m in inputs or []:
        for p in m.get("parts") or [] if m.get("role") == "tool" else []:
            if p.get("type") != "tool_call_response" or p.get("id") is None:
                continue
            cid = str(p["id"])
            k = seen[cid] = seen.get(cid, -1) + 1
            texts = sent.get(cid, [])
            if p.get("response") is None and k < len(texts) and isinstance(texts[k], str):
                p["response"] = texts[k]


def anthropic_results(inputs: list[dict[str, Any]] | None, body: Any) -> None:
    """Give each tool response in `inputs` what the Anthropic request body's `tool_result` block for its call says.

    Blocks are matched by `tool_use_id`, the k-th response naming an id taking the k-th block sent for it. A block
    with `is_error: true` marks its response `is_error` (the call failed, its text the error, as format
    `anthropic-messages` reads it); a block whose `content` is a list of content blocks gives its text in place of
    the list's JSON text the flattening wrote (only when the response is that same list: nothing else is replaced).
    A body that is not an Anthropic request (no `tool_result` block in a user message) changes nothing.
    """
    decoded = unjson(body)
    messages = decoded.get("messages") if isinstance(decoded, dict) else None
    sent: dict[str, list[dict[str, Any]]] = {}
    for msg in messages if isinstance(messages, list) else []:
        content = msg.get("content") if isinstance(msg, dict) and msg.get("role") == "user" else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") is not None:
                sent.setdefault(str(block["tool_use_id"]), []).append(block)
    if not sent:
        return
    seen: dict[str, int] = {}
    for m in inputs or []:
        for p in m.get("parts") or []:
            if p.get("type") != "tool_call_response" or p.get("id") is None:
                continue
            cid = str(p["id"])
            k = seen[cid] = seen.get(cid, -1) + 1
            if k >= len(sent.get(cid, [])):
                continue
            block = sent[cid][k]
            if block.get("is_error") is True:
                p["is_error"] = True
            if isinstance(block.get("content"), list) and unjson(p.get("response")) == block["content"]:
                # the block read as any recorded tool_result block is (`messages`): its text blocks joined
                read = ((normalise_one({"role": "user", "content": [block]}) or {}).get("parts") or [{}])[0]
                if read.get("response") is not None:  # (a list holding no text, images alone, stays as recorded)
                    p["response"] = read["response"]


def response_ids(request: Any, response: Any, parameters: Any) -> tuple[str | None, str | None]:
    """`(response id, previous_response_id)` of a Responses API request out of its recorded bodies; `None` for each not recorded.

    The response id is the `id` of a response body (`"object": "response"`); the previous one comes from the
    invocation parameters, else the request body. A chat completion has neither.
    """
    own = None
    if isinstance(response, str) and _RESPONSE_OBJECT.search(response):
        body = unjson(response)
        if isinstance(body, dict) and body.get("object") == "response" and isinstance(body.get("id"), str) and body["id"]:
            own = body["id"]
    previous = None
    for raw in (parameters, request):
        if isinstance(raw, str) and "previous_response_id" not in raw:
            continue
        decoded = unjson(raw)
        value = decoded.get("previous_response_id") if isinstance(decoded, dict) else None
        if isinstance(value, str) and value:
            previous = value
            break
    return own, previous
