"""Anthropic's assistant prefill, on a message's parts whatever a reader calls their text.

A Messages API request may end with the assistant's own words (`{"city": "`); the model goes on from them, and its
response holds only what it added (Anthropic's "Prefill Claude's response" guide). The answer the application has is
the prefill followed by that continuation. Format `otel` reads it on normalised parts (`{"type": "text", "content"}`),
format `anthropic-messages` on the API's blocks (`{"type": "text", "text"}`): both through these two functions, so the
two read a prefill alike.
"""

from __future__ import annotations

from typing import Any

__all__ = ["prefill_words", "prefixed"]


def prefill_words(parts: list[Any], key: str) -> str | None:
    """The words of a message whose parts are all text (`parts[i][key]` a string): their text joined, else `None` (a
    call or reasoning is no prefill, and neither is an empty text). Whitespace is words: a `"\\n"` prefill starts the
    answer with that newline."""
    got = [p for p in parts if isinstance(p, dict)]
    if not got or any(p.get("type") != "text" or not isinstance(p.get(key), str) for p in got):
        return None
    return "".join(p[key] for p in got) or None


def prefixed(parts: list[Any], words: str, key: str) -> list[Any]:
    """`parts` of the response that continued `words`, the words put first: joined to its first part when that is text
    (the continuation goes on mid-word: no separator), else a text part of their own before it (the response begins
    with a call, or has no text)."""
    out = list(parts)
    if out and isinstance(out[0], dict) and out[0].get("type") == "text" and isinstance(out[0].get(key), str):
        out[0] = {**out[0], key: words + out[0][key]}
    else:
        out.insert(0, {"type": "text", key: words})
    return out
