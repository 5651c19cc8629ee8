"""The instructions each model request of a conversation was given: the trace's `system_prompts`.

Every convention reader leaves a request's system prompt as the leading `system` messages of its input (a `developer`
message is read as one; `gen_ai.system_instructions`, ADK's `system_instruction`, MLflow's recorded `system` and
instructions are put there: `conventions.genai_instructions`, `adk`, `mlflow`), so this reads them there and nowhere
else. A request whose input lost its first messages to the attribute limit (`View.input_start`) shows no leading
messages: what it kept of a system prompt is a fragment, not read. The agent is the nearest named agent run the request
ran under (an agent span, an agent called as a tool, a named graph), else `None`.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.messages import text_parts
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View
from tracejudge.stages.extract.otel.wrapped import ancestor
from tracejudge.stages.extract.system_prompts import distinct_prompts

__all__ = ["request_prompts"]

_RUNS = ("agent", "tool", "chain")  # (the roles whose `agent_name` names an agent a request can run under)


def request_prompts(requests: list[Span], views: dict[str, View], index: dict[str, Span]) -> list[dict[str, Any]]:
    """The native `system_prompts` of `requests` (in the order they started): each request's leading system messages,
    their text parts joined by newlines, with the request's agent; each (agent, text) once (`distinct_prompts`)."""
    given: list[tuple[str | None, str | None]] = []
    for m in requests:
        v = views[m.span_id]
        if v.input_start:
            continue
        agent = None
        for msg in v.inputs or []:
            if not isinstance(msg, dict) or msg.get("role") != "system":
                break
            if agent is None:
                agent = _agent(m, views, index)
            given.append((agent, "\n".join(text_parts(msg)) or None))
    return distinct_prompts(given)


def _agent(span: Span, views: dict[str, View], index: dict[str, Span]) -> str | None:
    def named(p: Span) -> bool:
        v = views.get(p.span_id)
        return v is not None and v.role in _RUNS and bool(v.agent_name)

    run = ancestor(span, index, named)
    return views[run.span_id].agent_name if run is not None else None
