"""pydantic-ai's `ToolReturn`: a tool's result for the model, content beside it, metadata for the application.

A tool may return `ToolReturn(return_value=…, content=…, metadata=…)`. pydantic-ai sends the model
`return_value` as the tool's result, and `content` (a text, or a list of texts and files) as user-prompt parts
of the same request, right after the tool results; `metadata` it sends no one. Its tool span, though, records
the whole object as the tool's result (`tool_response`, `gen_ai.tool.call.result`, OpenInference's
`output.value`): `{"return_value": …, "content": […], "metadata": …, "kind": "tool-return"}`.

Read as it is, the call's result was that wrapper (the metadata the model never saw in it), and each text of
`content`, recorded in the user's role, was a user turn the user never said (under OpenInference, whose agent
span takes its last user text as the run's input, even the run's request). `tool_returns` reads the call's
result as `return_value` and each content text as the framework's, not the user's: a `system` message of its
own after the tool's response in every request's input, as pydantic-ai's retry feedback is (`pydantic_ai`),
and a run's request that was such a text gives way to the run's last user text that is none.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.common import maybe_json
from tracejudge.stages.extract.otel.conventions.pydantic_ai import ours
from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, present

__all__ = ["tool_returns"]

_KIND = "tool-return"  # `ToolReturn.kind`, the tag its serialisation carries


def tool_returns(spans: list[Span], views: dict[str, View]) -> None:
    """Read pydantic-ai's `ToolReturn` results as it sent them (see the module doc). In place.

    `spans`: a group's spans; only pydantic-ai's are read. A tool span's result that is a `ToolReturn` becomes its
    `return_value`; the texts of its `content`, in a request's input next to that call's response, become `system`
    messages; an agent span whose request is one of them asks the run's last user text that is none (`None` if none).
    """
    mine = [s for s in spans if ours(s)]
    added: dict[str, list[str]] = {}  # call id → the texts its ToolReturn added to the next request
    for s in mine:
        v = views[s.span_id]
        returned = maybe_json(v.result) if v.role == "tool" else None
        if not isinstance(returned, dict) or returned.get("kind") != _KIND or "return_value" not in returned:
            continue
        v.result = returned["return_value"]
        if v.call_id is not None:
            added[v.call_id] = _texts(returned.get("content"))
    if not any(added.values()):
        return
    texts = {t for said in added.values() for t in said}
    for s in mine:
        v = views[s.span_id]
        if v.inputs:
            v.inputs = _set_apart(v.inputs, added)
        if v.role == "agent" and v.request in texts:
            v.request = _last_user_text(normalise(s.attrs.get("pydantic_ai.all_messages")) or [], added)


def _texts(content: Any) -> list[str]:
    """The texts of a `ToolReturn.content` as serialised: a text, or the texts of a list (files are no text)."""
    if isinstance(content, str):
        return [content]
    return [c for c in content if isinstance(c, str)] if isinstance(content, list) else []


def _split(msg: dict[str, Any], added: dict[str, list[str]]) -> tuple[list[Any], list[Any]]:
    """A message's parts: those it keeps, and the texts a `ToolReturn` of one of its tool responses added."""
    left: list[str] = []
    for p in msg.get("parts") or []:
        if isinstance(p, dict) and p.get("type") == "tool_call_response" and present(p.get("id")):
            left += added.get(str(p["id"]), [])
    kept: list[Any] = []
    moved: list[Any] = []
    for p in msg.get("parts") or []:
        if left and isinstance(p, dict) and p.get("type") == "text" and p.get("content") in left:
            left.remove(p["content"])  # each text once: the user may say the same words in a later request
            moved.append(p)
        else:
            kept.append(p)
    return kept, moved


def _set_apart(inputs: list[dict[str, Any]], added: dict[str, list[str]]) -> list[dict[str, Any]]:
    """`inputs` with the texts a `ToolReturn` added a `system` message of their own, after what is left of theirs."""
    out: list[dict[str, Any]] = []
    for msg in inputs:
        kept, moved = _split(msg, added) if msg.get("role") in ("user", "tool") else (None, [])
        if not moved:
            out.append(msg)
            continue
        if kept:
            out.append({**msg, "parts": kept})
        out.append({"role": "system", "parts": moved})
    return out


def _last_user_text(history: list[dict[str, Any]], added: dict[str, list[str]]) -> str | None:
    """The last user text of a run's messages that no `ToolReturn` added, else `None`."""
    said = [p["content"] for m in _set_apart(history, added) if m.get("role") == "user"
            for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str)]
    return said[-1] if said else None
