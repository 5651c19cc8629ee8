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

A graph invoked with a state that holds no message and no text (`{"cities": ["Paris", "Tokyo"], "reports": []}`) gives
no request text, so the turn took the first model request's question, and a node's input (a `Send`'s `{"city":
"Paris"}`) could pass for the request of a run of its own. `graph_requests` gives the graph's run span (the span over
its node spans, which every one of those instrumentations marks with `langgraph_node`) that input as its request, as
JSON text: what the graph was asked. The run's nodes, those a `Send` runs at once among them, are then its steps, not
runs side by side (`concurrent`). An agent span that wraps the run alone (OpenLLMetry's `invoke_agent LangGraph`), or a
plain span that does (an application's span around the invoke), gets it too. A resumed run (its input a
`Command(resume=…)`) is left to `pauses`.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, present, unjson

__all__ = ["graph_requests", "lift_answers", "node_name", "state_answer", "value_text"]

# Where conventions record a chain's or agent's output (OpenInference, OpenLLMetry, MLflow, Langfuse).
_OUTPUT_KEYS = ("output.value", "traceloop.entity.output", "mlflow.spanOutputs", "langfuse.observation.output")
_ROLES = ("agent", "chain")
# Where they record a chain's input (OpenLLMetry's under `inputs`), and how they mark a LangGraph node's span: the
# `langgraph_node` of its metadata (OpenInference's and MLflow's `metadata` JSON, OpenLLMetry's association properties,
# Langfuse's observation metadata, which format `langfuse` keeps under the same key).
_INPUT_KEYS = ("input.value", "traceloop.entity.input", "mlflow.spanInputs", "langfuse.observation.input")
_NODE_KEYS = ("traceloop.association.properties.langgraph_node", "langfuse.observation.metadata.langgraph_node")


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


def graph_requests(spans: list[Span], views: dict[str, View]) -> None:
    """Give a LangGraph run span that read no request the state it was invoked with, as JSON text (module docstring).

    A graph's run span: a chain or agent span, no node itself, with a node span right under it. Only when it read no
    request (text, a message list, a mapping's strings: those keep their reading), its input is a mapping, and it is
    no resume. An agent span above it whose only child with a role it is, and that read no request, gets it too, and
    so does a span of no role around it alone (a harness's span over one run: the turn's anchor when no agent is).
    """
    index = {s.span_id: s for s in spans}
    parents = {s.parent_id for s in spans if s.parent_id in index and _node(s)}
    if not parents:
        return
    children: dict[str, int] = {}
    for s in spans:
        if s.parent_id in index and views[s.span_id].role is not None:
            children[s.parent_id] = children.get(s.parent_id, 0) + 1  # type: ignore[index]
    for sid in parents:
        span, v = index[sid], views[sid]  # type: ignore[index]
        if v.role not in _ROLES or present(v.request) or v.resume is not MISSING or _node(span):
            continue
        invoked = _invoked(span)
        if not isinstance(invoked, dict) or not invoked:
            continue
        v.request = json.dumps(invoked, ensure_ascii=False, default=str)
        node, hops = span, 0
        while node.parent_id in index and hops < 10_000:  # (a loop of parents in a hostile trace ends here too)
            parent, hops = index[node.parent_id], hops + 1
            pv = views[parent.span_id]
            if pv.role not in ("agent", None) or present(pv.request) or children.get(parent.span_id, 0) != 1:
                break
            pv.request = v.request
            node = parent


def _node(span: Span) -> bool:
    """Whether `span` is a LangGraph node's (its metadata names `langgraph_node`; module docstring)."""
    a = span.attrs
    if any(key in a for key in _NODE_KEYS):
        return True
    meta = a.get("metadata")
    if isinstance(meta, str) and '"langgraph_node"' in meta:  # (the cheap test first)
        meta = unjson(meta)
    return isinstance(meta, dict) and "langgraph_node" in meta


def node_name(span: Span) -> str | None:
    """The LangGraph node `span` ran in (its metadata's `langgraph_node`, wherever its convention keeps it), else `None`.

    Every span a node's run makes carries it, the node's own span and the runnables and tools inside it alike (and a
    graph invoked inside a node, which inherits its caller's metadata): Langfuse's SDK sends it as JSON text (`"\"agent\""`).
    """
    a = span.attrs
    for key in _NODE_KEYS:
        if key in a:
            value = unjson(a[key])
            return value if isinstance(value, str) else None
    meta = a.get("metadata")
    if isinstance(meta, str) and '"langgraph_node"' in meta:  # (the cheap test first)
        meta = unjson(meta)
    value = meta.get("langgraph_node") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def _invoked(span: Span) -> Any:
    """The input `span` recorded, decoded (OpenLLMetry's from LangChain's callback payload around it), else `None`."""
    for key in _INPUT_KEYS:
        raw = unjson(span.attrs.get(key))
        if key == "traceloop.entity.input" and isinstance(raw, dict) and "inputs" in raw:
            raw = raw["inputs"]
        if raw is not None:
            return raw
    return None
