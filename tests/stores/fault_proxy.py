"""A loopback HTTP proxy in front of a real trace server that misbehaves as a test tells it to.

`FaultProxy(target)` forwards every request to `target` (a real `mlflow server`, `phoenix serve`)
from its own thread and event loop; `rule` says which requests misbehave and how:
`{"match": "traces/search", "method": "POST", "mode": ..., "times": 1}` — requests whose path
contains `match` (and of `method`, when given), the first `times` of them (all when None), are
answered by mode `500` (an error page; its text `body` when given), `garbage` (200 with a body that is not JSON), `drop` (the
connection closed, no answer), or `late` (forwarded, so the server does it, then answered after
`delay_s`: a server slower than the client's timeout). `requests` lists `(method, path)` seen.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from _loopback import Loopback
from aiohttp import web


class FaultProxy(Loopback):
    """The proxy: `Loopback`'s server thread and loop, with one route that forwards (or misbehaves)."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.rule: dict[str, Any] = {}
        self._hits = 0
        super().__init__(lambda headers, body: (500, {}))
        self.requests: list[tuple[str, str]] = []  # type: ignore[assignment]  # (method, path), not Loopback's bodies

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self._handle)

    def set(self, **rule: Any) -> None:
        """Misbehave as `rule` says from now on (an empty rule: forward everything)."""
        self.rule, self._hits = rule, 0

    def _matches(self, request: web.Request) -> bool:
        rule = self.rule
        if not rule or rule.get("match", "") not in request.path_qs or rule.get("method") not in (None, request.method):
            return False
        self._hits += 1
        return rule.get("times") is None or self._hits <= rule["times"]

    async def _forward(self, request: web.Request, body: bytes) -> web.Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length", "transfer-encoding")}
        async with aiohttp.ClientSession(auto_decompress=False) as session:
            async with session.request(request.method, self.target + request.path_qs, data=body, headers=headers) as resp:
                data = await resp.read()
                keep = {k: v for k, v in resp.headers.items() if k.lower() not in ("content-length", "transfer-encoding", "connection")}
                return web.Response(status=resp.status, body=data, headers=keep)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append((request.method, request.path_qs))
        mode = self.rule.get("mode") if self._matches(request) else None
        if mode == "500":
            return web.Response(status=500, text=self.rule.get("body", "Internal Server Error: database is locked"))
        if mode == "garbage":
            return web.Response(status=200, text="<html>a captive portal, not JSON</html>", content_type="application/json")
        if mode == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=500)
        answer = await self._forward(request, body)
        if mode == "late":
            await asyncio.sleep(float(self.rule.get("delay_s", 3)))
        return answer


class AuthProxy(FaultProxy):
    """A store behind a proxy answering 401 to any request without `Authorization: Bearer <token>` (nginx, oauth2-proxy)."""

    def __init__(self, target: str, token: str) -> None:
        self.token = token
        super().__init__(target)

    async def _handle(self, request):  # type: ignore[no-untyped-def]
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.Response(status=401, text="401 Authorization Required")
        return await super()._handle(request)
