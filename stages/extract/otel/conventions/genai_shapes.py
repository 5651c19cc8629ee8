"""The shape of each message of a GenAI message attribute (`gen_ai.input.messages`, `gen_ai.output.messages`).

A message the reader cannot take for one would read as a message that said nothing: a judge is then shown a request
without its question, or a reply without its answer. So each item must be a message object (or LangChain's
`[role, text]` pair) that names its role and holds what it said (`parts`, `content`, or the calls it asked for), its
`parts` an array and a text part's `content` text. A `content` or a text part's `content` of null is content not
captured (pydantic-ai's `include_content=False`: `missing_inputs`), not an error. Objects of the other shapes
`messages.normalise_one` reads (LangChain's `dumpd` and `messages_to_dict` forms, a Responses API item, which names
its `type`) are checked by that reader's rules alone.
"""

from __future__ import annotations

from typing import Any

from tracejudge.core.json_kind import json_kind
from tracejudge.stages.extract.common import fail
from tracejudge.stages.extract.otel.spans import Span

__all__ = ["check_messages"]

# (what a chat message may say instead of `parts` or `content`: the calls it asked for, a tool's answer to one)
_SAYS = ("parts", "content", "tool_calls", "function_call", "invalid_tool_calls", "tool_call_id")


def check_messages(span: Span, key: str, items: list[Any]) -> None:
    """Raise `AdapterError` naming the span and the field (`gen_ai.input.messages[2].role`) at the first item of
    `items` (the attribute `key`'s messages) that is not a message of a known shape (module doc)."""
    for i, item in enumerate(items):
        where = f"span {span.span_id}: {key}[{i}]"
        # (a message object, or LangChain's `[role, text]` pair, which `normalise_one` reads too)
        if not (isinstance(item, dict) or (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str))):
            fail(f"{where} must be a message object, got {json_kind(item)}", field=where)
        if not isinstance(item, dict):
            continue
        if _other_shape(item):
            continue
        role = item.get("role")
        if not isinstance(role, str) or not role.strip():
            said = ("is missing" if role is None else "is blank" if isinstance(role, str) else f"must be a name, got {json_kind(role)}")
            fail(f"{where}.role {said}: every message names who said it (user, assistant, system, tool)", field=f"{where}.role")
        if not any(k in item for k in _SAYS):
            fail(f"{where} has neither parts nor content: a message holds what was said (a null content is content not "
                 "captured)", field=where)
        if "parts" in item and not isinstance(item["parts"], list):
            fail(f"{where}.parts must be a JSON array of parts, got {json_kind(item['parts'])}", field=f"{where}.parts")
        for k, part in enumerate(item.get("parts") or []):
            content = part.get("content") if isinstance(part, dict) and part.get("type") == "text" else ""
            if content is not None and not isinstance(content, str):
                # (read as a message that said nothing, or, an object, the whole file's run stopped on it)
                fail(f"{where}.parts[{k}].content must be the text, got {json_kind(content)}", field=f"{where}.parts[{k}].content")


def _other_shape(item: dict[str, Any]) -> bool:
    """Whether `item` is a message of a shape other than the GenAI or chat one (module doc): LangChain's `dumpd`
    (`lc`, `kwargs`) or `messages_to_dict` (`type`, `data`) forms, or an item naming its `type` without a role
    (a Responses API item, a LangChain message's own `type`)."""
    if item.get("lc") == 1 and isinstance(item.get("kwargs"), dict):
        return True
    return "role" not in item and isinstance(item.get("type"), str) and bool(item["type"])
