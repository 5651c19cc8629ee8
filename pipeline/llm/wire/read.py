"""An HTTP reply read as the provider's answer (`Reply`) or as a `ProviderError` of the kind retries and stops act on."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tracejudge.core.json_kind import json_kind
from tracejudge.llm.redact import redact
from tracejudge.llm.replies import SERVER_FAILURE_4XX, ImplausibleUsage, request_refused, token_count, usage_counts
from tracejudge.llm.wire.not_json import not_json_error
from tracejudge.llm.wire.rate_headers import rate_info
from tracejudge.llm.wire.records import HttpReply, ProviderError, Reply

__all__ = ["read_reply"]


def _error_text(body: Any, secrets: tuple[str | None, ...] = ()) -> str:
    # Redacted before it is cut, so a cut cannot leave half a credential unrecognised.
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        text = f"{err.get('type') or err.get('code') or 'error'}: {err.get('message', '')}"
        sizes = [f"{k} {err[k]}" for k in ("n_prompt_tokens", "n_ctx") if type(err.get(k)) is int]
        if sizes:  # (llama.cpp's context refusal gives the sizes beside its message, not in it)
            text += f" ({', '.join(sizes)})"
    elif isinstance(body, dict) and isinstance(body.get("error"), str):
        text = f"error: {body['error']}"
    elif isinstance(body, dict) and body.get("object") == "error" and isinstance(body.get("message"), str):
        text = f"{body.get('type') or 'error'}: {body['message']}"  # vLLM's error shape: the message at the top level
    elif isinstance(body, dict) and "detail" in body:
        text = _detail_text(body["detail"])  # FastAPI's error shape (a server built on it that keeps FastAPI's handlers)
    elif isinstance(body, (dict, list)):
        text = json.dumps(body, ensure_ascii=False)  # as the server sent it, not as a Python repr
    else:
        text = str(body)
    return redact(text, secrets)[:300]


def _detail_text(detail: Any) -> str:
    """FastAPI's `{"detail": …}` said readably: an `HTTPException`'s text as it is, a validation error's list of
    `{loc, msg, type, input}` as `loc.path: msg` each. Its `input` (the part of the request refused, echoed back: the
    prompt itself for a message) is left out: it is the request, not what was wrong with it."""
    if isinstance(detail, str):
        return f"error: {detail}"
    if isinstance(detail, list) and detail and all(isinstance(d, dict) and "msg" in d for d in detail):
        said = ["{}{}".format(".".join(str(p) for p in d["loc"]) + ": " if isinstance(d.get("loc"), list) else "", d["msg"]) for d in detail]
        return "validation error: " + "; ".join(said)
    return "error: " + json.dumps(detail, ensure_ascii=False)


def read_reply(provider: str, http: HttpReply, max_retry_after_s: float, secrets: tuple[str | None, ...] = (),
               answered: bool = True) -> Reply:
    """Turn an HTTP reply into a `Reply`, or raise `ProviderError`.

    `secrets` (the configured key) are redacted from the provider's error text. `answered`: the judge has had a JSON
    answer from this endpoint before (the run's sender says; a bench reads every reply alike).

    A 2xx that is no JSON object (`ProviderError.not_json`): a stream (`text/event-stream`) → `request`, whatever came
    before (the server streams every reply); an HTML page, any other body not said to be JSON, or text that does not
    begin as JSON whatever its content type says → `request` while nothing was `answered` (the URL serves a web page, a
    proxy's login page or a wrong path, not the judge's API: every case would be retried to the same page), else
    `server`, retried (a proxy's passing error page); a JSON body that could not be decoded (cut short, nested too deep)
    → `server`, a malformed reply. Each names the URL and the content type (`wire.not_json`).

    429 → `rate_limited` (or `quota` when `retry-after` exceeds
    `max_retry_after_s`, or the body says the quota is exhausted); 5xx, 529
    and TGI's 424 (generation failed in a shard) → `server`, or `request` when the text names the request's fields (never
    a 502/503/504, nor any reply carrying `retry-after`: those are transient,
    `replies.request_refused`); 408 → `timeout`; 401/403 → `fatal` (their
    status makes them auth errors); a content filter's 4xx → `fatal`; another
    4xx with `retry-after` → `server`; other 4xx → `request`; a 2xx whose body
    is an error object (`{"error": …}`, vLLM's `{"object": "error", "message": …}`, or FastAPI's
    `{"detail": …}` with no answer beside it) → `server` with the provider's own message; a 2xx of
    the wrong shape → `server` ("unexpected reply shape"), carrying the usage it reported, if any, as
    `ProviderError.billed_reply` (billed, then retried). A 2xx whose reply is
    a refusal — Anthropic `stop_reason: "refusal"`, an OpenAI message's
    `refusal`, `finish_reason: "content_filter"` — → `fatal`, as a content
    filter's 4xx: the case's content causes it, so no retry or repair request
    can help, and whatever text came with it is not a verdict. Its usage is
    read as any reply's and carried on the error (`ProviderError.reply`): the
    provider bills a refusal, so the judge bills it too.

    A 2xx without usage (missing, null, no prompt figure) is a `Reply` with
    `usage_known` False and 0 tokens: its sender estimates them. So is one with
    implausible usage (not a token count, more cached tokens than prompt
    tokens), `usage_problem` saying which figure: the provider answered and
    billed something, so its verdict counts and its cost is unknown (as a
    malformed reply it was retried and billed nothing, and a server that always
    sends such figures failed every case). A usage block whose completion count
    is 0, null or missing for a reply that holds text is one too: the server
    does not count completions, and 0 would under-bill the reply. A reply whose
    text is empty while the server put its text in `message.reasoning_content`
    / `message.reasoning` (a reasoning parser) or only in Anthropic `thinking`
    blocks keeps that text in `Reply.reasoning` (never as the verdict text);
    thinking beside an answer is kept in `Reply.unread_reasoning`, for the
    estimate of a reply without usage. An OpenAI-compatible `message.content`
    may be a list of parts (Mistral's content chunks): its `text` parts are the
    answer, its `thinking` parts (magistral's) thinking as above.
    An Anthropic reply that calls the forced tool is its `tool_use` input alone:
    a text block beside it (a first impression, a draft verdict) is not read.
    A reply cut at the model's context window (Anthropic
    `model_context_window_exceeded`, Mistral `model_length`) is truncated, as
    one cut at `max_tokens` (`length`) is, with `Reply.window_full` set.
    An error's text is the provider's message: `{"error": …}`, vLLM's
    top-level `message`, FastAPI's `{"detail": …}` (a validation error's list
    said `loc: msg` each), else the body as JSON; redacted, then cut to 300
    characters.
    """
    # Only a refusal carries its rate state on the error; a success's is read by the caller that needs it.
    if http.status == 429:
        rate = rate_info(http.headers)
        text = _error_text(http.body, secrets)
        quota = (rate.retry_after_s is not None and rate.retry_after_s > max_retry_after_s) or "insufficient_quota" in text
        kind = "quota" if quota else "rate_limited"
        raise ProviderError(kind, f"HTTP 429 {text}", 429, rate.retry_after_s, rate)
    if http.status >= 500 or http.status == 529 or http.status in SERVER_FAILURE_4XX:
        rate = rate_info(http.headers)
        text = _error_text(http.body, secrets)
        kind = "request" if http.status != 529 and request_refused(http.status, text, "retry-after" in http.headers) else "server"
        raise ProviderError(kind, f"HTTP {http.status} {text}", http.status, rate.retry_after_s, rate)
    if http.status == 408:
        raise ProviderError("timeout", f"HTTP 408 {_error_text(http.body, secrets)}", 408)
    if http.status >= 400:
        text = _error_text(http.body, secrets)
        if http.status not in (401, 403) and "retry-after" in http.headers:  # the server asks for it again later: transient
            rate = rate_info(http.headers)
            raise ProviderError("server", f"HTTP {http.status} {text}", http.status, rate.retry_after_s, rate)
        kind = "request" if http.status not in (401, 403) and request_refused(http.status, text) else "fatal"
        raise ProviderError(kind, f"HTTP {http.status} {text}", http.status)
    body = http.body
    if not isinstance(body, dict):
        raise not_json_error(http, answered, secrets)
    if body.get("error") or body.get("type") == "error" or body.get("object") == "error" or _detail_only(body):
        # Some gateways answer 200 with an error body, `{"error": {…}}`, vLLM's `{"object": "error", "message": …}` or
        # FastAPI's `{"detail": …}` (behind a proxy that rewrites the status): report what the provider said, not a shape error.
        raise ProviderError("server", f"HTTP {http.status} with an error body: {_error_text(body, secrets)}", http.status)
    try:
        if provider == "anthropic":
            return _anthropic(body)
        return _openai(body)
    except _Refused as exc:
        refused = ProviderError("fatal", f"HTTP {http.status}: the model refused to judge this request ({redact(str(exc), secrets)[:300]}); "
                                "its content is not a verdict, and no retry or repair request is sent: the case's content causes it", http.status)
        refused.reply = exc.reply  # (answered and billed: its usage is billed like any answer's)
        raise refused from None
    except (KeyError, IndexError, TypeError, AttributeError, ValueError, OverflowError, RecursionError) as exc:
        # Named by the field that is off (`choices` empty, `message` null): a Python exception's name says nothing to
        # whoever has to fix the server or the proxy before it.
        where = _shape_problem(provider, body) or type(exc).__name__
        malformed = ProviderError("server", f"HTTP {http.status}: unexpected reply shape ({where})", http.status)
        malformed.billed_reply = _usage_alone(provider, body)
        raise malformed from None


def _usage_alone(provider: str, body: dict[str, Any]) -> Reply | None:
    """The usage a 2xx reply of the wrong shape reported, as an empty `Reply` to bill it by; None when it reported none
    that reads as plausible token counts (the same rules as an answer's usage; a prompt figure of 0 is none).

    The provider counted and billed the request whatever shape its answer came in (a proxy that mangled `choices`, a
    server that lost the message): retried as a server error, it was billed nothing, and a run whose every first attempt
    came back so under-counted its spend by half."""
    try:
        if provider == "anthropic":
            counts = _anthropic_counts(body.get("usage"))
            if counts is None:
                return None
        else:
            said = usage_counts(body.get("usage"), "prompt_tokens", "completion_tokens", ("prompt_tokens_details", "cached_tokens"))
            if said is None:
                return None
            counts = (*said, 0)
    except (ImplausibleUsage, TypeError, AttributeError):
        return None
    return None if counts[0] == 0 else Reply("", False, *counts)


def _shape_problem(provider: str, body: dict[str, Any]) -> str:
    """The first field of a 2xx reply `body` (a JSON object) that is not where or what `provider`'s protocol has it,
    said as a path and what it held (`choices is an empty list`, `choices[0].message is null`), or "" when none is
    found. Values are named by their JSON kind only, never quoted."""
    if provider == "anthropic":
        blocks = body.get("content")
        if blocks is not None and not isinstance(blocks, list):
            return f"content is {json_kind(blocks)}, not a list of content blocks"
        bad = next((i for i, b in enumerate(blocks or []) if not isinstance(b, dict)), None)
        return "" if bad is None else f"content[{bad}] is {json_kind(blocks[bad])}, not a content block object"
    if "choices" not in body:
        return "no choices field; the reply's fields: " + (", ".join(sorted(map(str, body))[:12]) or "none")
    choices = body["choices"]
    if not isinstance(choices, list):
        return f"choices is {json_kind(choices)}, not a list"
    if not choices:
        return "choices is an empty list: the reply holds no answer"
    choice = choices[0]
    if not isinstance(choice, dict):
        return f"choices[0] is {json_kind(choice)}, not an object"
    if "message" not in choice:
        # (`delta`: a streamed chunk; `text`: the legacy completions endpoint's answer)
        said = "delta, as a streamed chunk has" if "delta" in choice else "text, as /completions answers" if "text" in choice else ""
        return "choices[0] has no message" + (f" (it has {said})" if said else "")
    message = choice["message"]
    if not isinstance(message, dict):
        return f"choices[0].message is {json_kind(message)}, not an object"
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        return f"choices[0].message.content is {json_kind(content)}, not text or a list of parts"
    return ""


def _detail_only(body: dict[str, Any]) -> bool:
    """True for FastAPI's error shape, `{"detail": …}`, with nothing of an answer beside it (no `choices`, no `content`)."""
    return "detail" in body and "choices" not in body and "content" not in body


class _Refused(Exception):
    """A 2xx reply that is a refusal; the message says which field says so (`read_reply` makes it a `fatal` error).
    `reply`: the refusal read as an answer, for its usage (the provider bills a refusal like any reply)."""

    def __init__(self, message: str, reply: Reply) -> None:
        super().__init__(message)
        self.reply = reply


def _billed_refusal(why: str, read: Callable[[], Reply]) -> _Refused:
    # A refusal's usage is read as any reply's; a refusal whose other fields are odd is still a refusal, billed at an
    # estimate (usage unknown) rather than called a malformed reply and sent again.
    try:
        reply = read()
    except (KeyError, IndexError, TypeError, AttributeError, ValueError, OverflowError, RecursionError):
        reply = Reply("", False, 0, 0, usage_known=False)
    return _Refused(why, reply)


def _anthropic(body: dict[str, Any]) -> Reply:
    if body.get("stop_reason") == "refusal":
        # (`stop_details` is where newer replies say why; the content, if any, is cut where the filter stopped it)
        why: dict[str, Any] = body["stop_details"] if isinstance(body.get("stop_details"), dict) else {}
        said = "; ".join(str(why[k]) for k in ("category", "explanation") if why.get(k))
        raise _billed_refusal('stop_reason "refusal"' + (f": {said}" if said else ""), lambda: _anthropic_reply(body))
    return _anthropic_reply(body)


def _anthropic_reply(body: dict[str, Any]) -> Reply:
    blocks = body.get("content") or []
    thinking = [b["thinking"] for b in blocks if b.get("type") == "thinking" and isinstance(b.get("thinking"), str)]
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    if calls:
        # The request forces its one tool, so a call is the verdict; text beside it is the model talking (a first
        # impression, a draft grade) and read with it would answer a question twice. (Each call is kept: two
        # calls that disagree must still be seen to.) An input given as a JSON string, as some gateways send it, is that JSON.
        text = "\n".join(c["input"] if isinstance(c.get("input"), str) else json.dumps(c.get("input")) for c in calls)
    else:  # a server that ignores tools answers in text, which is then the verdict
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    stop = body.get("stop_reason")
    said = _Said(text, "\n".join(thinking), "thinking", stop in ("max_tokens", "model_context_window_exceeded"),
                 stop == "model_context_window_exceeded")
    try:
        counts = _anthropic_counts(body.get("usage"))
    except ImplausibleUsage as exc:
        return said.reply(problem=str(exc))
    if counts is None or counts[0] == 0:  # (no request has an empty prompt: a server that does not count)
        return said.reply()
    prompt, completion, cached, written = counts
    if completion == 0 and (text or thinking):
        return said.reply(problem=_NO_COMPLETION.format(key="output_tokens"))
    return said.reply((prompt, completion, cached, written))


def _anthropic_counts(usage: Any) -> tuple[int, int, int, int] | None:
    """An Anthropic `usage` as `(prompt, completion, cached, written)` tokens; None when it holds no input or output figure.
    Raises `ImplausibleUsage` for a figure that is no token count. Anthropic's `input_tokens` leaves out both the tokens
    read from and written to its cache, so the prompt is the three added."""
    if not isinstance(usage, dict) or (usage.get("input_tokens") is None and usage.get("output_tokens") is None):
        return None
    cached, written = token_count(usage, "cache_read_input_tokens"), token_count(usage, "cache_creation_input_tokens")
    return token_count(usage, "input_tokens") + cached + written, token_count(usage, "output_tokens"), cached, written


def _openai(body: dict[str, Any]) -> Reply:
    choice = body["choices"][0]
    message = choice["message"]
    if isinstance(message.get("refusal"), str) and message["refusal"].strip():  # (OpenAI's structured outputs put it there, content null)
        raise _billed_refusal(f"message.refusal: {message['refusal']}", lambda: _openai_reply(body, {**message, "content": message["refusal"]}))
    if choice.get("finish_reason") == "content_filter":  # (what content is left was cut where the filter stopped it)
        raise _billed_refusal("finish_reason: content_filter", lambda: _openai_reply(body, message))
    return _openai_reply(body, message)


def _openai_reply(body: dict[str, Any], message: dict[str, Any]) -> Reply:
    choice = body["choices"][0]
    text, thinking = _content(message.get("content"))
    # llama.cpp's and vLLM's reasoning parsers put the model's thinking in a field of its own (the first named: a
    # server sending both under two names sends the same text twice).
    parsed = next(((message[n], n) for n in ("reasoning_content", "reasoning") if isinstance(message.get(n), str) and message[n].strip()), ("", ""))
    reasoning, field = (thinking, "thinking") if thinking.strip() else parsed
    if thinking.strip() and parsed[0]:
        reasoning += "\n" + parsed[0]
    # Mistral's `model_length`: the prompt and the reply filled the model's context before `max_tokens`.
    finish = choice.get("finish_reason")
    said = _Said(text, reasoning, field, finish in ("length", "model_length"), finish == "model_length", _called(message))
    try:
        counts = usage_counts(body.get("usage"), "prompt_tokens", "completion_tokens", ("prompt_tokens_details", "cached_tokens"))
    except ImplausibleUsage as exc:
        return said.reply(problem=str(exc))
    if counts is None:
        return said.reply()
    if counts[1] == 0 and (text or reasoning):
        return said.reply(problem=_NO_COMPLETION.format(key="completion_tokens"))
    return said.reply((counts[0], counts[1], counts[2], 0))


def _called(message: dict[str, Any]) -> str:
    # The functions a message called (a gateway that turns the schema into a tool answers so), for the empty-reply note.
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return ""
    names = [c["function"].get("name") if isinstance(c, dict) and isinstance(c.get("function"), dict) else None for c in calls]
    return ", ".join(n if isinstance(n, str) and n else "(no name)" for n in names)


def _content(content: Any) -> tuple[str, str]:
    """A message's `content` as `(answer text, thinking)`: a string (or null) is the answer; a list of parts (Mistral's
    content chunks; OpenAI's schema allows one) is its `text` parts' text joined, its `thinking` parts' text the thinking
    (Mistral's magistral models: `{"type": "thinking", "thinking": [{"type": "text", "text": …}]}`), other parts (a
    `reference`, an image) neither. Raises `TypeError` for anything else (a malformed reply)."""
    if not content:
        return "", ""
    if isinstance(content, str):
        return content, ""
    if not isinstance(content, list):
        raise TypeError("message.content is neither text nor a list of parts")
    text = [p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)]
    thinking = [_part_text(p.get("thinking")) for p in content if isinstance(p, dict) and p.get("type") == "thinking"]
    return "".join(text), "\n".join(t for t in thinking if t)


def _part_text(parts: Any) -> str:
    # A thinking part's `thinking`: a list of text parts (Mistral's), or the text itself as some gateways send it.
    if isinstance(parts, str):
        return parts
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)) if isinstance(parts, list) else ""


class _Said:
    """What a reply said, read the same way whatever its protocol: its answer `text`, the model's `thinking` outside it
    (`field`: where it was), whether it was cut (`truncated`; `window_full`: at the model's context window).

    The thinking is `Reply.reasoning` when the answer is empty (the empty-reply messages name where the text went),
    else `Reply.unread_reasoning`: never read, but billed, so a reply without usage is estimated with it.
    """

    def __init__(self, text: str, thinking: str, field: str, truncated: bool, window_full: bool, tool_calls: str = "") -> None:
        self.text, self.thinking, self.field, self.truncated, self.window_full = text, thinking, field, truncated, window_full
        self.tool_calls = tool_calls

    def reply(self, usage: tuple[int, int, int, int] | None = None, problem: str = "") -> Reply:
        """The `Reply`; `usage` `(prompt, completion, cached, written)`, or `None` for a reply without (or with implausible,
        `problem`) usage."""
        aside = bool(self.text.strip())  # an answer beside the thinking: the thinking is only billed
        prompt, completion, cached, written = usage or (0, 0, 0, 0)
        return Reply(self.text, self.truncated, prompt, completion, cached, written, usage_known=usage is not None,
                     reasoning="" if aside else self.thinking, reasoning_field="" if aside or not self.thinking else self.field,
                     usage_problem=problem, unread_reasoning=self.thinking if aside else "", window_full=self.window_full,
                     tool_calls=self.tool_calls)


# A reply that holds text took at least one completion token: a usage block saying 0 (or null, missing, "") is a
# server that does not count completions, and billing it 0 would under-count the cost and the budget.
_NO_COMPLETION = "usage.{key} is 0 or missing for a reply that holds text"
