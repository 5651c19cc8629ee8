"""What crosses the wire, provider-neutral: the request, the HTTP reply, the normalized reply, rate-limit state, the error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["HttpReply", "JudgeRequest", "ProviderError", "RateInfo", "Reply"]


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
    `extra_body`: fields of the user's own sent beside those (`judge.extra_body`, `tracejudge.core.extra_body`);
    they enter the cache key, as they may change the verdict (a model thinking or not).
    """

    model: str
    messages: tuple[dict[str, str], ...]
    schema: dict[str, Any]
    schema_name: str
    max_tokens: int
    temperature: float = 0.0
    cache_prefix: int = 0
    extra_body: dict[str, Any] | None = None


@dataclass
class HttpReply:
    """What came back over HTTP: status, headers (lower-cased names), decoded JSON body (or text), seconds taken.

    `flight_s` is the seconds from the request's headers going out on the
    wire to the reply being read (`None` when the session does not trace
    sends); `latency_s` also counts waiting for a connection. `url` is where the
    request went ("" when unknown), for messages about what answered there.
    """

    status: int
    headers: dict[str, str]
    body: Any
    latency_s: float
    flight_s: float | None = None
    url: str = ""


@dataclass
class Reply:
    """A provider's answer normalized: the verdict text, whether it was cut at `max_tokens`, usage.

    `input_tokens` is every prompt token; `cached_input_tokens` the part read
    from the provider's prompt cache (OpenAI `prompt_tokens_details.cached_tokens`,
    Anthropic `cache_read_input_tokens`) and `cache_write_input_tokens` the part
    written to it (Anthropic `cache_creation_input_tokens`, billed above the
    input rate). `cost_usd` is set by the judge client once priced: None when
    the model has no price and the reply billed tokens, or when the reply
    reported no usage (its dollars are unknown).

    `usage_known` is False for a reply without usage (missing, null, no prompt
    figure): the judge client then sets `input_tokens` to its estimate of the
    prompt and `output_tokens` to the reply's text counted by its tokenizer.
    Once `Judge.call` returns a reply, its `input_tokens` and `cost_usd` also
    hold this call's earlier attempts that timed out or lost their connection
    after sending (billed at their estimated input, as the summary bills them).

    `usage_problem` says why usage figures the reply did carry were not read
    (not plausible token counts, more cached tokens than prompt tokens): the
    reply is then one without usage (`usage_known` False), its verdict used.

    `reasoning` is the text a server returned outside the answer when the
    answer (`text`) was empty — OpenAI-compatible `message.reasoning_content`
    or `message.reasoning` (a reasoning parser took the whole reply), or
    Anthropic `thinking` blocks — and `reasoning_field` names where it was;
    it is never read as the verdict. Thinking returned beside an answer (those
    fields, Anthropic `thinking` blocks, Mistral's `thinking` content parts) is
    `unread_reasoning` instead: never read nor shown, only counted when the
    reply's output tokens are estimated (the provider bills it as output).

    `truncated` is also True for a reply cut where its prompt and its text
    filled the model's context window (Anthropic `stop_reason:
    "model_context_window_exceeded"`, Mistral `finish_reason: "model_length"`),
    which `window_full` says: raising `max_tokens` does not help it.

    `tool_calls` names the functions an OpenAI-compatible message called
    (comma-separated, "" for none): the judge offers no tools, so a verdict
    there is not read, but an empty reply that made calls is said as one.
    """

    text: str
    truncated: bool
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    cost_usd: float | None = 0.0
    usage_known: bool = True
    reasoning: str = ""
    reasoning_field: str = ""
    usage_problem: str = ""
    unread_reasoning: str = ""
    window_full: bool = False
    tool_calls: str = ""


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
    `billed_input_tokens` / `billed_cost_usd` are what the judge client billed
    for the call that failed (its attempts that timed out or lost their
    connection after sending, at their estimated input; `billed_cost_usd`
    None when the model has no price and tokens were billed; `billed_output_tokens`: a refusal's completion tokens).

    `reply` is set on a 2xx reply that is a refusal (`fatal`, see `read_reply`): the provider answered and billed
    it, so its usage (`Reply.input_tokens`, `output_tokens`; `usage_known` False when it reported none) is billed
    like any answer's, though it holds no verdict. `None` for every other failure. `billed_reply` is set on a 2xx of
    the wrong shape that reported usage (a `server` error, retried): an empty `Reply` holding that usage, which the
    provider billed though no verdict could be read. `unsent`: the judge's server
    gate gave up on the request before it was ever sent, so it counts no request. `given_up`: the gate gave up on the server
as unavailable (down or silent for `judge.max_retry_wait_s`), sent or not. `not_json`: a 2xx whose content type is not
    JSON (an HTML page, plain text), or whose text does not begin as JSON whatever its content type says, which the server gate counts as an outage answer, as a proxy's 502 page.
    """

    def __init__(self, kind: str, message: str, status: int | None = None, retry_after_s: float | None = None, rate: RateInfo | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after_s = retry_after_s
        self.rate = rate
        self.billed_input_tokens = 0
        self.billed_cost_usd: float | None = 0.0
        self.billed_output_tokens = 0
        self.reply: Reply | None = None  # (a refusal's answer: its usage is billed)
        self.billed_reply: Reply | None = None  # (a malformed 2xx's usage: billed, and the attempt retried)
        self.unsent = False  # (the judge's gate gave up on a request it never sent: it counts no request)
        self.no_reply = False  # (`connection` only: lost before any status line came back)
        self.not_json = False  # (a 2xx whose content type is not JSON: an HTML page, plain text; `read_reply`)
        self.given_up = False  # (the judge's gate gave up on its server as unavailable: every request now fails so)

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed (rate_limited, server, timeout, connection, unreachable)."""
        return self.kind in ("rate_limited", "server", "timeout", "connection", "unreachable")
