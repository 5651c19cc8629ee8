"""A scripted Gemini API server on 127.0.0.1 (plus the project's OTLP/HTTP receivers) for recording traces.

`ScriptedGemini(replies)` answers request number n to `POST /<version>/models/<model>:generateContent` with `replies[n]`,
a `(parts, usage)` pair (`parts` in the API's JSON: `{"text"}`, `{"functionCall": {"name", "args"}}`; `usage`
`{"prompt", "output"}`), as one `GenerateContentResponse`, and to `:streamGenerateContent?alt=sse` as the chunks the
API streams: the text in pieces, each function call whole, the finish reason and the usage on the last. Give
`genai.Client(api_key=..., http_options=HttpOptions(base_url=fake.url))`. Vertex AI's path for the same calls,
`/<version>/projects/<p>/locations/<l>/publishers/google/models/<model>:...`, is answered alike (give
`vertexai.init(api_endpoint=fake.url, api_transport="rest", ...)`); a stream asked for without `alt=sse`, as
google-cloud-aiplatform's REST transport asks, gets the chunks as one JSON array, which that transport reads. Every request body is kept in `bodies`;
OTLP span exports go to `/v1/traces` as with `FakeOpenAI`, log exports to `/v1/logs` (`record_openllmetry_events`).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from record_openllmetry_events import LoggedAnthropic

__all__ = ["MODEL_VERSION", "ScriptedGemini"]

MODEL_VERSION = "gemini-2.5-flash-001"  # the version the API reports; the client asks for `gemini-2.5-flash`


def _response(parts: list[dict[str, Any]], usage: dict[str, int] | None, n: int, finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"  # the API says STOP for a reply of function calls too
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL_VERSION, "responseId": f"resp-{n}"}
    if usage is not None:
        out["usageMetadata"] = {"promptTokenCount": usage["prompt"], "candidatesTokenCount": usage["output"],
                                "totalTokenCount": usage["prompt"] + usage["output"]}
    return out


class ScriptedGemini(LoggedAnthropic):
    """The server: request n to `models/<model>:generateContent` (or `:streamGenerateContent`) gets `replies[n]`, a
    `(parts, usage)` pair (the Anthropic script's bookkeeping and routes, which no Gemini client calls)."""

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)
        app.router.add_post("/{version}/models/{call}", self._generate)
        app.router.add_post("/{version}/projects/{project}/locations/{location}/publishers/google/models/{call}", self._generate)

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        n, reply = self._next(await request.json())
        if reply is None:
            return web.json_response({"error": {"code": 400, "message": f"no reply scripted for request {n}"}}, status=400)
        parts, usage = reply
        if not request.match_info["call"].endswith(":streamGenerateContent"):
            return web.json_response(_response(parts, usage, n, finish=True))
        chunks: list[dict[str, Any]] = []
        for part in parts:
            text = part.get("text")
            chunks += [_response([{"text": text[i:i + 8]}], None, n, False) for i in range(0, len(text), 8)] if text else [
                _response([part], None, n, False)]
        last = chunks.pop() if chunks else _response([], None, n, False)
        chunks.append(_response(last["candidates"][0]["content"]["parts"], usage, n, finish=True))
        if request.query.get("alt") != "sse":
            return web.json_response(chunks)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for c in chunks:
            await resp.write(f"data: {json.dumps(c)}\r\n\r\n".encode())
        await resp.write_eof()
        return resp
