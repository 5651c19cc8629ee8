"""smolagents' replayed memory in a model request's input under OpenInference, read as the model got it.

openinference-instrumentation-smolagents records a request's messages as smolagents built them from its memory:
a `tool-call` message ("Calling tools:\\n[{'id': …, …}]") and then a `tool-response` ("Observation:\\n…") with no
call id. A response that follows a `tool-call` naming one call answers that call's id (a managed agent's answer
has no tool span of its own). The closing prompt of a run that ran out of steps ("Based on the above, please
provide an answer to the following user task:\\n<task>", ending in the task the latest `New task:` message gave)
is the framework's instruction, a system message, not the user speaking again.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation, smolagents_span
from tracejudge.stages.extract.otel.messages import text_parts
from tracejudge.stages.extract.otel.spans import Span

__all__ = ["SCOPE", "memory_inputs"]

SCOPE = "openinference.instrumentation.smolagents"
_OBSERVATION = "Observation:\n"
_CALLING = "Calling tools:\n"
_NEW_TASK = "New task:\n"


def memory_inputs(msgs: list[dict[str, Any]] | None, span: Span) -> list[dict[str, Any]] | None:
    """`msgs` (a request's normalised input messages) as the model got them; `msgs` itself for another instrumentation's span.

    Returns a new list (messages copied where changed), or `msgs` unchanged when it is `None`, empty, or not
    the smolagents instrumentation's. A `tool-call` message naming several calls is followed by one response
    joining their observations: no id can be given, and it stays as recorded. The closing prompt is recognised
    as the request's last message, a user text ending in the task of the latest `New task:` message before it,
    not by its wording (the template can be changed); a user message giving a new task (`New task:`, a later
    run with `reset=False`) is the user.
    """
    if not msgs or not from_instrumentation(span, SCOPE, smolagents_span):
        return msgs
    out = [dict(m) for m in msgs]
    for prev, msg in zip(out, out[1:]):
        cid, name = _one_call(prev)
        parts = msg.get("parts") or []
        if cid is not None and msg.get("role") == "tool" and len(parts) == 1 and parts[0].get("type") == "tool_call_response" \
                and parts[0].get("id") is None and isinstance(parts[0].get("response"), str) and parts[0]["response"].startswith(_OBSERVATION):
            # (the tool's name too: a server numbering calls per response gives every round's call `call_0`)
            named = {"name": name} if name is not None and parts[0].get("name") is None else {}
            msg["parts"] = [{**parts[0], "id": cid, **named, "response": parts[0]["response"][len(_OBSERVATION):]}]
    said = ["\n".join(text_parts(m)) if m.get("role") == "user" else "" for m in out]
    tasks = [t[len(_NEW_TASK):] for t in said[:-1] if t.startswith(_NEW_TASK)]
    last = said[-1]
    if tasks and tasks[-1] and last and not last.startswith(_NEW_TASK) and last.endswith("\n" + tasks[-1]):
        out[-1] = {**out[-1], "role": "system"}  # provide_final_answer's instruction, not the user
    return out


def _one_call(msg: dict[str, Any]) -> tuple[str | None, str | None]:
    """`(call id, tool name or None)` of a smolagents `tool-call` message naming exactly one call
    ("Calling tools:\\n[{'id': …, 'function': {'name': …}}]"); `(None, None)` for any other message."""
    texts = text_parts(msg) if msg.get("role") == "tool-call" else []
    if len(texts) != 1 or not texts[0].startswith(_CALLING):
        return None, None
    calls = python_literal(texts[0][len(_CALLING):])
    if isinstance(calls, list) and len(calls) == 1 and isinstance(calls[0], dict) and isinstance(calls[0].get("id"), (str, int)):
        fn = calls[0].get("function")
        name = fn.get("name") if isinstance(fn, dict) and isinstance(fn.get("name"), str) else None
        return str(calls[0]["id"]), name
    return None, None
