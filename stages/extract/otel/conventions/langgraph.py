"""LangGraph's human-in-the-loop pauses and handoffs, whichever instrumentation recorded them (OpenInference, OpenLLMetry, Langfuse,
MLflow).

A graph that calls `interrupt(value)` stops (the invoke returns with `__interrupt__`); the application shows the
value to a human and runs the graph again on the same thread with `Command(resume=answer)`. None of those
instrumentations records the exchange as messages; what counts here:

- a pause: a span whose `exception` event is LangGraph's `GraphInterrupt` (OpenInference, OpenLLMetry and MLflow
  record it on the node or tool that called `interrupt` and on the spans around it), or whose status message is
  that exception's text, `(Interrupt(value=…, id=…),)` (all Langfuse keeps). `View.interrupts` gets each
  `Interrupt`'s `(id, value)`, the value read from that text as the Python literal it was written as
  (`python_literal`: nothing is run; a value that is no literal keeps its source text, and text that is no
  `Interrupt(…)` at all is kept whole). An error the instrumentation made of it (an ERROR status) is cleared:
  the graph paused, nothing failed.
- a handoff: a tool returning `Command(goto=agent, graph=Command.PARENT)` makes LangGraph raise `ParentCommand`
  through the subgraph's node spans up to the parent graph, which goes on at `agent`; OpenLLMetry and MLflow give
  those spans an ERROR status (OpenInference only the `exception` event). That error is cleared too: nothing failed.
- a resume: a span whose input is a `Command` that carries a `resume` (its fields `graph`, `update`, `resume`,
  `goto`, as every one of those instrumentations serialises it; OpenLLMetry's under `inputs`). `View.resume`
  gets the value as recorded.

`assemble` turns them into the conversation (see `otel.pauses`).
"""

from __future__ import annotations

import ast
from typing import Any

from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.conventions.graph_state import lift_answers
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, unjson

__all__ = ["read_pauses"]

_INTERRUPT_TYPES = ("GraphInterrupt", "NodeInterrupt")  # (`NodeInterrupt`: the deprecated one a node raised itself, a `GraphInterrupt`)
_COMMAND_FIELDS = frozenset({"graph", "update", "resume", "goto"})
_HANDOFF = "ParentCommand"  # (LangGraph's control flow for a `Command` to the parent graph, not an error)
# The keys each instrumentation records a chain's input under (MLflow's `mlflow.spanInputs`, Langfuse's observation input).
_INPUT_KEYS = ("input.value", "traceloop.entity.input", "langfuse.observation.input", "mlflow.spanInputs")
_MAX_TEXT = 1_000_000  # longer text is not parsed: it is no exception message LangGraph wrote


def read_pauses(spans: list[Span], views: dict[str, View]) -> None:
    """Fill `interrupts` and `resume` of the views of `spans` (see the module docstring).

    Also gives an agent span wrapping a graph run the answer the run's final state holds (`graph_state.lift_answers`:
    the group pass for LangGraph runs is this one).
    """
    lift_answers(spans, views)
    for span in spans:
        v = views[span.span_id]
        asked = _interrupts(span)
        if asked:
            v.interrupts = asked
            if v.error is not None:
                v.error = None  # an ERROR status for a pause (OpenLLMetry, MLflow): not a failure of the span
        elif v.error is not None and _handed_off(span):
            v.error = None  # a handoff to the parent graph (OpenLLMetry's, MLflow's ERROR status for it): not a failure of the span
        resume = _resume(span)
        if resume is not MISSING:
            v.resume = resume


def _handed_off(span: Span) -> bool:
    """Whether `span`'s exception is LangGraph's `ParentCommand`: a tool's `Command(goto=…, graph=Command.PARENT)` (a
    handoff to another agent of the parent graph) travels up as that exception through the subgraph's spans."""
    return any(name == "exception" and isinstance(ev.get("exception.type"), str) and ev["exception.type"].rsplit(".", 1)[-1] == _HANDOFF
               for name, ev in span.events)


def _interrupts(span: Span) -> list[tuple[str | None, Any]]:
    for name, ev in span.events:
        etype = ev.get("exception.type")
        if name == "exception" and isinstance(etype, str) and etype.rsplit(".", 1)[-1] in _INTERRUPT_TYPES:
            message = ev.get("exception.message")
            return _parse(message) or ([(None, message)] if isinstance(message, str) and message else [])
    for text in (span.status_message, span.attrs.get("langfuse.observation.status_message")):
        got = _parse(text)
        if got:
            return got
    return []


def _parse(text: Any) -> list[tuple[str | None, Any]]:
    """The `(id, value)` of each `Interrupt(...)` in `text`, LangGraph's `repr` of the exception's interrupts; `[]` when it is not that."""
    if not isinstance(text, str) or "Interrupt(" not in text or len(text) > _MAX_TEXT:
        return []
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    items = tree.elts if isinstance(tree, (ast.Tuple, ast.List)) else [tree]
    out: list[tuple[str | None, Any]] = []
    for item in items:
        if not (isinstance(item, ast.Call) and isinstance(item.func, ast.Name) and item.func.id == "Interrupt"):
            return []
        fields = {k.arg: k.value for k in item.keywords if k.arg}
        if "value" not in fields and item.args:
            fields["value"] = item.args[0]  # (a repr that gives the value by position: read it too)
        if "value" not in fields:
            return []
        value = python_literal(fields["value"], MISSING)
        ident = python_literal(fields["id"], None) if "id" in fields else None
        out.append((ident if isinstance(ident, str) else None, ast.get_source_segment(text.strip(), fields["value"]) if value is MISSING else value))
    return out


def _resume(span: Span) -> Any:
    for key in _INPUT_KEYS:
        raw = span.attrs.get(key)
        if isinstance(raw, str):
            if '"resume"' not in raw:
                continue  # (the cheap test first: every span of every trace comes here, few are a resume)
            raw = unjson(raw)
        if isinstance(raw, dict) and isinstance(raw.get("inputs"), dict) and key == "traceloop.entity.input":
            raw = raw["inputs"]  # LangChain's callback payload around the graph's input
        if isinstance(raw, dict) and "resume" in raw and set(raw) <= _COMMAND_FIELDS and raw["resume"] is not None:
            return raw["resume"]
    return MISSING
