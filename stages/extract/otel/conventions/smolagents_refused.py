"""smolagents answers a final-answer check refused, under OpenInference: the step that gave one failed.

An agent given `final_answer_checks` runs each check on the answer a step gave (`final_answer(…)`, by the model's call or
its code); when one fails, smolagents raises `AgentError("Check <name> failed with error: <e>")` inside the run, records
it as that step's error in memory, tells the model (the next request's history: "Error:\\n<message>\\nNow let's retry: …")
and goes on: the run did not return that answer. openinference-instrumentation-smolagents (0.1.43) runs the checks
outside the `Step n` span, and records the failure on no span: the step read as answering, with no error, where format
`smolagents` reads the same run's memory step with its error (`AgentError: Check … failed with error: …`).

`refused_answers` gives such a step's model request that error: a `final_answer` span under a `Step n` span with a later
model request in the same run, whose history holds the check's failure as smolagents words it (the last such message).
The step keeps the answer it gave as its output; the run's answer is the one it returned (`smolagents_steps.answers`).
"""

from __future__ import annotations

import re
from typing import Any

from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation, smolagents_span
from tracejudge.stages.extract.otel.messages import text_parts
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["refused_answers"]

_SCOPE = "openinference.instrumentation.smolagents"
_FINAL = "final_answer"
# smolagents' words for a failed check (`_validate_final_answer`) as its memory hands the error to the model
_CHECK = re.compile(r"Error:\n(Check \w+ failed with error: .*?)\nNow let's retry: ", re.S)


def _ours(span: Span) -> bool:
    return from_instrumentation(span, _SCOPE, smolagents_span)


def _owner(span: Span, index: dict[str, Span], views: dict[str, View], roles: tuple[str, ...]) -> Span | None:
    node, hops = span, 0
    while node.parent_id in index and hops < 10_000:  # (a loop of parents ends here too)
        node, hops = index[node.parent_id], hops + 1
        if views[node.span_id].role in roles:
            return node
    return None


def _texts(message: dict[str, Any]) -> list[str]:
    """A history message's texts: its text parts, and a tool message's response (smolagents hands the error back so)."""
    parts = [p.get("response") for p in message.get("parts") or [] if isinstance(p, dict) and p.get("type") == "tool_call_response"]
    return text_parts(message) + [p for p in parts if isinstance(p, str)]


def refused_answers(spans: list[Span], views: dict[str, View]) -> None:
    """Give the request of each step whose answer a final-answer check refused the check's error (module docstring)."""
    index = {s.span_id: s for s in spans}
    models = sorted((s for s in spans if views[s.span_id].role == "model" and _ours(s)), key=lambda s: (s.start, s.span_id))
    for final in spans:
        v = views[final.span_id]
        if v.role != "tool" or v.tool_name != _FINAL or not _ours(final):
            continue
        step = _owner(final, index, views, ("chain", "agent", "tool"))
        if step is None or views[step.span_id].role != "chain" or not _ours(step):
            continue
        run = _owner(step, index, views, ("agent", "tool"))
        asked = [m for m in models if _owner(m, index, views, ("chain", "agent", "tool")) is step and m.start <= final.start]
        later = [m for m in models if m.start >= step.end and _owner(m, index, views, ("agent", "tool")) is run]
        if not asked or not later:
            continue  # (the run ended with this answer: it returned it)
        said = [t for m in views[later[0].span_id].inputs or [] for t in _texts(m)]
        found = [hit.group(1) for t in said for hit in _CHECK.finditer(t)]
        mv = views[asked[-1].span_id]
        if found and mv.error is None:
            mv.error = f"AgentError: {found[-1]}"  # (as the memory step's error reads: `AgentError` is what smolagents raises)
