"""The one rule every reader follows for `Trace.system_prompts`: distinct instructions, in order of first appearance.

A loop re-sends its system prompt with every model request, and a multi-agent run gives each agent its own: the trace
keeps each (agent, text) once, where it first appeared. Blank text is no instruction (a framework's empty placeholder).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tracejudge.stages.extract.common import json_type, text_of

__all__ = ["content_problem", "distinct_prompts", "first_system", "leading_system", "prompt_text"]


def prompt_text(content: Any) -> str | None:
    """The text of a system message's content: a string, or the text of its parts (`{"type": "text" | "input_text",
    "text": …}` or bare strings) joined by newlines; `None` when it holds no text."""
    text = text_of(content)
    return text if text is not None and text.strip() else None


def content_problem(content: Any, missing: bool = False) -> str | None:
    """Why `content` is no system message's content as the chat APIs take it (text, or a list of parts each a string or
    an object whose `text`, for a `text` / `input_text` part, is a string), or None. `missing`: the field is absent.
    Read past, such a prompt was lost without a word, and a judge shown the instructions saw none."""
    if missing:
        return "expected the instructions' text or a list of text parts; the field is missing"
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"expected the instructions' text or a list of text parts, got {json_type(content)}"
    for k, part in enumerate(content):
        if isinstance(part, str):
            continue
        if not isinstance(part, dict):
            return f"[{k}]: expected a text part (an object), got {json_type(part)}"
        if part.get("type", "text") in ("text", "input_text") and not isinstance(part.get("text"), str):
            return f"[{k}].text: expected the part's text, got {json_type(part.get('text'))}"
    return None


def distinct_prompts(given: Iterable[tuple[str | None, str | None]]) -> list[dict[str, Any]]:
    """`[{"text": …, "agent": …}]` (the native `SystemPrompt` shape) from `(agent, text)` pairs in the order they were
    given: each distinct pair once, blank or missing texts left out. `agent` is left out when `None`, so a trace
    written back carries only what was recorded."""
    seen: set[tuple[str | None, str]] = set()
    out: list[dict[str, Any]] = []
    for agent, text in given:
        if not isinstance(text, str) or not text.strip() or (agent, text) in seen:
            continue
        seen.add((agent, text))
        out.append({"text": text} if agent is None else {"text": text, "agent": agent})
    return out


def first_system(messages: list[Any]) -> str | None:
    """The text of the first `{"role": "system", "content": …}` message of a benchmark's message list (τ-bench's and
    τ²-bench's policy), or `None`. Such a harness writes one, first: a later one would be another copy."""
    first = next((m for m in messages if isinstance(m, dict) and m.get("role") == "system"), None)
    return prompt_text(first.get("content")) if first is not None else None


def leading_system(messages: Any) -> list[str | None]:
    """The texts of the `system` / `developer` messages a chat message list opens with (what one model request was
    told: smolagents' `model_input_messages`); `[]` for anything but a list."""
    out: list[str | None] = []
    for msg in messages if isinstance(messages, list) else []:
        if not isinstance(msg, dict) or msg.get("role") not in ("system", "developer"):
            break
        out.append(prompt_text(msg.get("content")))
    return out
