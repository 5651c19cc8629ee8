"""A provider's prompt (prefix) cache, modelled: what a request would read from it and write to it.

The judge simulator reports cached tokens with it, and `tracejudge estimate`
predicts them with it, so on the simulator the two agree.

- OpenAI caches automatically: the prompt — the structured-output schema
  ("a prefix to the system message"), then each message's role and content,
  tokenized — in blocks, the first `PREFIX_MIN` (1,024) tokens and then
  every `PREFIX_BLOCK` (128) more; a request reads the longest such prefix
  an earlier request of the same model had.
- Anthropic caches only up to a block marked `cache_control` (the tools,
  the system prompt and the messages up to it), at least `PREFIX_MIN`
  tokens: written the first time (`cache_creation_input_tokens`), read after
  (`cache_read_input_tokens`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from tracejudge.llm.tokens import counter_for, encode

__all__ = ["PREFIX_BLOCK", "PREFIX_MIN", "PrefixCache", "prompt_text"]

# OpenAI's automatic prompt caching: prompts of 1,024 tokens and more, cached in 128-token steps.
PREFIX_MIN, PREFIX_BLOCK = 1024, 128


_REMEMBER_CHARS = 8192


def _tokens(encoding: Any, text: str, repeats: bool) -> list[int]:
    # A judge's requests share their schema and system prompt: the simulator tokenized them on every request. Long
    # texts are not kept (a conversation's earlier turns are long and rarely repeat), nor what differs per request.
    if repeats and len(text) <= _REMEMBER_CHARS:
        return list(_remembered(encoding, text))
    return encode(encoding, text)


@functools.lru_cache(maxsize=256)
def _remembered(encoding: Any, text: str) -> tuple[int, ...]:
    return tuple(encode(encoding, text))


def _flat(content: Any) -> Any:
    """A message's content as text when it is a list of text blocks (Anthropic's form), else as it is."""
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "".join(str(b.get("text", "")) for b in content)
    return content


def prompt_text(body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """`(messages with text content, schema text)` of a request body, as the prompt a provider tokenizes: the
    system prompt first (Anthropic's `system` field as a message), the structured-output or tool schemas as compact JSON."""
    messages = [{**m, "content": _flat(m.get("content"))} if isinstance(m, dict) else m for m in body.get("messages") or []]
    if isinstance(body.get("system"), str):
        messages = [{"role": "system", "content": body["system"]}, *messages]
    extra = ""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        extra = json.dumps(rf.get("json_schema", {}).get("schema", {}), sort_keys=True, separators=(",", ":"))
    for tool in body.get("tools") or []:
        # An Anthropic tool's schema is its `input_schema`, an OpenAI function's its `parameters`.
        function = tool.get("function") if isinstance(tool.get("function"), dict) else {}
        schema = tool["input_schema"] if "input_schema" in tool else function.get("parameters", {})
        extra += json.dumps(schema, sort_keys=True, separators=(",", ":"))
    return messages, extra


class PrefixCache:
    """The prefixes seen so far, per model (`enabled=False`: nothing is ever cached)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.prefixes: dict[str, set[bytes]] = {}  # model → hashes of every prompt prefix seen, at cache-block ends

    def anthropic(self, model: str, body: dict[str, Any]) -> tuple[int, int]:
        """`(cache_read, cache_creation)` tokens as Anthropic reports them for `body`, and remember its prefix.

        Anthropic caches only up to a block marked `cache_control`: the
        tools, the system prompt and the messages up to that block. A prefix
        of at least `PREFIX_MIN` tokens seen before (same model) is read;
        one not seen before is written.
        """
        if not self.enabled:
            return 0, 0
        parts = [json.dumps([t.get("input_schema") for t in body.get("tools") or []], sort_keys=True), str(body.get("system") or "")]
        marked = False
        for m in body.get("messages") or []:
            content = m.get("content") if isinstance(m, dict) else None
            for block in content if isinstance(content, list) else [{"type": "text", "text": str(content)}]:
                parts.append(str(block.get("text", "")))
                if block.get("cache_control"):
                    marked = True
                    break
            if marked:
                break
        if not marked:
            return 0, 0
        prefix = "\n".join(parts)
        tokens = counter_for(model).text(prefix)
        if tokens < PREFIX_MIN:
            return 0, 0
        digest = hashlib.sha256(f"{model}\0{prefix}".encode()).digest()
        seen = self.prefixes.setdefault("anthropic:" + model, set())
        if digest in seen:
            return tokens, 0
        seen.add(digest)
        return 0, tokens

    def openai(self, model: str, body: dict[str, Any], prompt: tuple[list[dict[str, Any]], str] | None = None) -> int:
        """Prompt tokens an OpenAI-style prefix cache would serve for `body`, and remember its prefixes.

        The prompt is the structured-output schema (OpenAI: "a prefix to the
        system message") then each message's role and content, tokenized;
        it is cached in blocks: the first `PREFIX_MIN` tokens, then every
        `PREFIX_BLOCK` more. The answer is the longest such prefix an earlier
        request of the same model had (0 below `PREFIX_MIN`). `prompt`:
        `prompt_text(body)` when the caller has it.
        """
        if not self.enabled:
            return 0
        messages, extra = prompt or prompt_text(body)
        encoding = counter_for(model).encoding
        tokens = _tokens(encoding, extra, True) if extra else []
        last = len(messages) - 1
        for i, m in enumerate(messages):
            content = m.get("content")
            text = f"{m.get('role')}\n{content if isinstance(content, str) else json.dumps(content, sort_keys=True)}"
            tokens += _tokens(encoding, text, i < last)
        seen = self.prefixes.setdefault(model, set())
        running, start, cached, hit = hashlib.sha256(), 0, 0, True
        for end in range(PREFIX_MIN, len(tokens) + 1, PREFIX_BLOCK):
            running.update(json.dumps(tokens[start:end]).encode())
            start = end
            digest = running.digest()
            if hit and digest in seen:
                cached = end
            else:
                hit = False
                seen.add(digest)
        return cached
