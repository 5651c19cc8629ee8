"""An HTTP reply read as the provider's answer (`Reply`) or as a `ProviderError` of the kind retries and stops act on."""

from __future__ import annotations

import json
from typing import Any

from tracejudge.llm.redact import redact
from tracejudge.llm.replies import request_refused, token_count
from tracejudge.llm.wire.rate_headers import rate_info
from tracejudge.llm.wire.records import HttpReply, ProviderError, Reply

__all__ = ["read_reply"]


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
    # Only a refusal carries its rate state on the error; a success's is read by the caller that needs it.
    if http.status == 429:
        rate = rate_info(http.headers)
        text = _error_text(http.body, secrets)
        quota = (rate.retry_after_s is not None and rate.retry_after_s > max_retry_after_s) or "insufficient_quota" in text
        kind = "quota" if quota else "rate_limited"
        raise ProviderError(kind, f"HTTP 429 {text}", 429, rate.retry_after_s, rate)
    if http.status >= 500 or http.status == 529:
        rate = rate_info(http.headers)
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
