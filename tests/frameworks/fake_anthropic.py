"""A scripted Anthropic Messages API server on 127.0.0.1 (plus the project's OTLP/HTTP receiver) for recording traces.

`ScriptedAnthropic(replies)` answers `POST /v1/messages` request number n with `replies[n]`: a
`(content blocks, usage)` pair, sent as one `Message` (non-streaming) or as the SSE events the API
streams (`message_start`, per block `content_block_start` / `_delta`… / `_stop`, `message_delta`,
`message_stop`) when the request says `stream: true`. Give `anthropic.Anthropic(base_url=fake.url)`
(no `/v1`: the SDK adds it). Every request body is kept in `bodies`. OTLP exports go to `/v1/traces`
as with `FakeOpenAI`, so `common.otel_provider` / `write_otlp` work unchanged.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from fake_openai import FakeOpenAI

__all__ = ["RESPONSE_MODEL", "ScriptedAnthropic"]

RESPONSE_MODEL = "claude-sonnet-4-5-20250929"  # the dated model the API reports; the client asks for the alias


def _stop_reason(blocks: list[dict[str, Any]]) -> str:
    return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"


def _deltas(block: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A block's `content_block_start` payload and its deltas, cut in pieces as the API streams them."""
    kind = block["type"]
    if kind == "text":
        t = block["text"]
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": t[i:i + 9]} for i in range(0, len(t), 9)]
    if kind == "thinking":
        t = block["thinking"]
        return ({"type": "thinking", "thinking": "", "signature": ""},
                [{"type": "thinking_delta", "thinking": t[i:i + 9]} for i in range(0, len(t), 9)]
                + [{"type": "signature_delta", "signature": block["signature"]}])
    raw = json.dumps(block["input"])
    return ({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
            [{"type": "input_json_delta", "partial_json": raw[i:i + 6]} for i in range(0, len(raw), 6)])


class ScriptedAnthropic(FakeOpenAI):
    """The server: request n to `/v1/messages` gets `replies[n]` (`(blocks, usage)`); `bodies` holds the requests."""

    def __init__(self, replies: list[tuple[list[dict[str, Any]], dict[str, int]]]) -> None:
        self.replies = replies
        self.bodies: list[dict[str, Any]] = []
        super().__init__()

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)
        app.router.add_post("/v1/messages", self._messages)

    def _next(self, body: dict[str, Any]) -> tuple[int, Any]:
        """Keep `body`; its number and the reply scripted for it (None when the script has none left)."""
        n = len(self.bodies)
        self.bodies.append(body)
        return n, self.replies[n] if n < len(self.replies) else None

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        n, reply = self._next(body)
        if reply is None:
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error", "message": f"no reply scripted for request {n}"}},
                                     status=400)
        blocks, usage = reply
        message = {"id": f"msg_{n:02d}", "type": "message", "role": "assistant", "model": RESPONSE_MODEL, "content": blocks,
                   "stop_reason": _stop_reason(blocks), "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return web.json_response(message)
        # The streamed form: usage's input side arrives in message_start, output_tokens in message_delta.
        events: list[dict[str, Any]] = [{"type": "message_start", "message": message | {"content": [], "stop_reason": None,
                                                                                         "usage": usage | {"output_tokens": 1}}}]
        for i, block in enumerate(blocks):
            start, deltas = _deltas(block)
            events.append({"type": "content_block_start", "index": i, "content_block": start})
            events += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
            events.append({"type": "content_block_stop", "index": i})
        events.append({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                       "usage": {"output_tokens": usage["output_tokens"]}})
        events.append({"type": "message_stop"})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for e in events:
            await resp.write(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode())
            await asyncio.sleep(0.001)
        await resp.write_eof()
        return resp
