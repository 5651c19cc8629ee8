"""A judge server's refusal of a prompt longer than its context window: which error texts say so, and the window named.

Such a refusal is about one request's length, not about every request: the judge makes it that case's error and
judges the other cases (`tracejudge.stages.judge.calls.failure`). The wordings read, from each server's own source or
documentation:

| server | status | text |
| --- | --- | --- |
| llama.cpp `llama-server` | 400 | type `exceed_context_size_error`, "the request exceeds the available context size, try increasing it" (newer: "request (N tokens) exceeds the available context size (M tokens)"), with `n_prompt_tokens` and `n_ctx` beside it |
| llama.cpp, older | 500 | "Input prompt is too big compared to KV size. Please try increasing KV size." |
| OpenAI | 400 | code `context_length_exceeded`, "This model's maximum context length is M tokens. However, your messages resulted in N tokens…" |
| vLLM | 400 | "This model's maximum context length is M tokens. However, you requested N tokens (P in the messages, C in the completion)…", or "'max_tokens' or 'max_completion_tokens' is too large: C. This model's maximum context length is M tokens and your request has P input tokens…", or "The decoder prompt (length N) is longer than the maximum model length of M" |
| Anthropic | 400 | "prompt is too long: N tokens > M maximum" |
| TGI | 422 | "Input validation error: `inputs` tokens + `max_new_tokens` must be <= M. Given: …" |

A 413 (request body too large: the server's, or a proxy's before it, nginx's `client_max_body_size` of 1 MB by default)
is about one request's size too: that case's error (`body_too_large`, `body_fix` says what to change).

vLLM and TGI count the reply's room (`judge.max_tokens`) in: when the text says the prompt alone fits and the prompt with
that room does not, the fix named is `judge.max_tokens` (`context_fix`). A smaller `max_tokens` is not tried on its own:
a reply given less room than the config says may be cut before its verdict (a thinking model's first of all), and a
request other than the one configured would be answered and cached under the setting the user chose.
"""

from __future__ import annotations

import re

__all__ = ["body_fix", "context_fix", "context_size", "over_context", "prompt_and_room"]

_SAYS_OVER = re.compile(
    r"exceed_context_size_error|context_length_exceeded|exceeds the available context size|maximum context length is \d"
    r"|prompt is too big compared to kv size|prompt is too long|longer than the maximum model length"
    r"|`inputs` tokens \+ `max_new_tokens` must be <=", re.I)
# The window each wording names, in the order above: the first that matches is the server's context in tokens.
_WINDOW = (re.compile(r"\bn_ctx[\s:=]+(\d+)", re.I), re.compile(r"available context size \((\d+) tokens\)", re.I),
           re.compile(r"maximum context length is (\d+)", re.I), re.compile(r"maximum model length of (\d+)", re.I),
           re.compile(r"tokens > (\d+) maximum", re.I), re.compile(r"must be <= (\d+)", re.I))
# The prompt's tokens and the reply's room, where a refusal names both (vLLM's two wordings, TGI's).
_PARTS = (re.compile(r"\((\d+) in the messages, (\d+) in the completion\)", re.I),
          re.compile(r"is too large: (?P<c>\d+)\..*?your request has (?P<p>\d+) input tokens", re.I | re.S),
          re.compile(r"Given: (\d+) `inputs` tokens and (\d+) `max_new_tokens`", re.I))


def over_context(text: str) -> bool:
    """Whether a server's error `text` (as `ProviderError` carries it) refuses a prompt longer than its context window
    (see the module doc for the wordings). Never raises."""
    return _SAYS_OVER.search(text) is not None


def context_size(text: str) -> int | None:
    """The context window, in tokens, that a refusal's `text` names (llama.cpp's `n_ctx`, OpenAI's and vLLM's "maximum
    context length is M", …), or `None` when it names none (an older llama.cpp's KV-size text). Never raises."""
    for pattern in _WINDOW:
        found = pattern.search(text)
        if found is not None:
            return int(found.group(1))
    return None


def prompt_and_room(text: str) -> tuple[int, int] | None:
    """`(the prompt's tokens, the reply's room in tokens)` a refusal's `text` names (vLLM's "(P in the messages, C in
    the completion)" or "is too large: C. … has P input tokens", TGI's "Given: P `inputs` tokens and C `max_new_tokens`"),
    or `None` when it names not both. Never raises."""
    for pattern in _PARTS:
        found = pattern.search(text)
        if found is not None:
            if "p" in pattern.groupindex:
                return int(found.group("p")), int(found.group("c"))
            return int(found.group(1)), int(found.group(2))
    return None


def context_fix(text: str, context_tokens: int) -> str:
    """What to change after a server refused one case's prompt (its error `text`) as longer than its context window, the
    run's `judge.context_tokens` being `context_tokens`: the server's context (llama.cpp's `n_ctx`), or
    `judge.context_tokens` set to it so long traces are cut to fit; and that the other cases are judged. When the text
    says the prompt alone fits and only the reply's room (`judge.max_tokens`) overflows (`prompt_and_room`), it says so
    and names `judge.max_tokens` and the most that fits. Never raises."""
    window = context_size(text)
    parts = prompt_and_room(text)
    if window is not None and parts is not None and parts[0] < window < parts[0] + parts[1]:
        prompt, room = parts
        return (f"this case's judge prompt ({prompt:,} tokens) fits the server's context ({window:,} tokens), but not with "
                f"the reply's room beside it (judge.max_tokens: {room:,}): set judge.max_tokens to at most {window - prompt:,} "
                "for this prompt, or start the server with a larger context (llama.cpp: --ctx-size; vLLM: --max-model-len; "
                f"Ollama: num_ctx); the other cases are judged, and a resume retries this one")
    served = f"the server's context ({window:,} tokens)" if window is not None else "the server's context"
    head = (f"this case's judge prompt is longer than {served}: start the server with a larger context (llama.cpp: --ctx-size, "
            "its n_ctx per slot; vLLM: --max-model-len; Ollama: num_ctx)")
    if window is not None and context_tokens <= window:  # (tracejudge cut to fit already, and counted fewer tokens than the server)
        tail = (f", or, as judge.context_tokens ({context_tokens:,}) is within it and tracejudge counted fewer tokens than the "
                "server, set judge.tokenizer to the server's tokenizer or judge.context_tokens lower")
    else:
        to = f"{window:,}" if window is not None else "the server's n_ctx"
        tail = f", or set judge.context_tokens (now {context_tokens:,}) to {to} so tracejudge cuts long traces to fit"
    return head + tail + "; the other cases are judged, and a resume retries this one"


def body_fix(context_tokens: int) -> str:
    """What to change after a server (or a proxy before it) refused one case's request with a 413 as a body larger than
    it accepts, the run's `judge.context_tokens` being `context_tokens`; and that the other cases are judged. Never raises."""
    # (a body holds the prompt's text, about 4 bytes a token and more once JSON escapes it: a lower context_tokens
    # makes tracejudge cut the long traces, so their bodies shrink with their prompts)
    return ("this case's judge request body is larger than the server, or a proxy before it, accepts: raise that limit (nginx: "
            f"client_max_body_size, 1 MB by default), or set judge.context_tokens (now {context_tokens:,}) lower so tracejudge "
            "cuts long traces itself; the other cases are judged, and a resume retries this one, refused again until one of "
            "them changes")
