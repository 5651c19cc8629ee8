"""Target kind `http`: POST each turn's request as JSON over one shared aiohttp session."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable

import aiohttp
import anyio
from tracejudge.core.errors import ConfigError
from tracejudge.llm.replies import DEFAULT_MAX_BYTES, ReplyTooLarge, read_capped
from tracejudge.llm.redact import ENV_VAR, variable_name
from tracejudge.stages.target.protocol import TargetError, TargetReply, TargetRequest, TransientTargetError, coerce_reply

__all__ = ["expand_headers", "http_caller"]

# 408/425/429 and the gateway-ish 5xx say "try again"; other statuses are the agent's verdict.
_TRANSIENT_STATUS = {408, 425, 429, 500, 502, 503, 504}


def expand_headers(headers: dict[str, str]) -> dict[str, str]:
    """Replace every `${NAME}` in header values with the environment variable `NAME`.

    Raises `ConfigError` naming the header and the variable (never a value)
    when a variable is not set.
    """
    out: dict[str, str] = {}
    for key, value in headers.items():

        def sub(m: re.Match[str], key: str = key) -> str:
            name = m.group(1)
            if name not in os.environ:
                raise ConfigError(f"target.headers.{key}: environment variable {variable_name(name)} is not set")
            return os.environ[name]

        out[key] = ENV_VAR.sub(sub, value)
    return out


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP-date: rare from agents; the exponential back-off applies


def http_caller(url: str, headers: dict[str, str], concurrency: int,
                max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[Callable[[TargetRequest], Awaitable[TargetReply]], Callable[[], Awaitable[None]]]:
    """`(call, aclose)` for an http target at `url`.

    `headers` are already expanded (secrets included): they are sent and
    never echoed in an error message. The session is opened on the first call
    (it needs the running loop) with at most `concurrency` connections, and
    closed by `aclose`. A connection that cannot be made while the target never
    answered is marked `unreachable` (see `TransientTargetError`). Connection errors, timeouts at the socket and the
    statuses 408/425/429/5xx are transient (`Retry-After` is honoured); other
    non-2xx statuses and a body that is not a JSON reply fail the case, with
    the status and the start of the body. At most `max_bytes` of a reply are
    read (`target.max_response_bytes`): a longer or endless one fails the case.
    """
    from tracejudge.core.urls import shown_url

    shown = shown_url(url)  # (a token in the URL's query or user part stays out of every message)
    state: dict[str, aiohttp.ClientSession] = {}
    reached = [False]  # some reply came from the target this run: a later refused connection is one case's failure
    lock = anyio.Lock()

    async def session() -> aiohttp.ClientSession:
        async with lock:
            if "s" not in state:
                state["s"] = aiohttp.ClientSession(
                    headers=headers,
                    connector=aiohttp.TCPConnector(limit=concurrency),
                    timeout=aiohttp.ClientTimeout(total=None),  # the stage's per-case timeout rules
                )
            return state["s"]

    async def call(request: TargetRequest) -> TargetReply:
        s = await session()
        try:
            async with s.post(url, json=request.model_dump(mode="json")) as resp:
                reached[0] = True
                try:
                    body = await read_capped(resp, max_bytes)
                except ReplyTooLarge as exc:
                    raise TargetError(f"HTTP {resp.status} from {shown}: {exc}") from None
                if resp.status in _TRANSIENT_STATUS:
                    raise TransientTargetError(f"HTTP {resp.status} from {shown}: {body[:300].decode(errors='replace')}", _retry_after(resp.headers.get("Retry-After")))
                if resp.status >= 300:
                    raise TargetError(f"HTTP {resp.status} from {shown}: {body[:300].decode(errors='replace')}")
        except aiohttp.ClientConnectorError as exc:  # no connection made at all (refused, no such host)
            raise TransientTargetError(f"{type(exc).__name__} from {shown}: {exc}", unreachable=not reached[0]) from None
        except aiohttp.ClientConnectionError as exc:
            raise TransientTargetError(f"{type(exc).__name__} from {shown}: {exc}") from None
        except aiohttp.ClientError as exc:
            raise TargetError(f"{type(exc).__name__} from {shown}: {exc}") from None
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            raise TargetError(f"reply from {shown} is not JSON: {body[:200].decode(errors='replace')!r}") from None
        return coerce_reply(value)

    async def aclose() -> None:
        s = state.pop("s", None)
        if s is not None:
            await s.close()

    return call, aclose

