"""Sending a payload: one shared aiohttp session per run, a POST read with a size cap, failures as `ProviderError`."""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tracejudge.llm.replies import DEFAULT_MAX_BYTES, ReplyTooLarge, decode_body, read_capped
from tracejudge.llm.wire.records import HttpReply, ProviderError

if TYPE_CHECKING:  # imported where a session is opened or used: a run the cache answers whole never imports aiohttp
    import aiohttp

__all__ = ["open_session", "send"]

# Per session, the origins (scheme, host, port) that have sent back an HTTP reply. A connection reset by an origin that
# never answered anything is a server that accepts and drops every connection (or is not the judge): as unreachable as
# a refused one. Once it has answered, a reset is one request's failure (kind `connection`), retried and billed as before.
_ANSWERED: weakref.WeakKeyDictionary[Any, set[tuple[str, str, int | None]]] = weakref.WeakKeyDictionary()
# How long a reset from a never-answered origin waits for another request in flight there to be answered before it is
# called unreachable: a server that drops one early request of a concurrent start (and answers the others) is not.
RESET_GRACE_S = 1.0


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname or "", parts.port


def _answered(session: Any, url: str) -> bool:
    return _origin(url) in _ANSWERED.get(session, ())


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
    `unreachable`: no connection made, or the connection was reset or closed
    before any reply while this session never got a reply from the origin
    (after `RESET_GRACE_S` for another request in flight there to be answered);
    `connection`: lost after the origin had answered something.
    """
    import aiohttp

    t0 = time.perf_counter()
    timing: dict[str, float] = {}
    try:
        # `headers` carry the content type, so bytes go out exactly as `json=` would send them.
        content: dict[str, Any] = {"data": body} if body is not None else {"json": payload}
        async with session.post(url, **content, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout_s),
                                trace_request_ctx=timing) as resp:
            _ANSWERED.setdefault(session, set()).add(_origin(url))  # (a status line came back: the origin answers HTTP)
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
        if not _answered(session, url):
            await asyncio.sleep(min(RESET_GRACE_S, timeout_s))
        if _answered(session, url):
            raise ProviderError("connection", f"connection failed: {type(exc).__name__}") from None
        raise ProviderError("unreachable", f"the server accepted the connection but closed or reset it without a reply, and has "
                            f"answered no request ({type(exc).__name__})") from None
    except aiohttp.ClientError as exc:
        raise ProviderError("connection", f"connection failed: {type(exc).__name__}") from None
