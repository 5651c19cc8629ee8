"""The rules of `Trace.system_prompts` as a record holds them, whichever reader or file gave them."""

from __future__ import annotations

from typing import Any

__all__ = ["distinct", "needs_distinct", "none_as_empty"]


def none_as_empty(cls: Any, value: Any) -> Any:
    """`[]` for null (the format recorded none, as an absent field), else `value` for validation."""
    return [] if value is None else value


def needs_distinct(prompts: list[Any]) -> bool:
    """Whether `prompts` (each with `text` and `agent`) hold a repeated (agent, text) or a text of only whitespace."""
    return len({(p.agent, p.text) for p in prompts}) < len(prompts) or any(not p.text.strip() for p in prompts)


def distinct(cls: Any, prompts: list[Any]) -> list[Any]:
    """`prompts` with one entry per distinct (agent, text), in order of first appearance, and none whose text is only
    whitespace (it says nothing: a judge shown it saw an empty section). The list itself when nothing is to drop."""
    if not needs_distinct(prompts):
        return prompts
    seen: set[tuple[str | None, str]] = set()
    out = []
    for p in prompts:
        if p.text.strip() and (p.agent, p.text) not in seen:
            seen.add((p.agent, p.text))
            out.append(p)
    return out
