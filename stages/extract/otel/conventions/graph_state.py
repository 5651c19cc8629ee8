"""What a LangGraph agent returned, read from the graph's final state, whichever instrumentation recorded it.

A graph's run span (OpenInference's root `LangGraph` chain, OpenLLMetry's `LangGraph.workflow` under `outputs`,
MLflow's and Langfuse's root observation) records the state `invoke` returned: `{"messages": [...], …}`. Its last
AI text is usually the answer (`openinference.answer_text`), but two prebuilt endings are not:

- `create_react_agent(..., response_format=Schema)`: a last request (`generate_structured_response`) fills
  `structured_response`, which is what the agent declared as its output (as the Agents SDK's `output_type` and
  pydantic-ai's output tools are) — the answer, a value that is not text as JSON;
- a tool with `return_direct=True`: the graph ends right after the tool, with no request after it, and the
  state's last message is that `ToolMessage`: its content is what the graph returned (`messages[-1].content`),
  as an Agents SDK run that stopped at a tool answers with the tool's output.

`state_answer` gives that answer, or `MISSING` when the output is no such state (the usual readings apply).
OpenLLMetry (0.62) puts its graph run (`LangGraph.workflow`, the state under `outputs`) inside an
`invoke_agent LangGraph` span that records no output, and that outer span is the turn's agent: `lift_answers`
gives such a wrapper the answer of the one graph run it holds: one of those endings, or the state's last AI text,
which need not be the turn's last request's (a node after the last request that adds an `AIMessage` of its own,
a signature, a canned reply: the graph returned that message).
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, present, unjson

__all__ = ["lift_answers", "state_answer", "value_text"]

# Where conventions record a chain's or agent's output (OpenInference, OpenLLMetry, MLflow, Langfuse).
_OUTPUT_KEYS = ("output.value", "traceloop.entity.output", "mlflow.spanOutputs", "langfuse.observation.output")
_ROLES = ("agent", "chain")


def state_answer(decoded: Any) -> Any:
    """The answer a graph's final state gives (text, or `None`), else `MISSING` (module docstring).

    `decoded`: an output already decoded from JSON. Only a mapping holding a `messages` list counts (a graph's
    state); a `structured_response` that is `None` or absent is none, and a state whose last message is no
    tool message is left to the other readings.
    """
    if not isinstance(decoded, dict) or not isinstance(decoded.get("messages"), list):
        return MISSING
    structured = unjson(decoded.get("structured_response"))
    if structured is not None and present(structured):
        return value_text(structured)
    msgs = normalise(decoded["messages"]) or []
    last = msgs[-1] if msgs else None
    if last is None or last.get("role") != "tool":
        return MISSING
    said = [value_text(p.get("response")) for p in last.get("parts") or [] if p.get("type") == "tool_call_response"]
    texts = [t for t in said if t]
    return "\n".join(texts) if texts else None


def value_text(value: Any) -> str | None:
    """A returned value as text: text as it is, anything else as JSON (`str()` for what JSON cannot hold)."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _recorded_state(span: Span) -> bool:
    """Whether `span` recorded a graph's final state (a mapping holding a `messages` list; OpenLLMetry's under `outputs`)."""
    for key in _OUTPUT_KEYS:
        raw = span.attrs.get(key)
        if not isinstance(raw, str) or '"messages"' not in raw:
            continue  # (the cheap test first: most spans hold no graph state)
        decoded = unjson(raw)
        if key == "traceloop.entity.output" and isinstance(decoded, dict) and isinstance(decoded.get("outputs"), dict):
            decoded = decoded["outputs"]
        if isinstance(decoded, dict) and isinstance(decoded.get("messages"), list):
            return True
    return False


def lift_answers(spans: list[Span], views: dict[str, View]) -> None:
    """Give an agent span that recorded no answer the state answer of the one run it wraps (module docstring).

    Only a parent whose only child with a role is that run, and only up through such parents: an agent
    span around several runs, or around anything else, keeps what it recorded.
    """
    index = {s.span_id: s for s in spans}
    children: dict[str, list[Span]] = {}
    for s in spans:
        if s.parent_id in index and views[s.span_id].role is not None:
            children.setdefault(s.parent_id, []).append(s)
    for span in spans:
        v = views[span.span_id]
        if v.role not in _ROLES or not v.answer:
            continue
        if not _recorded_state(span):
            continue  # (not a graph's run)
        node, hops = span, 0
        while node.parent_id in index and hops < 10_000:  # (a loop of parents in a hostile trace ends here too)
            parent, hops = index[node.parent_id], hops + 1
            pv = views[parent.span_id]
            if pv.role != "agent" or pv.answer or len(children.get(parent.span_id, [])) != 1:
                break
            pv.answer = v.answer
            node = parent
