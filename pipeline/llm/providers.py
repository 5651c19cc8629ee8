"""Judge providers: build a request payload, send it, read the reply — three small functions each.

Two wire protocols:

- `openai`: any OpenAI-compatible `POST {base_url}/chat/completions`
  (OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM proxy); structured output
  (`structured`, the config's `judge.structured_output`) through
  `response_format: {type: json_schema, json_schema: {name, schema, strict}}`,
  or `{type: json_object, schema}` (llama-cpp-python's server reads the schema
  there), or no `response_format` at all (`none`: the prompt gives the format).
- `anthropic`: `POST {base_url}/messages`; structured output through one
  tool whose `input_schema` is the verdict schema, forced with
  `tool_choice: {type: tool}`.

`simulator` speaks the OpenAI protocol to the loopback judge simulator.
`base_url` includes the version prefix (`https://api.openai.com/v1`).

API keys: `auth_headers` puts the key in a request header and nowhere else;
no error message, log line or record built here contains a header value, and
provider text copied into an error message is passed through
`tracejudge.llm.redact.redact` (an endpoint may echo the headers it got).

Nothing in a reply is trusted (`tracejudge.llm.replies`): `send` reads at most
`max_bytes` of it, a body nested too deep to decode is text, and `read_reply`
refuses usage figures that are not plausible token counts; each is a malformed
reply (kind `server`), never an exception of another kind. A refusal of the
request itself (`replies.request_refused`) is kind `request`: no retry can fix
it, only a change of config (`replies.request_fix` names the setting). A
content filter's 400 stays `fatal`: one item's content causes it.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from tracejudge.llm.redact import redact
from tracejudge.llm.replies import DEFAULT_MAX_BYTES, ReplyTooLarge, decode_body, read_capped, request_refused, token_count

if TYPE_CHECKING:  # imported where a session is opened or used: a run the cache answers whole never imports aiohttp
    import aiohttp

__all__ = [
    "DEFAULT_BASE_URLS",
    "HttpReply",
    "JudgeRequest",
    "ProviderError",
    "RateInfo",
    "Reply",
    "auth_headers",
    "build_payload",
    "endpoint",
    "open_session",
    "public_url",
    "rate_info",
    "read_reply",
    "send",
]

DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1"}
ANTHROPIC_VERSION = "2023-06-01"


@dataclass(frozen=True)
class JudgeRequest:
    """One judge request, provider-neutral.

    `messages` are `{"role": "system"|"user"|"assistant", "content": str}`;
    `schema` is the JSON schema the verdict must follow (named `schema_name`);
    `max_tokens` caps the reply; `temperature` is the sampling temperature.
    `cache_prefix` > 0 says the first user message's first `cache_prefix`
    characters (the fenced trace) are worth a provider's prompt cache: the
    payload then carries Anthropic's `cache_control` on that block, or
    OpenAI's `prompt_cache_key` (a hash of it).
    """

    model: str
    messages: tuple[dict[str, str], ...]
    schema: dict[str, Any]
    schema_name: str
    max_tokens: int
    temperature: float = 0.0
    cache_prefix: int = 0


@dataclass
class HttpReply:
    """What came back over HTTP: status, headers (lower-cased names), decoded JSON body (or text), seconds taken.

    `flight_s` is the seconds from the request's headers going out on the
    wire to the reply being read (`None` when the session does not trace
    sends); `latency_s` also counts waiting for a connection.
    """

    status: int
    headers: dict[str, str]
    body: Any
    latency_s: float
    flight_s: float | None = None


@dataclass
class Reply:
    """A provider's answer normalized: the verdict text, whether it was cut at `max_tokens`, usage.

    `input_tokens` is every prompt token; `cached_input_tokens` the part read
    from the provider's prompt cache (OpenAI `prompt_tokens_details.cached_tokens`,
    Anthropic `cache_read_input_tokens`) and `cache_write_input_tokens` the part
    written to it (Anthropic `cache_creation_input_tokens`, billed above the
    input rate). `cost_usd` is set by the judge client once priced.
    """

    text: str
    truncated: bool
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    cost_usd: float = 0.0


@dataclass
class RateInfo:
    """Rate-limit state a provider reported (any field may be missing). Times in seconds from now."""

    limit_requests: int | None = None
    limit_tokens: int | None = None
    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests_s: float | None = None
    reset_tokens_s: float | None = None
    retry_after_s: float | None = None


class ProviderError(Exception):
    """A failed attempt. `kind`: rate_limited, quota, server, timeout, connection (dropped after
    sending), unreachable (never connected), fatal, request (the request itself is refused: see the module doc).

    `retry_after_s` is the provider's `retry-after` when it sent one. The
    message holds the status and the provider's error text, never headers.
    """

    def __init__(self, kind: str, message: str, status: int | None = None, retry_after_s: float | None = None, rate: RateInfo | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after_s = retry_after_s
        self.rate = rate

    @property
    def retryable(self) -> bool:
        return self.kind in ("rate_limited", "server", "timeout", "connection", "unreachable")


def endpoint(provider: str, base_url: str | None) -> str:
    """The URL requests go to (`provider`: openai, anthropic, simulator)."""
    if provider == "simulator":
        if not base_url:
            raise ValueError("the simulator's base URL is only known once it started")
        base = base_url
    else:
        base = base_url or DEFAULT_BASE_URLS[provider]
    base = base.rstrip("/")
    return base + ("/messages" if provider == "anthropic" else "/chat/completions")


def public_url(url: str) -> str:
    """`url` without credentials or query (a key can hide in either): safe to print."""
    parts = urlsplit(url)
    host = parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else parts.netloc
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def auth_headers(provider: str, api_key: str | None) -> dict[str, str]:
    """Request headers carrying the key (none without a key)."""
    headers = {"content-type": "application/json"}
    if provider == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if api_key:
            headers["x-api-key"] = api_key
    elif api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


def _cached_block(req: JudgeRequest) -> tuple[int, str]:
    """(index of the first user message, its cacheable prefix), or (-1, "") when there is none."""
    if req.cache_prefix <= 0:
        return -1, ""
    first = next((i for i, m in enumerate(req.messages) if m["role"] == "user"), -1)
    return (first, req.messages[first]["content"][: req.cache_prefix]) if first >= 0 else (-1, "")


def _anthropic_message(m: dict[str, str], prefix: str) -> dict[str, Any]:
    # The trace block gets its own cache breakpoint; what follows it (the metric's questions) does not.
    rest = m["content"][len(prefix):]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": prefix, "cache_control": {"type": "ephemeral"}}]
    if rest:
        blocks.append({"type": "text", "text": rest})
    return {"role": m["role"], "content": blocks}


def response_format(req: JudgeRequest, structured: str = "json_schema") -> dict[str, Any] | None:
    """The OpenAI-protocol `response_format` for `req` under `structured` (`json_schema`, `json_object`, `none` → None)."""
    if structured == "none":
        return None
    if structured == "json_object":
        return {"type": "json_object", "schema": req.schema}
    return {"type": "json_schema", "json_schema": {"name": req.schema_name, "schema": req.schema, "strict": True}}


def build_payload(provider: str, req: JudgeRequest, structured: str = "json_schema") -> dict[str, Any]:
    """The JSON body for `req` in `provider`'s protocol (with the prompt-cache hints `req.cache_prefix` asks for).

    `structured` (OpenAI protocol only) says how the schema is sent (`response_format`); Anthropic always gets
    the schema as a forced tool's `input_schema`.
    """
    first, prefix = _cached_block(req)
    if provider == "anthropic":
        system = "\n\n".join(m["content"] for m in req.messages if m["role"] == "system")
        return {
            "model": req.model,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            **({"system": system} if system else {}),
            "messages": [_anthropic_message(m, prefix) if i == first else dict(m) for i, m in enumerate(req.messages) if m["role"] != "system"],
            "tools": [{"name": req.schema_name, "description": "Record the verdict.", "input_schema": req.schema}],
            "tool_choice": {"type": "tool", "name": req.schema_name},
        }
    fmt = response_format(req, structured)
    return {
        "model": req.model,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
        "messages": [dict(m) for m in req.messages],
        **({"response_format": fmt} if fmt is not None else {}),
        # Requests about one trace share a cache key, so OpenAI routes them to the same prompt cache.
        **({"prompt_cache_key": "tj-" + hashlib.sha256(prefix.encode()).hexdigest()[:32]} if prefix else {}),
    }


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
               max_bytes: int = DEFAULT_MAX_BYTES) -> HttpReply:
    """POST `payload`; returns the reply whatever its status (at most `max_bytes` of it read).

    Raises `ProviderError` of kind `timeout`, `connection` or `unreachable`
    when no reply came, `server` when the reply is over `max_bytes`.
    """
    import aiohttp

    t0 = time.perf_counter()
    timing: dict[str, float] = {}
    try:
        async with session.post(url, json=payload, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout_s),
                                trace_request_ctx=timing) as resp:
            try:
                raw = await read_capped(resp, max_bytes)
            except ReplyTooLarge as exc:
                raise ProviderError("server", f"HTTP {resp.status}: {exc}", resp.status) from None
            hdrs = {k.lower(): v for k, v in resp.headers.items()}
            body = decode_body(raw)
            t1 = time.perf_counter()
            return HttpReply(resp.status, hdrs, body, t1 - t0, t1 - timing["sent"] if "sent" in timing else None)
    except TimeoutError:
        raise ProviderError("timeout", f"no reply within {timeout_s:g} s (judge.timeout_s {timeout_s:g}: raise it for a slow server)") from None
    except aiohttp.ClientConnectorError as exc:
        # Never connected: the provider cannot have seen (or billed) the request.
        raise ProviderError("unreachable", f"cannot connect: {type(exc).__name__}: {str(exc.os_error or exc)[:200]}") from None
    except aiohttp.ClientError as exc:
        raise ProviderError("connection", f"connection failed: {type(exc).__name__}") from None


def _seconds(value: str | None) -> float | None:
    """OpenAI's `1.5s` / `6m0s` / `20ms`, a plain number, or an RFC 3339 time → seconds from now."""
    if value is None or value == "":
        return None
    v = value.strip()
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    if "T" in v and ("Z" in v or "+" in v):
        try:
            return max(0.0, datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() - time.time())
        except ValueError:
            return None
    total, num = 0.0, ""
    i = 0
    while i < len(v):
        c = v[i]
        if c.isdigit() or c == ".":
            num += c
        elif v.startswith("ms", i):
            total += float(num or 0) / 1000
            num = ""
            i += 1
        elif c in "hms":
            total += float(num or 0) * {"h": 3600, "m": 60, "s": 1}[c]
            num = ""
        else:
            return None
        i += 1
    return total


def _int(value: str | None) -> int | None:
    try:
        return int(float(value)) if value not in (None, "") else None
    except ValueError:
        return None


def rate_info(headers: dict[str, str]) -> RateInfo:
    """Rate-limit state from OpenAI (`x-ratelimit-*`) or Anthropic (`anthropic-ratelimit-*`) headers."""
    h = headers
    retry = None
    if "retry-after-ms" in h:
        retry = (_int(h["retry-after-ms"]) or 0) / 1000
    elif "retry-after" in h:
        retry = _seconds(h["retry-after"])
    if any(k.startswith("anthropic-ratelimit-") for k in h):
        p = "anthropic-ratelimit-"
        return RateInfo(
            _int(h.get(p + "requests-limit")), _int(h.get(p + "tokens-limit")),
            _int(h.get(p + "requests-remaining")), _int(h.get(p + "tokens-remaining")),
            _seconds(h.get(p + "requests-reset")), _seconds(h.get(p + "tokens-reset")), retry,
        )
    p = "x-ratelimit-"
    return RateInfo(
        _int(h.get(p + "limit-requests")), _int(h.get(p + "limit-tokens")),
        _int(h.get(p + "remaining-requests")), _int(h.get(p + "remaining-tokens")),
        _seconds(h.get(p + "reset-requests")), _seconds(h.get(p + "reset-tokens")), retry,
    )


def _error_text(body: Any, secrets: tuple[str | None, ...] = ()) -> str:
    # Redacted before it is cut, so a cut cannot leave half a credential unrecognised.
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        text = f"{err.get('type') or err.get('code') or 'error'}: {err.get('message', '')}"
    elif isinstance(body, dict) and isinstance(body.get("error"), str):
        text = f"error: {body['error']}"
    else:
        text = str(body)
    return redact(text, secrets)[:300]


def read_reply(provider: str, http: HttpReply, max_retry_after_s: float, secrets: tuple[str | None, ...] = ()) -> Reply:
    """Turn an HTTP reply into a `Reply`, or raise `ProviderError`.

    `secrets` (the configured key) are redacted from the provider's error text.

    429 → `rate_limited` (or `quota` when `retry-after` exceeds
    `max_retry_after_s`, or the body says the quota is exhausted); 5xx and 529
    → `server`, or `request` when the text names the request's fields; 408 →
    `timeout`; 401/403 → `fatal` (their status makes them auth errors); a
    content filter's 4xx → `fatal`; other 4xx → `request`; a 2xx whose body
    is an error object → `server` with the provider's own message; a 2xx of
    the wrong shape or with implausible usage → `server` ("unexpected reply shape").
    """
    rate = rate_info(http.headers)
    if http.status == 429:
        text = _error_text(http.body, secrets)
        quota = (rate.retry_after_s is not None and rate.retry_after_s > max_retry_after_s) or "insufficient_quota" in text
        kind = "quota" if quota else "rate_limited"
        raise ProviderError(kind, f"HTTP 429 {text}", 429, rate.retry_after_s, rate)
    if http.status >= 500 or http.status == 529:
        text = _error_text(http.body, secrets)
        kind = "request" if http.status != 529 and request_refused(http.status, text) else "server"
        raise ProviderError(kind, f"HTTP {http.status} {text}", http.status, rate.retry_after_s, rate)
    if http.status == 408:
        raise ProviderError("timeout", f"HTTP 408 {_error_text(http.body, secrets)}", 408)
    if http.status >= 400:
        text = _error_text(http.body, secrets)
        kind = "request" if http.status not in (401, 403) and request_refused(http.status, text) else "fatal"
        raise ProviderError(kind, f"HTTP {http.status} {text}", http.status)
    body = http.body
    if not isinstance(body, dict):
        raise ProviderError("server", f"HTTP {http.status}: reply is not a JSON object", http.status)
    if body.get("error") or body.get("type") == "error":
        # Some gateways answer 200 with an error body: report what the provider said, not a shape error.
        raise ProviderError("server", f"HTTP {http.status} with an error body: {_error_text(body, secrets)}", http.status)
    try:
        if provider == "anthropic":
            parts = []
            for block in body.get("content") or []:
                if block.get("type") == "tool_use":
                    parts.append(json.dumps(block.get("input")))
                elif block.get("type") == "text":
                    parts.append(block.get("text", ""))
            usage = body.get("usage") or {}
            # Anthropic's `input_tokens` leaves out both the tokens read from and written to its cache.
            cached = token_count(usage, "cache_read_input_tokens")
            written = token_count(usage, "cache_creation_input_tokens")
            return Reply("".join(parts), body.get("stop_reason") == "max_tokens",
                         token_count(usage, "input_tokens") + cached + written, token_count(usage, "output_tokens"), cached, written)
        choice = body["choices"][0]
        usage = body.get("usage") or {}
        text = choice["message"].get("content") or ""
        if not isinstance(text, str):
            raise TypeError("message.content is not text")
        return Reply(text, choice.get("finish_reason") == "length", token_count(usage, "prompt_tokens"), token_count(usage, "completion_tokens"),
                     token_count(usage.get("prompt_tokens_details") or {}, "cached_tokens"))
    except (KeyError, IndexError, TypeError, AttributeError, ValueError, OverflowError, RecursionError) as exc:
        raise ProviderError("server", f"HTTP {http.status}: unexpected reply shape ({type(exc).__name__})", http.status) from None

