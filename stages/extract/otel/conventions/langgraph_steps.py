"""A LangGraph run that ran out of steps: the calls of its last reply never ran.

`create_react_agent` counts the steps its `recursion_limit` leaves (`remaining_steps`). When the model's reply asks for
tools and too few steps are left to run them and ask again, the agent node does not raise `GraphRecursionError`: it
drops the reply and returns `AIMessage(id=<the reply's id>, content="Sorry, need more steps to process this request.")`
(langgraph-prebuilt's `chat_agent_executor`), the graph ends, and that text is the last message of the state `invoke`
returns. The model span still records the reply with its calls; no tool span runs them and no request follows, so they
read as calls that ran and returned nothing. Here they are calls not run (`OUT_OF_STEPS`): the model asked for them, the
agent never ran them. The graph's answer stays the stand-in it returned.

Told from the spans, whichever instrumentation recorded them: a span whose output is the node's update
`{"messages": [that one AIMessage]}` (OpenInference's `agent` node and `call_model` chain, OpenLLMetry's `execute_task
agent` under `outputs`) holds, below it, the model request whose reply was dropped (the graph's own final state, which
ends with the same message, holds every message: it is no node's update).

A graph of its own (an agent node and a `ToolNode` in a loop) that reaches its `recursion_limit` raises
`GraphRecursionError` (the run's error: the `exception` event of the graph's run span, whichever instrumentation): LangGraph
checks the limit before the next step, so the calls of the last reply, asked for in the step that used the last of it,
never run (no tool span, no request after it). They too are calls not run, the error named (`recursion_unrun`).
Langfuse's LangChain `CallbackHandler` records no `exception` event and no type: only the graph's root span at level
ERROR with `str(error)` as its status message. That text is LangGraph's own for this error alone (`Recursion limit of <n>
reached without hitting a stop condition…`), so such a span is read as the same `GraphRecursionError`, and its error (the
run's) names the type as the other instrumentations' do.
"""

from __future__ import annotations

import re
from typing import Any

from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, unjson

__all__ = ["OUT_OF_STEPS", "SORRY", "read_out_of_steps", "recursion_unrun"]

SORRY = "Sorry, need more steps to process this request."  # (langgraph-prebuilt's fixed text)
OUT_OF_STEPS = ("not run: LangGraph's agent ran out of steps (its `recursion_limit`) before running this call, and put "
                f"{SORRY!r} in place of the reply that asked for it")
_RECURSION = "GraphRecursionError"
# LangGraph's message for it (`langgraph.pregel`: "Recursion limit of {n} reached without hitting a stop condition. …")
_RECURSION_TEXT = re.compile(r"(?:[\w.]*GraphRecursionError: )?Recursion limit of \d+ reached without hitting a stop condition")
_OUTPUT_KEYS = ("output.value", "traceloop.entity.output", "mlflow.spanOutputs", "langfuse.observation.output")


def _stand_in(span: Span) -> bool:
    """Whether `span` recorded a node update that is the agent's out-of-steps message alone (module docstring)."""
    for key in _OUTPUT_KEYS:
        raw = span.attrs.get(key)
        if not isinstance(raw, str) or SORRY not in raw:
            continue  # (the cheap test first)
        decoded = unjson(raw)
        if isinstance(decoded, dict) and isinstance(decoded.get("outputs"), dict):
            decoded = decoded["outputs"]  # (OpenLLMetry's wrapper)
        msgs = normalise(decoded.get("messages")) if isinstance(decoded, dict) and isinstance(decoded.get("messages"), list) else None
        if msgs and len(msgs) == 1 and msgs[0].get("role") == "assistant":
            parts = msgs[0].get("parts") or []
            if not any(p.get("type") == "tool_call" for p in parts) and [p.get("content") for p in parts if p.get("type") == "text"] == [SORRY]:
                return True
    return False


def recursion_unrun(error: str) -> str:
    """The error of a call a `GraphRecursionError` (`error`: `"<type>: <message>"`) stopped before it ran."""
    return f"not run: the graph stopped before this call ran ({error.splitlines()[0]}); no tool span records it"


def _recursion(span: Span, v: View) -> str | None:
    """`"<type>: <message>"` of `span`'s `GraphRecursionError` exception event, else None.

    A span with no exception event whose error is LangGraph's text for that error alone (Langfuse keeps only the status
    message, `str(error)`: module docstring) is that error too; its error, the run's, then names the type.
    """
    for name, ev in span.events:
        etype = ev.get("exception.type")
        if name == "exception" and isinstance(etype, str) and etype.rsplit(".", 1)[-1] == _RECURSION:
            # (by its class name, as MLflow records it and as Langfuse's text is read below: `langchain_errors`)
            return f"{_RECURSION}: {ev.get('exception.message') or ''}".rstrip(": ")
    if not any(name == "exception" for name, _ in span.events) and isinstance(v.error, str) and _RECURSION_TEXT.match(v.error):
        if not v.error.startswith("Recursion"):
            return v.error  # (the type already named)
        v.error = f"{_RECURSION}: {v.error}"
        return v.error
    return None


def _calls(v: View) -> list[dict[str, Any]]:
    return [p for m in v.outputs or [] for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "tool_call" and not p.get("server")]


def read_out_of_steps(spans: list[Span], views: dict[str, View]) -> None:
    """Mark the calls of each reply an out-of-steps agent dropped, or a `GraphRecursionError` stopped, as not run (module docstring)."""
    below = {s.span_id: OUT_OF_STEPS for s in spans if _stand_in(s)}
    stopped = {s.span_id: e for s in spans if (e := _recursion(s, views[s.span_id])) is not None}
    if not below and not stopped:
        return
    index = {s.span_id: s for s in spans}

    def under(s: Span, tops: dict[str, str]) -> str | None:
        """The id of the nearest span above `s` among `tops`, else None."""
        node, hops = s, 0
        while node.parent_id in index and node.parent_id not in tops and hops < 10_000:
            node, hops = index[node.parent_id], hops + 1  # type: ignore[index]
        return node.parent_id if node.parent_id in tops else None

    models = sorted((s for s in spans if views[s.span_id].role == "model" and views[s.span_id].outputs), key=lambda s: (s.start, s.span_id))
    for s in models:
        if under(s, below) is not None:
            for p in _calls(views[s.span_id]):
                p.setdefault("not_run", OUT_OF_STEPS)
    for top, error in stopped.items():
        mine = [s for s in models if under(s, {top: error}) is not None]
        if not mine:
            continue
        last = mine[-1]  # the reply asked for in the last step: nothing ran after it
        tools = [views[t.span_id] for t in spans if views[t.span_id].role == "tool" and t.start >= last.start and under(t, {top: error})]
        ran = {t.call_id for t in tools if t.call_id}
        if any(t.call_id is None for t in tools):
            continue  # (a tool span that kept no call id may have run one of them)
        for p in _calls(views[last.span_id]):
            if p.get("id") not in (None, "") and str(p["id"]) not in ran:
                p.setdefault("not_run", recursion_unrun(error))
