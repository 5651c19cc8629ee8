"""A scripted OpenAI-compatible server on 127.0.0.1, plus an OTLP/HTTP receiver, for recording framework traces.

`FakeOpenAI()` starts an aiohttp server in its own thread on a free port; `base_url` is
`http://127.0.0.1:PORT/v1` (give it to any OpenAI client). Routes:

- `POST /v1/chat/completions`: the next scripted reply (non-streaming, or SSE chunks when
  `stream` is true), always with `usage`.
- `POST /v1/traces/ingest`: the OpenAI Agents SDK's `BackendSpanExporter` batches (`{"data": [...]}`),
  kept as posted in `ingested`.
- `POST /v1/traces` and `POST /api/public/otel/v1/traces`: OTLP/HTTP trace exports (protobuf or
  JSON); each request becomes one OTLP/JSON document in `otlp` (see `otlp_json`).

The reply is decided by `tasks.reply_for(messages)`: the task (and user turn) is found by its
user text in the conversation, the step by how many model turns follow that user text. An
unknown conversation gets HTTP 400 naming the problem, so a framework that sends something
unexpected fails loudly instead of recording a made-up run.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for _loopback
from _loopback import Loopback  # noqa: E402

try:  # run as a script (tests/frameworks on sys.path) or imported as tests.frameworks
    from tasks import reply_for
except ImportError:  # pragma: no cover
    from .tasks import reply_for

__all__ = ["FakeOpenAI", "otlp_json"]

_IDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node: Any) -> Any:
    """Rewrite base64 trace/span ids (protobuf's JSON mapping) as lowercase hex, as OTLP/JSON requires."""
    if isinstance(node, dict):
        return {k: (base64.b64decode(v).hex() if k in _IDS and isinstance(v, str) else _hex_ids(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def otlp_json(body: bytes, content_type: str) -> dict[str, Any]:
    """One OTLP/HTTP trace export body as the OTLP/JSON document the Collector's file exporter writes.

    Protobuf bodies are decoded with the OTLP proto and mapped by protobuf's JSON mapping (camelCase
    keys, int64 as strings, enums as numbers) with trace/span ids as hex; JSON bodies are kept as sent.
    """
    if "json" in content_type:
        return json.loads(body)
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    return _hex_ids(MessageToDict(req, use_integers_for_enums=True))


def _completion(message: dict[str, Any], usage: dict[str, int], model: str) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {"id": f"chatcmpl-{usage['prompt_tokens']}-{usage['completion_tokens']}", "object": "chat.completion", "created": 1767225600, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}], "usage": usage}


def _chunks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The same completion as streaming chunks: role, content, each tool call whole, finish, then usage."""
    base = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    msg, finish = reply["choices"][0]["message"], reply["choices"][0]["finish_reason"]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    if msg.get("content"):
        deltas.append({"content": msg["content"]})
    deltas += [{"tool_calls": [dict(call, index=i)]} for i, call in enumerate(msg.get("tool_calls") or [])]
    out = [base | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    out.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    out.append(base | {"choices": [], "usage": reply["usage"]})
    return out


class FakeOpenAI(Loopback):
    """The server. `base_url` ends in `/v1`; `chats` holds every chat request body; `otlp` every OTLP export received.
    `fail` chat requests to come are answered 500 (a provider outage the application retries)."""

    def __init__(self) -> None:
        self.fail = 0
        self.otlp: list[dict[str, Any]] = []
        self.chats: list[dict[str, Any]] = []
        self.ingested: list[dict[str, Any]] = []
        super().__init__(lambda headers, body: (500, {}))

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def _routes(self, app: web.Application) -> None:
        for path in ("/v1/chat/completions", "/chat/completions"):
            app.router.add_post(path, self._chat)
        for path in ("/v1/traces", "/api/public/otel/v1/traces"):  # OTel SDK default, Langfuse's OTLP endpoint
            app.router.add_post(path, self._traces)
        app.router.add_post("/v1/traces/ingest", self._ingest)  # the OpenAI Agents SDK's trace exporter

    async def _ingest(self, request: web.Request) -> web.Response:
        self.ingested.append(await request.json())
        return web.Response(status=204)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if self.fail > 0:
            self.fail -= 1
            return web.json_response({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}, status=500)
        self.chats.append(body)
        try:
            message, usage = reply_for(body["messages"], body.get("tools"))
        except LookupError as e:
            return web.json_response({"error": {"message": str(e), "type": "invalid_request_error"}}, status=400)
        reply = _completion(message, usage, body.get("model", "fake-model"))
        if not body.get("stream"):
            return web.json_response(reply)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for chunk in _chunks(reply):
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _traces(self, request: web.Request) -> web.Response:
        body = await request.read()  # aiohttp has already undone Content-Encoding: gzip
        self.otlp.append(otlp_json(body, request.headers.get("Content-Type", "")))
        return web.Response(status=200, body=b"", content_type="application/x-protobuf")

    def take_otlp(self) -> list[dict[str, Any]]:
        """The OTLP documents received so far; clears the list."""
        out, self.otlp = self.otlp, []
        return out

    def close(self) -> None:
        """Stop the server and its thread."""
        self.stop()
