"""Sending a payload: one shared aiohttp session per run, a POST read with a size cap, failures as `ProviderError`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from tracejudge.llm.replies import DEFAULT_MAX_BYTES, ReplyTooLarge, decode_body, read_capped
from tracejudge.llm.wire.records import HttpReply, ProviderError

if TYPE_CHECKING:  # imported where a session is opened or used: a run the cache answers whole never imports aiohttp
    import aiohttp

__all__ = ["open_session", "send"]

async def _headers_sent(session: aiohttp.ClientSession, ctx: Any, params: Any) -> None:
    # When the request left (after any wait for a connection and its handshake): a strict
    # window counts a request from its arrival, which is this plus the network's one-way trip.
    if isinstance(ctx.trace_request_ctx, dict):
        ctx.trace_request_ctx["sent"] = time.perf_counter()


def open_session(max_in_flight: int) -> aiohttp.ClientSession:
    """The one HTTP session a run shares (connection pool sized to the in-flight cap; sends are timed for `HttpReply.flight_s`)."""
    import aiohttp

    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(_headers_sent)
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=max_in_flight + 8, ttl_dns_cache=300), trace_configs=[trace])


async def send(session: aiohttp.ClientSession, url: str, headers: dict[str, str], payload: dict[str, Any], timeout_s: float,
               max_bytes: int = DEFAULT_MAX_BYTES, body: bytes | None = None) -> HttpReply:
    """POST `payload` (as `body` when given: that payload encoded as `json.dumps(payload).encode()`, as aiohttp's `json=`
    would); returns the reply whatever its status (at most `max_bytes` of it read).

    Raises `ProviderError` of kind `timeout`, `connection` or `unreachable`
    when no reply came, `server` when the reply is over `max_bytes`.
    `unreachable`: no connection made; `connection`: the connection was lost
    after it was made, with `no_reply` True when no status line had come back
    (a server that accepts and drops connections: the sender tells it from a
    request lost mid-reply, `stages.judge.calls.sending`).
    """
    import aiohttp

    t0 = time.perf_counter()
    timing: dict[str, float] = {}
    replied = False
    try:
        # `headers` carry the content type, so bytes go out exactly as `json=` would send them.
        content: dict[str, Any] = {"data": body} if body is not None else {"json": payload}
        async with session.post(url, **content, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout_s),
                                trace_request_ctx=timing) as resp:
            replied = True  # (a status line came back: the server answers HTTP)
            try:
                raw = await read_capped(resp, max_bytes)
            except ReplyTooLarge as exc:
                raise ProviderError("server", f"HTTP {resp.status}: {exc}", resp.status) from None
            hdrs = {k.lower(): v for k, v in resp.headers.items()}
            body = decode_body(raw)
            t1 = time.perf_counter()
            return HttpReply(resp.status, hdrs, body, t1 - t0, t1 - timing["sent"] if "sent" in timing else None, url)
    except TimeoutError:
        raise ProviderError("timeout", f"no reply within {timeout_s:g} s (judge.timeout_s {timeout_s:g}: raise it for a slow server)") from None
    except aiohttp.ClientConnectorError as exc:
        # Never connected: the provider cannot have seen (or billed) the request.
        raise ProviderError("unreachable", f"cannot connect: {type(exc).__name__}: {str(exc.os_error or exc)[:200]}") from None
    except aiohttp.ClientConnectionError as exc:
        lost = ProviderError("connection", f"connection failed: {type(exc).__name__}")
        lost.no_reply = not replied
        raise lost from None
    except aiohttp.ClientError as exc:
        raise ProviderError("connection", f"connection failed: {type(exc).__name__}") from None
