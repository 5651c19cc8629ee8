"""A scriptable judge endpoint on 127.0.0.1 for tests: records every request, answers as told.

`Loopback(respond)` serves `POST /v1/chat/completions` (OpenAI protocol) in its
own thread and event loop. `respond(headers, body)` returns `(status, json)`
or the string `"hang"` (never answer until the server stops). `verdict(body)`
builds a valid verdict for the request's schema; `completion(text)` wraps text
as an OpenAI reply; `answers_then_hangs(n)` answers the first n requests, then hangs.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

Respond = Callable[[dict[str, str], dict[str, Any]], Any]


def verdict(body: dict[str, Any]) -> dict[str, Any]:
    """A valid verdict for the request's schema: every question answered yes (or the lowest grade)."""
    schema = body["response_format"]["json_schema"]["schema"]
    props = schema["properties"]
    if "answers" in props:  # the shared schema: answer every question id the prompt lists
        text = "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "user")
        ids = dict.fromkeys(re.findall(r"(?m)^([A-Z]+\d+): ", text))
        return {"answers": [{"id": q, "answer": "yes", "reason": "fine"} for q in ids]}
    if "score" in props:
        return {"score": props["score"].get("minimum", 1), "reason": "graded"}
    return {q: {"answer": "yes", "reason": "fine"} for q in props}


def any_verdict(body: dict[str, Any]) -> dict[str, Any]:
    """`verdict(body)`, or for a multi-item request (`judge.items_per_request`: a property per item id) one per item."""
    schema = body["response_format"]["json_schema"]["schema"]
    if "$defs" in schema and all(k.startswith("i") for k in schema["properties"]):
        return {i: verdict({"response_format": {"json_schema": {"schema": schema["$defs"][ref["$ref"].split("/")[-1]]}}, "messages": []})
                for i, ref in schema["properties"].items()}
    return verdict(body)


def completion(text: str) -> dict[str, Any]:
    """An OpenAI chat completion carrying `text`."""
    return {"id": "x", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"}], "usage": {"prompt_tokens": 50, "completion_tokens": 10}}


def answers_then_hangs(answered: int) -> Respond:
    """A `respond` for a judge that freezes: the first `answered` requests get a verdict as the OpenAI API sends it,
    every later one no reply at all. (A judge that never answered stops the run instead: most tests of what
    timeouts do need one that has answered.)"""
    seen: list[int] = []

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        seen.append(1)
        return (200, completion(json.dumps(verdict(body)))) if len(seen) <= answered else "hang"

    return respond


class Loopback:
    """The server; `url` is its base URL (without `/v1`), `requests` the (headers, body) pairs received."""

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._release: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("loopback server did not start")

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        headers = dict(request.headers)
        self.requests.append((headers, body))
        got = self.respond(headers, body)
        if got == "hang":
            assert self._release is not None
            await self._release.wait()
            return web.json_response({"error": {"message": "server stopping"}}, status=503)
        status, payload = got
        return web.Response(status=status, text=json.dumps(payload), content_type="application/json")

    def _routes(self, app: web.Application) -> None:
        """Mount the handlers; subclasses serving more routes override this."""
        app.router.add_post("/v1/chat/completions", self._handle)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> web.AppRunner:
            self._release = asyncio.Event()
            app = web.Application(client_max_size=64 * 1024 * 1024)
            self._routes(app)
            runner = web.AppRunner(app)
            await runner.setup()
            site = self._site = web.TCPSite(runner, "127.0.0.1", 0)  # (a subclass may stop listening: `_site.stop()`)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.url = f"http://127.0.0.1:{port}"
            return runner

        runner = self._loop.run_until_complete(start())
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())
        self._loop.close()

    def stop(self) -> None:
        """Answer every hanging request, stop the server and its thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(lambda: self._release.set() if self._release else None)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(15)

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
