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
  Such a tool span records the Command as its output (`read_handoffs`): one carrying the handoff's reply reads as that
  reply (`payloads.command_message`); the "task description" form of LangGraph's multi-agent docs,
  `Command(goto=[Send(agent, input)], graph=Command.PARENT)`, answers the call with no message (the model that asked
  gets nothing back; `agent` starts from `input`), so its result is where it sent what: each `Send` as `{"node",
  "arg"}` (as Langfuse records it; the others write its `repr`, read as Python literals: nothing is run), one alone
  as itself, not the Command around it. The other calls of the reply that asked for a handoff ran, but LangGraph
  goes on in the parent graph with only what the Command carries: their `ToolMessage`s reach no model. Such a call
  keeps its result and fails with an error saying so (the judge must not take a later answer as built on it), unless
  a later request or the Command itself holds a reply to it.
  A Command with neither a reply nor `update`, `Command(goto=agent, graph=Command.PARENT)`, answers the call with no
  message either: its result is where it went, `{"node": agent}` (a list of them for several), not the Command.
  Several handoffs in one reply: create_react_agent runs each call as a task of its own, and LangGraph takes the
  first `ParentCommand` to reach the parent graph (not always the first asked for) and drops the others (ToolNode run
  once for all the calls joins their `Send`s instead). A handoff none of whose destinations a node span of the graph
  started after it (with the `Send`'s input, when the span recorded one), when another handoff of the same reply's did,
  keeps its result and fails with an error saying it was dropped.
- a resume: a span whose input is a `Command` that carries a `resume` (its fields `graph`, `update`, `resume`,
  `goto`, as every one of those instrumentations serialises it; OpenLLMetry's under `inputs`). `View.resume`
  gets the value as recorded.

`assemble` turns them into the conversation (see `otel.pauses`).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.conventions.graph_state import graph_requests, lift_answers
from tracejudge.stages.extract.otel.conventions.langgraph_steps import read_out_of_steps
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, unjson

__all__ = ["read_handoffs", "read_pauses"]

_INTERRUPT_TYPES = ("GraphInterrupt", "NodeInterrupt")  # (`NodeInterrupt`: the deprecated one a node raised itself, a `GraphInterrupt`)
_COMMAND_FIELDS = frozenset({"graph", "update", "resume", "goto"})
_HANDOFF = "ParentCommand"  # (LangGraph's control flow for a `Command` to the parent graph, not an error)
# The keys each instrumentation records a chain's input under (MLflow's `mlflow.spanInputs`, Langfuse's observation input).
_INPUT_KEYS = ("input.value", "traceloop.entity.input", "langfuse.observation.input", "mlflow.spanInputs")
_MAX_TEXT = 1_000_000  # longer text is not parsed: it is no exception message LangGraph wrote


def read_pauses(spans: list[Span], views: dict[str, View]) -> None:
    """Fill `interrupts` and `resume` of the views of `spans` (see the module docstring).

    Also gives an agent span wrapping a graph run the answer the run's final state holds (`graph_state.lift_answers`:
    the group pass for LangGraph runs is this one), reads handoffs' results and the calls they lost (`read_handoffs`), and
    the calls of a reply an agent out of steps dropped (`langgraph_steps`), and gives a graph run invoked with a state
    that holds no text that state as its request (`graph_state.graph_requests`).
    """
    lift_answers(spans, views)
    read_handoffs(spans, views)
    read_out_of_steps(spans, views)  # (the calls of a reply `create_react_agent` dropped when out of steps: not run)
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
    graph_requests(spans, views)  # (after the resumes: a resumed run's input is no request)


_PARENT = "__parent__"  # `Command.PARENT`, as every instrumentation writes it
_SEND_FIELDS = frozenset({"node", "arg", "timeout"})  # LangGraph's `Send` (its `repr` leaves out a `timeout` of None)
_TOOL_OUTPUTS = ("output.value", "traceloop.entity.output", "mlflow.spanOutputs", "langfuse.observation.output")
_LOST = ("ran, but its result reached no model: {name}, a handoff asked for in the same reply, went on to {to} with only what "
         "its Command carried (LangGraph keeps no other call's reply)")


def read_handoffs(spans: list[Span], views: dict[str, View]) -> None:
    """A handoff's result when it is `Send`s, and the calls its reply lost (module docstring). In place."""
    handoffs = [(s, c) for s in spans if views[s.span_id].role == "tool" and (c := _parent_command(s)) is not None]
    for span, command in handoffs:
        v = views[span.span_id]
        if not (isinstance(v.result, dict) and "goto" in v.result and set(v.result) <= _COMMAND_FIELDS):
            continue  # (a message answered the call: its reply is the result)
        # No message answered the call: where it went, with what (`Send`s), or where alone (a Command carrying nothing:
        # the serialised Command, `update` and `resume` None, says no more than that)
        to = _sends(command.get("goto")) or (_nodes(command.get("goto")) if command.get("update") is None else [])
        if to:
            v.result = to[0] if len(to) == 1 else to
    if handoffs:
        _lost_replies(spans, views, handoffs)
        _undelivered(spans, views, handoffs)


def _nodes(goto: Any) -> list[dict[str, Any]]:
    """A Command's `goto` of node names (one, or a list) as `{"node"}` each; `[]` unless all are names."""
    names = [goto] if isinstance(goto, str) else goto if isinstance(goto, list) else []
    return [{"node": n} for n in names] if names and all(isinstance(n, str) and n for n in names) else []


def _destinations(command: dict[str, Any]) -> list[dict[str, Any]]:
    """Where a handoff's Command goes in the parent graph: its `Send`s, else its node names, as `{"node"[, "arg"]}`."""
    return _sends(command.get("goto")) or _nodes(command.get("goto"))


def _went(dest: dict[str, Any], after: int, nodes: list[tuple[int, str, str | None]]) -> bool:
    """Whether a node span of `dest` started after `after` (OpenLLMetry names it `execute_task <node>`, the others
    `<node>`) with `dest`'s input: every text of a `Send`'s `arg` is in the span's recorded input (two `Send`s to one
    agent differ only there), when the span recorded one."""
    texts = [t for t in _strings(dest.get("arg")) if t]
    return any(name == dest["node"] and start > after and (raw is None or all(_quoted(t) in raw or t in raw for t in texts))
               for start, name, raw in nodes)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [t for item in items for t in _strings(item)]


def _quoted(text: str) -> str:
    return json.dumps(text)[1:-1]  # (as JSON text writes it, escapes and all)


def _input_text(span: Span) -> str | None:
    return next((raw for key in _INPUT_KEYS if isinstance(raw := span.attrs.get(key), str)), None)


_UNDELIVERED = ("ran, but its handoff was dropped: the parent graph went on with another handoff of the same reply, {name} to {to}, "
                "and takes one such Command (this one's {mine} never ran)")


def _undelivered(spans: list[Span], views: dict[str, View], handoffs: list[tuple[Span, dict[str, Any]]]) -> None:
    """Fail the handoffs of one model reply that LangGraph dropped for another (module docstring)."""
    models = sorted(((s, views[s.span_id]) for s in spans if views[s.span_id].role == "model"), key=lambda m: m[0].start)
    by_reply: dict[str, list[tuple[Span, dict[str, Any]]]] = {}
    for span, command in handoffs:
        asking = _asking_model(span, views[span.span_id], models)
        if asking is not None:
            by_reply.setdefault(asking.span_id, []).append((span, command))
    nodes = [(s.start, s.name.removeprefix("execute_task "), _input_text(s)) for s in spans if views[s.span_id].role not in ("model", "tool")]
    for group in by_reply.values():
        if len(group) < 2:
            continue
        # (the parent graph went where a node span of a destination started after the handoff, with its input)
        went = [(span, command, any(_went(d, span.start, nodes) for d in _destinations(command))) for span, command in group]
        delivered = [(span, command) for span, command, ok in went if ok]
        if not delivered or len(delivered) == len(went):
            continue  # (nothing tells which went on, or all did)
        name = views[delivered[0][0].span_id].tool_name
        to = " and ".join(repr(d["node"]) for d in _destinations(delivered[0][1]))
        for span, command, ok in went:
            v = views[span.span_id]
            if not ok and v.error is None:
                mine = " and ".join(("Send to " if "arg" in d else "goto ") + repr(d["node"]) for d in _destinations(command))
                v.error = _UNDELIVERED.format(name=name, to=to, mine=mine)


def _parent_command(span: Span) -> dict[str, Any] | None:
    """The `Command(graph=Command.PARENT)` a tool span recorded as its output (OpenLLMetry's in its `{"output", "kwargs"}`), else None."""
    for key in _TOOL_OUTPUTS:
        raw = span.attrs.get(key)
        if not isinstance(raw, str) or _PARENT not in raw:
            continue  # (the cheap test first: most tools hand nothing off)
        value = unjson(raw)
        if isinstance(value, dict) and "output" in value and set(value) <= {"output", "kwargs", "tags", "metadata"}:
            value = unjson(value["output"])
        if isinstance(value, dict) and "goto" in value and set(value) <= _COMMAND_FIELDS and value.get("graph") == _PARENT:
            return value
    return None


def _sends(goto: Any) -> list[dict[str, Any]]:
    """The `Send`s of a Command's `goto` as `{"node", "arg"}` (Langfuse's mapping, or the `repr` the others write); `[]` unless all are."""
    out = []
    for item in goto if isinstance(goto, list) else []:
        send = item if isinstance(item, dict) and {"node", "arg"} <= set(item) <= _SEND_FIELDS else _send_repr(item)
        if send is None or not isinstance(send["node"], str):
            return []
        out.append({"node": send["node"], "arg": unjson(send["arg"])} | ({"timeout": send["timeout"]} if send.get("timeout") is not None else {}))
    return out


def _send_repr(text: Any) -> dict[str, Any] | None:
    """`Send(node='weather', arg={…})` as `{"node", "arg"}`: literals read as such (nothing is run), an `arg` that is none kept as its text."""
    if not isinstance(text, str) or not text.startswith("Send(") or len(text) > _MAX_TEXT:
        return None
    try:
        call = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "Send" and len(call.args) <= 2):
        return None
    fields = dict(zip(("node", "arg"), call.args)) | {k.arg: k.value for k in call.keywords if k.arg in _SEND_FIELDS}
    if not {"node", "arg"} <= set(fields):
        return None
    read = {k: python_literal(node, MISSING) for k, node in fields.items()}
    return {"node": read["node"]} | {k: ast.get_source_segment(text, fields[k]) if read[k] is MISSING else read[k] for k in fields if k != "node"}


def _lost_replies(spans: list[Span], views: dict[str, View], handoffs: list[tuple[Span, dict[str, Any]]]) -> None:
    """Fail the calls whose reply a handoff of the same model reply lost (module docstring)."""
    models = sorted(((s, views[s.span_id]) for s in spans if views[s.span_id].role == "model"), key=lambda m: m[0].start)
    answered = {str(p["id"]) for _, mv in models for m in mv.inputs or [] for p in m.get("parts") or []
                if p.get("type") == "tool_call_response" and p.get("id") is not None}
    names = {views[s.span_id].tool_name for s, _ in handoffs}
    tools: dict[str, list[View]] = {}
    for s in spans:
        tv = views[s.span_id]
        if tv.role == "tool" and tv.call_id is not None and tv.tool_name not in names:
            tools.setdefault(tv.call_id, []).append(tv)
    for span, command in handoffs:
        hv = views[span.span_id]
        calls = _asking_reply(span, hv, models)
        if not calls:
            continue
        carried = json.dumps(command, default=str)
        sends = _sends(command.get("goto"))
        goto = command.get("goto")
        to = " and ".join(repr(s["node"]) for s in sends) if sends else repr(goto) if isinstance(goto, str) else "the parent graph"
        for part in calls:
            cid = str(part.get("id"))
            if part.get("id") is None or part.get("name") in names or cid in answered or re.search(r"tool_call_id\W{1,8}" + re.escape(cid) + r"(?!\w)", carried):
                continue  # (no id to tell its tool span by, a handoff itself, or a call whose reply some request or the Command holds)
            for tv in tools.get(cid, []):
                if tv.error is None and tv.result is not MISSING:
                    tv.error = _LOST.format(name=hv.tool_name, to=to)


def _asking_reply(span: Span, view: View, models: list[tuple[Span, View]]) -> list[dict[str, Any]]:
    """The tool-call parts of the model reply that asked for the handoff `span` ran (`_asking_model`); `[]` when none does."""
    asking = _asking_model(span, view, models)
    return next((_calls(mv) for ms, mv in models if ms is asking), [])


def _asking_model(span: Span, view: View, models: list[tuple[Span, View]]) -> Span | None:
    """The model span whose reply asked for the call `span` ran: the last request before it whose output holds its
    call (by id, else by its tool's name); None when none does."""
    for ms, mv in reversed(models):
        if ms.start > span.start:
            continue
        if any((str(p.get("id")) == view.call_id) if view.call_id is not None else p.get("name") == view.tool_name for p in _calls(mv)):
            return ms
    return None


def _calls(view: View) -> list[dict[str, Any]]:
    return [p for m in view.outputs or [] for p in m.get("parts") or [] if p.get("type") == "tool_call"]


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
