"""pydantic-ai's capability parts (2.78 on): data a tool or a capability adds to a request, framed in its kind's tag.

`ctx.enqueue(part)` with a `DataCapabilityPart` (a state update, a memory snapshot, a sub-agent's report; also an
`InstructionCapabilityPart` whose source has less than the operator's authority) reaches the model on the user
channel, framed in the kind's tag. pydantic-ai's request spans record it in `gen_ai.input.messages` as text parts
of a `user` message: the opening tag alone (`<station_report station="LFPG">`), the content, the closing tag
alone (`</station_report>`); its agent span's `pydantic_ai.all_messages` keeps the content only, as a user text
(beside the tool responses when a tool enqueued it). Read as they are, each was a user turn the user never said,
and under OpenInference (whose agent span's `input.value` is the run's last user text) the run's question.

`capability_data` reads each framed run of parts on pydantic-ai's spans as a `system` message of its own, in its
place (as its retry feedback and a `ToolReturn`'s content are read: the framework speaking), and a run whose
request is the content of one asks the run's last user text that is none. A frame is told by its shape: a text
part that is only an opening tag (a lowercase snake_case name, `name="value"` attributes), a text part that is
only its closing tag later in the same message, content between; a user's own text holding tags is one part.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from tracejudge.stages.extract.otel.conventions.pydantic_ai import ours
from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["capability_data"]

# pydantic-ai's own check of a kind's tag and attribute names (`_KIND_SEGMENT`, `check_capability_frame`): snake_case
_OPEN = re.compile(r'<([a-z][a-z0-9_]*)(?: [a-z][a-z0-9_]*="[^"]*")*>')


def capability_data(spans: list[Span], views: dict[str, View]) -> None:
    """Read the capability data pydantic-ai framed into its requests as the framework's, not the user's (the module doc).

    `spans`: a group's spans; `views` changed in place. On pydantic-ai's spans only: each request's input keeps its
    messages in order, a framed run of parts becoming a `system` message; an agent span whose request is the text
    of a frame's content asks the last user text of its run's messages that is none (`None` if none).
    """
    mine = [s for s in spans if ours(s)]
    framed: Counter[str] = Counter()  # each frame's content texts, as often as the most any one request held them
    for s in mine:
        v = views[s.span_id]
        if not v.inputs:
            continue
        inputs, held = _set_apart(v.inputs)
        if held:
            v.inputs = inputs
            framed |= held
    if not framed:
        return
    for s in mine:
        v = views[s.span_id]
        if v.role == "agent" and isinstance(v.request, str) and v.request in framed:
            v.request = _last_user_text(normalise(s.attrs.get("pydantic_ai.all_messages")) or [], framed)


def _text(part: Any) -> str | None:
    return part["content"] if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("content"), str) else None


def _frames(parts: list[Any]) -> list[tuple[bool, list[Any]]]:
    """`parts` cut into runs in order, each `(framed, its parts)`: a frame from its opening tag to its closing tag."""
    runs: list[tuple[bool, list[Any]]] = []
    i = 0
    while i < len(parts):
        opened = _OPEN.fullmatch(_text(parts[i]) or "")
        end = next((j for j in range(i + 1, len(parts)) if _text(parts[j]) == f"</{opened[1]}>"), None) if opened else None
        if end is not None:
            runs.append((True, parts[i:end + 1]))
            i = end + 1
            continue
        if runs and not runs[-1][0]:
            runs[-1][1].append(parts[i])
        else:
            runs.append((False, [parts[i]]))
        i += 1
    return runs


def _set_apart(inputs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Counter[str]]:
    """`inputs` with each framed run of a user message's parts a `system` message in its place, and the content texts
    of those frames counted."""
    out: list[dict[str, Any]] = []
    held: Counter[str] = Counter()
    for msg in inputs:
        runs = _frames(msg.get("parts") or []) if msg.get("role") == "user" else []
        if not any(framed for framed, _ in runs):
            out.append(msg)
            continue
        for framed, parts in runs:
            out.append({"role": "system", "parts": parts} if framed else {**msg, "parts": parts})
            if framed:
                held.update(t for t in map(_text, parts[1:-1]) if t is not None)
    return out, held


def _last_user_text(history: list[dict[str, Any]], framed: Counter[str]) -> str | None:
    """The last user text of a run's messages that is no frame's content (each content text taken as often as framed)."""
    left = framed.copy()
    said = []
    for m in history:
        for t in map(_text, m.get("parts") or []) if m.get("role") == "user" else ():
            if t is None:
                continue
            if left[t] > 0:
                left[t] -= 1
            else:
                said.append(t)
    return said[-1] if said else None
