"""What the simulator sends a client that asks for a stream.

A request with `"stream": true` gets its reply as server-sent events, in the
providers' own event shapes, so the OpenAI and Anthropic SDKs (and anything
else written against the real APIs) can stream from the simulator:

- OpenAI chat completions: `chat.completion.chunk` objects, per choice (`n`)
  the first with the assistant role, the reply's text in pieces (or a tool
  call's id and name, then its `arguments` in pieces), a last one with
  `finish_reason`; with `stream_options.include_usage`, a chunk with empty
  `choices` and the `usage`; then `data: [DONE]`.
- Anthropic messages: `message_start`, one `content_block_start` /
  `content_block_delta` (`text_delta`, or `input_json_delta` for a forced
  tool's input) / `content_block_stop` per block, `message_delta` with the
  `stop_reason` and output tokens, `message_stop`.

The events carry exactly the reply the same request gets without a stream
(`answer`): the text joined from its deltas is that reply's text.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

__all__ = ["stream_reply"]

_PIECE = 16  # characters per text delta: a reply arrives in several events, as a model's does


def _pieces(text: str) -> list[str]:
    return [text[i:i + _PIECE] for i in range(0, len(text), _PIECE)] or [""]


def _openai_events(payload: dict[str, Any], include_usage: bool) -> list[str]:
    base = {"id": payload["id"], "object": "chat.completion.chunk", "created": payload["created"], "model": payload["model"]}

    def chunk(index: int, delta: dict[str, Any], finish: str | None) -> str:
        return json.dumps({**base, "choices": [{"index": index, "delta": delta, "finish_reason": finish}]})

    out = []
    for choice in payload["choices"]:
        i, message = choice["index"], choice["message"]
        calls = message.get("tool_calls") or []
        if calls:  # a tool call opens with its id and name, then its arguments arrive in pieces
            opened = [{"index": k, "id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": ""}}
                      for k, c in enumerate(calls)]
            out.append(chunk(i, {"role": "assistant", "content": None, "tool_calls": opened}, None))
            out += [chunk(i, {"tool_calls": [{"index": k, "function": {"arguments": p}}]}, None)
                    for k, c in enumerate(calls) for p in _pieces(c["function"]["arguments"]) if p]
        else:
            out.append(chunk(i, {"role": "assistant", "content": ""}, None))
            out += [chunk(i, {"content": p}, None) for p in _pieces(message.get("content") or "") if p]
        out.append(chunk(i, {}, choice["finish_reason"]))
    if include_usage:
        out.append(json.dumps({**base, "choices": [], "usage": payload["usage"]}))
    return out


def _anthropic_events(payload: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    usage = payload["usage"]
    start = {**payload, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    out: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(payload["content"]):
        if block["type"] == "tool_use":
            opened = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(json.dumps(block["input"]))]
        else:
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        out.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": opened}))
        out += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
        out.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": payload["stop_reason"], "stop_sequence": None},
                                  "usage": {"output_tokens": usage["output_tokens"]}}))
    out.append(("message_stop", {"type": "message_stop"}))
    return out


async def stream_reply(request: web.Request, body: dict[str, Any], payload: dict[str, Any], anthropic: bool,
                       headers: dict[str, str]) -> web.StreamResponse:
    """Send `payload` (the reply `answer` made for `body`) as the provider's server-sent events."""
    response = web.StreamResponse(headers={**headers, "content-type": "text/event-stream", "cache-control": "no-cache"})
    await response.prepare(request)
    if anthropic:
        for event, data in _anthropic_events(payload):
            await response.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
    else:
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        for data in _openai_events(payload, include_usage):
            await response.write(f"data: {data}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response
