"""Where a LangGraph pause and its resume go in the conversation (`conventions.langgraph` finds them on the spans).

A graph paused at `interrupt(value)` ended its run by asking the human something, and the run resumed with
`Command(resume=answer)` is the human's reply, so they are read as a turn's end and the next turn's user text:

- the turn (one invoke) that paused has the interrupt's value as its final text, and that text is what the agent
  said at that point: the output of the turn's last step, or of a step of its own when that step already has an
  output or no step ran before the pause (such a step is no model request: `usage.requests` does not count it).
  A text value is shown as it is, another value as JSON; several interrupts of one pause, one line each.
- a resumed run is a turn of its own whose user text is the resume value, placed like any user turn before the
  run's first step (`trace.user_messages`). A resume given per interrupt id (`Command(resume={id: value})`)
  is those values (one: the value itself).
- a tool that paused is no call of its own: on resume LangGraph runs it again from its start, and that run (with
  the result) is the call, in the step of the model request that asked for it.

A pause recorded twice (the node or tool that called `interrupt` and the spans around it) counts once, by interrupt id.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View

__all__ = ["Pauses", "add_question", "question_text"]


class Pauses:
    """The pauses and resumes of one conversation, by the span id of the turn anchor they belong to."""

    def __init__(self, spans: list[Span], views: dict[str, View], anchor: Callable[[Span], Span]) -> None:
        self.asked: dict[str, list[tuple[str | None, Any]]] = {}
        self.resumed: dict[str, Any] = {}
        self.anchors: dict[str, Span] = {}  # (a graph that paused before any model request or call still asked)
        seen: set[Any] = set()
        marked = [s for s in spans if views[s.span_id].interrupts or views[s.span_id].resume is not MISSING]
        for span in sorted(marked, key=lambda s: (s.start, s.span_id)):  # outer spans first: a run's resume is its own input
            v = views[span.span_id]
            if v.interrupts:
                top = anchor(span)
                a = self.anchors.setdefault(top.span_id, top).span_id
                for ident, value in v.interrupts:
                    key = (a, ident) if ident is not None else (a, None, repr(value))
                    if key not in seen:
                        seen.add(key)
                        self.asked.setdefault(a, []).append((ident, value))
            if v.resume is not MISSING:
                self.resumed.setdefault(anchor(span).span_id, v.resume)
        self._ids = {ident for asked in self.asked.values() for ident, _ in asked if ident is not None}

    def reply(self, anchor_id: str) -> Any:
        """What the human answered to resume the run of `anchor_id` (`MISSING`: it is no resumed run)."""
        value = self.resumed.get(anchor_id, MISSING)
        if isinstance(value, dict) and value and set(value) <= self._ids:
            values = list(value.values())
            return values[0] if len(values) == 1 else values
        return value


def question_text(asked: list[tuple[str | None, Any]]) -> str:
    """The interrupts' values as the text the human was shown: text as it is, other values as JSON, one a line."""
    return "\n".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str) for _, v in asked)


def add_question(steps: list[dict[str, Any]], first: int, text: str) -> None:
    """Make `text` the output of the last of the turn's steps (`steps[first:]`), or of a step of its own after them."""
    if len(steps) > first and not steps[-1].get("output"):
        steps[-1]["output"] = text
    else:
        steps.append({"output": text})
