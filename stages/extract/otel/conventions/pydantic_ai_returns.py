"""pydantic-ai's `ToolReturn`: a tool's result for the model, content beside it, metadata for the application.

A tool may return `ToolReturn(return_value=…, content=…, metadata=…)`. pydantic-ai sends the model
`return_value` as the tool's result, and `content` (a text, or a list of texts and files) as user-prompt parts
of the same request, right after the tool results; `metadata` it sends no one. Its tool span, though, records
the whole object as the tool's result (`tool_response`, `gen_ai.tool.call.result`, OpenInference's
`output.value`, MLflow autolog's `mlflow.spanOutputs`): `{"return_value": …, "content": […], "metadata": …,
"kind": "tool-return"}`.

Read as it is, the call's result was that wrapper (the metadata the model never saw in it), and each text of
`content`, recorded in the user's role, was a user turn the user never said (under OpenInference, whose agent
span takes its last user text as the run's input, even the run's request). `tool_returns` reads the call's
result as `return_value` and each content text as the framework's, not the user's: a `system` message of its
own in every request's input (where pydantic-ai put it: in the message of the tool responses, or, as MLflow
writes a request one part a message, a user message right after them), as pydantic-ai's retry feedback is
(`pydantic_ai`), and a run's request that was such a text gives way to the run's last user text that is none.
The texts are told by their words (a tool span keeps no link to them; MLflow's keeps no call id either).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tracejudge.stages.extract.common import maybe_json
from tracejudge.stages.extract.otel.conventions.pydantic_ai import ours
from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["tool_returns"]

_KIND = "tool-return"  # `ToolReturn.kind`, the tag its serialisation carries


def tool_returns(spans: list[Span], views: dict[str, View]) -> None:
    """Read pydantic-ai's `ToolReturn` results as it sent them (see the module doc). In place.

    `spans`: a group's spans. A tool span's result that is a `ToolReturn` dump (its `kind` and `return_value`, whichever
    instrumentation wrote it: pydantic-ai's own, OpenInference's, MLflow's autolog) becomes its `return_value`; the
    texts of its `content`, in a request's input beside the tool responses or in the user messages right after them,
    become `system` messages; a pydantic-ai agent span whose request is one of them asks the run's last user text
    that is none (`None` if none).
    """
    added: Counter[str] = Counter()  # the texts the ToolReturns added to the requests after them, each as often as added
    for s in spans:
        v = views[s.span_id]
        returned = maybe_json(v.result) if v.role == "tool" else None
        if isinstance(returned, dict) and returned.get("kind") == _KIND and "return_value" in returned:
            v.result = returned["return_value"]
            added.update(_texts(returned.get("content")))
    if not added:
        return
    for s in spans:
        v = views[s.span_id]
        if v.inputs:
            v.inputs = _set_apart(v.inputs, added)
        if v.role == "agent" and isinstance(v.request, str) and v.request in added and ours(s):
            v.request = _last_user_text(normalise(s.attrs.get("pydantic_ai.all_messages")) or [], added)


def _texts(content: Any) -> list[str]:
    """The texts of a `ToolReturn.content` as serialised: a text, or the texts of a list (files are no text)."""
    if isinstance(content, str):
        return [content]
    return [c for c in content if isinstance(c, str)] if isinstance(content, list) else []


def _responds(msg: dict[str, Any]) -> bool:
    return any(isinstance(p, dict) and p.get("type") == "tool_call_response" for p in msg.get("parts") or [])


def _set_apart(inputs: list[dict[str, Any]], added: Counter[str]) -> list[dict[str, Any]]:
    """`inputs` with the texts a `ToolReturn` added a `system` message of their own, after what is left of theirs.

    Such a text is in the message holding the tool responses (pydantic-ai's request; OpenInference's `tool` message)
    or in a user message right after it (MLflow's, one message a part); each is taken as often as it was added.
    """
    left = added.copy()  # (each request replays the history: counted afresh per request)
    out: list[dict[str, Any]] = []
    after_responses = False
    for msg in inputs:
        responds = _responds(msg)
        after_responses = responds or (after_responses and msg.get("role") == "user")
        kept: list[Any] = []
        moved: list[Any] = []
        for p in msg.get("parts") or []:
            text = p.get("content") if isinstance(p, dict) and p.get("type") == "text" else None
            if after_responses and msg.get("role") in ("user", "tool") and isinstance(text, str) and left[text] > 0:
                left[text] -= 1
                moved.append(p)
            else:
                kept.append(p)
        if not moved:
            out.append(msg)
            continue
        if kept:
            out.append({**msg, "parts": kept})
        out.append({"role": "system", "parts": moved})
    return out


def _last_user_text(history: list[dict[str, Any]], added: Counter[str]) -> str | None:
    """The last user text of a run's messages that no `ToolReturn` added, else `None`."""
    said = [p["content"] for m in _set_apart(history, added) if m.get("role") == "user"
            for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str)]
    return said[-1] if said else None
