"""A judge request on the wire: the URL it goes to, the headers carrying the key, the JSON body in the provider's protocol."""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tracejudge.llm.wire.records import JudgeRequest

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_BASE_URLS", "auth_headers", "build_payload", "endpoint", "protocol_of", "public_url", "response_format"]

DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1"}
ANTHROPIC_VERSION = "2023-06-01"


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


def protocol_of(cfg: Any) -> tuple[str, str]:
    """`(protocol, structured)` a judge config's requests are sent in: `anthropic` for that provider, else `openai`
    (every OpenAI-compatible server), and how the verdict schema goes (`judge.structured_output`; Anthropic always
    gets it as a forced tool: `json_schema`). `cfg` is a `JudgeConfig`."""
    protocol = "anthropic" if cfg.provider == "anthropic" else "openai"
    return protocol, cfg.structured_output if protocol == "openai" else "json_schema"


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
    the schema as a forced tool's `input_schema`. `req.extra_body`'s fields are added to the body (`judge.extra_body`).
    """
    first, prefix = _cached_block(req)
    if provider == "anthropic":
        system = "\n\n".join(m["content"] for m in req.messages if m["role"] == "system")
        return _with_extra(req, {
            "model": req.model,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            **({"system": system} if system else {}),
            "messages": [_anthropic_message(m, prefix) if i == first else dict(m) for i, m in enumerate(req.messages) if m["role"] != "system"],
            "tools": [{"name": req.schema_name, "description": "Record the verdict.", "input_schema": req.schema}],
            "tool_choice": {"type": "tool", "name": req.schema_name},
        })
    fmt = response_format(req, structured)
    return _with_extra(req, {
        "model": req.model,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
        "messages": [dict(m) for m in req.messages],
        **({"response_format": fmt} if fmt is not None else {}),
        # Requests about one trace share a cache key, so OpenAI routes them to the same prompt cache.
        **({"prompt_cache_key": "tj-" + hashlib.sha256(prefix.encode()).hexdigest()[:32]} if prefix else {}),
    })


def _with_extra(req: JudgeRequest, body: dict[str, Any]) -> dict[str, Any]:
    """`body` with `req.extra_body`'s fields added. Raises `ValueError` for a field `body` has: the config refuses such a
    key (`tracejudge.core.extra_body.reserved`), so one here is a request built past that check, never sent either way."""
    if not req.extra_body:
        return body
    clash = sorted(body.keys() & req.extra_body.keys())
    if clash:
        raise ValueError(f"judge.extra_body.{clash[0]}: tracejudge sets this field itself")
    return {**body, **req.extra_body}
