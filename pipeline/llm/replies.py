"""Reading a provider's reply safely, and telling a refused request from a failed server.

Nothing in a reply is trusted (`tracejudge.llm.providers` reads through
these): `read_capped` reads at most `max_bytes` of a body (an endless or huge
reply raises `ReplyTooLarge`, memory stays bounded; live `http` targets read
the same way), `decode_body` turns a body nested too deep to decode into text
instead of an exception, and `token_count` refuses usage figures that are not
plausible token counts (`1e999`, negative, over `MAX_USAGE_TOKENS`).

`request_refused(status, text, retry_after)` says whether an error reply
refuses the request itself — a 4xx other than 408/409/429 and a content
filter's, a 501 (the server does not implement what the request needs), or a 500 (or other 5xx) whose text names the request's fields
(`response_format`, `json_schema`, `messages`, `max_tokens`, "not supported",
"invalid", …: llama-cpp-python answers 500 to a `json_schema` response
format) or says the prompt cannot fit (an older llama.cpp's 500 "Input prompt
is too big compared to KV size") — which no retry can fix. A 502, 503 or 504 (a gateway or an
overloaded server: "too many messages queued", an HTML page saying "invalid
upstream response") and any reply carrying `retry-after` are transient
whatever their text says. `request_fix(message)` names the setting to change;
`not_found_fix` says, for a 404, which base URL was used — or, when the
404's text says the model is missing (Ollama's `model "x" not found, try
pulling it first`, vLLM's and OpenAI's "The model `x` does not exist"), that
judge.model is what to fix (the base URL answered). `usage_counts`
reads a usage block's prompt/completion/cached figures, refusing implausible
ones (`ImplausibleUsage`).
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # aiohttp is imported by what sends: a run the cache answers whole never imports it
    import aiohttp

__all__ = ["DEFAULT_MAX_BYTES", "MAX_USAGE_TOKENS", "SERVER_FAILURE_4XX", "TRANSIENT_STATUSES", "ImplausibleUsage", "ReplyTooLarge", "decode_body", "model_missing", "read_capped", "not_found_fix",
           "request_fix", "request_refused", "token_count", "usage_counts"]

DEFAULT_MAX_BYTES = 8 << 20
MAX_USAGE_TOKENS = 100_000_000  # more than any context window: a figure beyond it is not a token count
# A gateway's or an overloaded server's statuses: transient whatever the body says (its text is not about the request).
TRANSIENT_STATUSES = (502, 503, 504)
# A 4xx that is the server failing, read as a 5xx: TGI answers 424 when generation fails in a model shard ("Request
# failed during generation: Server error: CUDA out of memory", a shard lost), which a retry may get past.
SERVER_FAILURE_4XX = (424,)
# HTTP 501: the server does not implement what the request needs, whatever its text says (llama.cpp's llama-server
# started with --embeddings answers every chat request so: "This server does not support completions").
NOT_IMPLEMENTED = 501


class ReplyTooLarge(ValueError):
    """A reply longer than the bytes its reader may take; the message says by how much."""


class ImplausibleUsage(ValueError):
    """A reply's usage figures are not plausible token counts; the message names the figure (never reply text)."""


async def read_capped(resp: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    """The body of `resp`, read chunk by chunk; raises `ReplyTooLarge` past `max_bytes`.

    The connection is dropped at the cap, so an endless chunked reply costs
    `max_bytes` of memory, not more. The judge client and live `http` targets read this way.
    """
    length = resp.content_length
    if length is not None and length > max_bytes:
        resp.close()
        raise ReplyTooLarge(f"the reply is {length} bytes, over max_response_bytes {max_bytes}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > max_bytes:
            resp.close()
            raise ReplyTooLarge(f"the reply exceeded max_response_bytes ({max_bytes} bytes); cut off unread")
        chunks.append(chunk)
    return b"".join(chunks)


def decode_body(raw: bytes) -> Any:
    """`raw` as JSON, or as text when it is not JSON or is nested too deep to decode."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw.decode("utf-8", "replace")


# Words in a server's error text that say the request's own fields are refused, not that the server failed.
_REQUEST_WORDS = ("response_format", "json_schema", "json_object", "messages", "max_tokens", "max_completion_tokens", "context length",
                  "context window", "maximum context", "n_ctx", "unsupported", "not supported", "invalid", "validation error", "literal_error",
                  "unknown field", "extra_forbidden", "unrecognized",
                  # An older llama.cpp's context overflow is a 500 naming none of the above: "Input prompt is too big
                  # compared to KV size. Please try increasing KV size." The same prompt never fits, however often sent.
                  "kv size", "prompt is too big", "prompt is too long")
# Words of a 4xx that is a content filter refusing the prompt (the model's answer, not the request's fields at fault).
CONTENT_FILTER = ("content_filter", "content_policy", "content policy", "safety", "flagged")


def request_refused(status: int, text: str, retry_after: bool = False) -> bool:
    """Whether an error reply of `status` with `text` refuses the request itself (see the module doc).

    `retry_after`: the reply carried a `retry-after` header (the server asks for the request again later, so it is
    transient). 502, 503 and 504 are never refusals: their text is a gateway's or an overloaded server's, and words such
    as "messages" or "invalid" in it say nothing about the request.
    """
    if retry_after or status in TRANSIENT_STATUSES:
        return False
    if status == NOT_IMPLEMENTED:  # (the server lacks what the request needs: no retry gets it)
        return True
    low = text.lower()
    if 400 <= status < 500 and status not in SERVER_FAILURE_4XX:
        return status not in (408, 409, 429) and not any(w in low for w in CONTENT_FILTER)
    return any(w in low for w in _REQUEST_WORDS)


def request_fix(message: str) -> str:
    """The setting to change for a refused request whose server message is `message`."""
    low = message.lower()
    if "http 413" in low or "entity too large" in low or "payload too large" in low:  # (a proxy's body limit, nginx's 1 MB by default: the prompt's size, not a field)
        return ("the request body is larger than the server, or a proxy before it, accepts (nginx: client_max_body_size, 1 MB by "
                "default): raise that limit, or set judge.context_tokens lower so tracejudge cuts long traces itself")
    if "http 501" in low:  # (the server's own message says what it lacks; where the requests go is the setting)
        return "start the server so that it serves chat completions (its message says how), or point judge.base_url at one that does"
    if "event-stream" in low or "server-sent events" in low:  # (`wire.read`'s message for a server that streams whatever `stream` says)
        return ("make the server (or the proxy before it) answer a request without \"stream\" (the default, false) with one JSON object, "
                "or point judge.base_url at one that does")
    if "serves no judge api" in low:  # (`wire.read`'s message for a page or text where the judge's API should answer)
        return ("point judge.base_url at the judge API's base, the URL /chat/completions (/messages) is added to "
                "(http://host:8000/v1), or let tracejudge past the proxy before it")
    if any(w in low for w in ("response_format", "json_schema", "json_object", "schema")):
        return "set judge.structured_output (json_object for llama-cpp-python's server, none to send no schema)"
    if any(w in low for w in ("token", "context", "n_ctx", "too long", "length", "kv size", "too big")):
        return "lower judge.max_tokens, or set judge.context_tokens to the server's window (and judge.tokenizer to its tokenizer)"
    if "temperature" in low:  # (TGI before 2.0.1: "`temperature` must be strictly positive")
        return "set judge.temperature to what the server accepts (a small positive value such as 0.01 for one that refuses 0)"
    if any(w in low for w in ("model",)):
        return "check judge.model and judge.base_url"
    return "check the judge section of the config (judge.structured_output, judge.max_tokens, judge.cache_hints, judge.model)"


# A 404 whose text says the server has no such model: the endpoint answered, so the base URL is right. Ollama: `model
# "x" not found, try pulling it first`; vLLM and OpenAI: "The model `x` does not exist (or you do not have access to it)";
# OpenAI's code `model_not_found`; LiteLLM and others: "model not found".
_MODEL_MISSING = re.compile(r"model_not_found|\bmodel\b.{0,200}?\b(?:not found|does not exist|not exist|unknown|no such)|no such model|unknown model",
                            re.I | re.S)


def model_missing(message: str) -> bool:
    """Whether an error text (a 404's) says the server has no such model, rather than no such endpoint."""
    return _MODEL_MISSING.search(message) is not None


def not_found_fix(url: str, provider: str, base_url: str | None, message: str = "", model: str = "") -> str:
    """The hint for an HTTP 404 from the judge at `url`: which base URL was used and where it came from.

    `base_url` is `judge.base_url` as configured (None: the provider's default); when it is what the
    provider's base-URL variable (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`) gives, the variable is named.
    `message`: the 404's error text; when it says the model is missing (`model_missing`) the hint names
    judge.model (`model`) instead, with `ollama pull <model>` when the text is Ollama's ("try pulling it").
    """
    if model_missing(message):
        named = f" {model!r}" if model else ""
        hint = (f"the server at {_public(url)} answered but has no model{named}: check judge.model against the models "
                "it serves (GET /v1/models lists them)")
        if "pull" in message.lower():  # Ollama's wording: the model is not downloaded yet
            hint += f", or download it first: ollama pull {model or '<model>'}"
        return hint
    from tracejudge.core.judge_config import base_url_env, env_base_url
    from tracejudge.llm.wire.payload import DEFAULT_BASE_URLS, public_url

    var = base_url_env(provider)
    raw = os.environ.get(var) if var else None
    default = DEFAULT_BASE_URLS.get(provider)
    if base_url is None:
        where = f"the provider's default {default}" if default else "unset"
    elif raw and env_base_url(provider, raw) == base_url:
        where = f"{public_url(base_url)}, from {var}={public_url(raw)!r}"
    else:
        where = f"judge.base_url {public_url(base_url)}"
    tail = "/messages" if provider == "anthropic" else "/chat/completions"
    hint = f"nothing answers at {public_url(url)}: the base URL used is {where}; judge.base_url is the URL before {tail}"
    hint += f" (such as {default})" if default else ""
    if provider == "anthropic":
        hint += f", while {var} is read as the Anthropic SDK reads it (such as https://api.anthropic.com: /v1 is added)"
    return hint


def _public(url: str) -> str:
    from tracejudge.llm.wire.payload import public_url  # (here: wire imports this module)

    return public_url(url)


def token_count(usage: dict[str, Any], key: str) -> int:
    """A usage figure as a token count (missing or null: 0); `ImplausibleUsage` (a `ValueError`) for anything that is not a
    plausible one (1e999, -5, 10**30, "x", and "" or false: a server filling a figure it does not count, said so, not
    read as a count of 0 without a word)."""
    v = usage.get(key)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_USAGE_TOKENS or v != int(v):
        raise ImplausibleUsage(f"usage.{key} is not a token count")
    return int(v)


def usage_counts(usage: Any, prompt: str, completion: str, cached: tuple[str, str] | None = None) -> tuple[int, int, int] | None:
    """A reply's `usage` as `(prompt, completion, cached)` token counts, read under the keys `prompt` and `completion`
    (`cached`: the path to the cached-prompt figure, e.g. `("prompt_tokens_details", "cached_tokens")`).

    `None` when the reply reports no usage: `usage` missing, null, not a mapping, or without a prompt figure above 0 (no
    chat request has an empty prompt: a 0 there is a server that does not count). Raises `ImplausibleUsage` when a figure
    is not a plausible token count, or more prompt tokens are said to be cached than the prompt has.
    """
    if not isinstance(usage, dict) or (usage.get(prompt) is None and usage.get(completion) is None):
        return None
    p, c = token_count(usage, prompt), token_count(usage, completion)
    k = 0
    if cached is not None:
        details = usage.get(cached[0])
        k = token_count(details if isinstance(details, dict) else {}, cached[1])
    if k > p:
        raise ImplausibleUsage(f"usage.{cached[0]}.{cached[1]} ({k}) is more than usage.{prompt} ({p})" if cached else "usage")
    return None if p == 0 else (p, c, k)
