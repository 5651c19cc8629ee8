"""OpenLLMetry's OpenAI Agents SDK instrumentation (`opentelemetry-instrumentation-openai-agents`): what its shapes hide.

The instrumentation is a trace processor of the SDK (scope `opentelemetry.instrumentation.openai_agents`). Per
SDK trace it writes an `Agent Workflow` span (`traceloop.span.kind` `workflow`), and under it `<agent>.agent`
spans (`agent`), `<tool>.tool` spans (`tool`, `gen_ai.operation.name` `execute_tool`), handoff spans and
`openai.response` model requests; the conventions already read those (`traceloop`, `genai`). Three things
they cannot see (0.62.4):

- It parents every agent span on the trace's workflow span, never on the span running when the agent started. An
  agent run started inside a function tool (`Runner.run(sub_agent, …)` in the tool's body, as the SDK's `as_tool`
  does) shares the caller's trace, so its agent span lands under the workflow beside the calling agent, though its
  requests and tools ran inside that tool's call: read by parent ids it was a second user turn, its prompt a user
  message and its answer the case's output. Its time tells where it ran: an agent span of this instrumentation
  under the workflow span whose start and end lie within one of its tool spans of the same trace ran inside that
  call (`Hosts`). Nothing else in the recording says so, so the rule applies to this instrumentation's spans only:
  elsewhere, runs side by side under one span overlap in time too (`concurrent`).
- A failed span's status message is the SDK's error object as Python text, `{'message': 'Error running tool
  (non-fatal)', 'data': {'tool_name': …, 'error': …}}` on a tool's, `{'message': 'Error in agent run', 'data':
  {'error': …}}` on an agent run's: read as `"<message>: <data.error>"`, as the SDK's own export is
  (`mend_span_errors`, `openai_agents.error_text`; the tool name is the call's).
- It reads a request's output and token usage off a Responses API response only: a Chat Completions model's
  request (the SDK's `generation` span) is recorded with its input alone, and a tool that returned one of the SDK's
  structured outputs (its pydantic models) gets no span. The next request's input replays the reply all the same:
  `openllmetry_replays` reads a request's calls (ids, names, arguments; their results are the tool messages after
  them) and its text beside them off it. The run's final answer, which no request replays, and the usage stay
  unknown; `warn_unrecorded` says so once per file rather than read nothing silently. A call the replay does not show
  comes from its tool span; a handoff call from the handoff span (`handoff_results`, below).

A handoff is a `<from> → <to>.handoff` span (`traceloop.span.kind` `handoff`) under the agent that made it; the
model's `transfer_to_<agent>` call is in its request's output, and the SDK's reply to it (`{"assistant": "<agent>"}`)
in the next agent's first request's input, unless the handoff's `input_filter` removed it
(`handoff_filters.remove_all_tools`): then no span holds it, though the handoff ran. `handoff_results` gives such a
call that reply, as `agents_sdk.stop_answers` does under OpenInference. The instrumentation names the span when the
SDK starts it, before the SDK knows the target (`to_agent` is set later): it is `<from> → unknown.handoff`, with
no `gen_ai.handoff.to_agent`. The target is then the agent whose run this instrumentation recorded next in that
trace (the SDK starts it right after the handoff), the first of them whose default tool name the request called.
A request recorded without output (Chat Completions) has the call, with its id and arguments, from the next agent's
first request's replay when no filter removed it (`openllmetry_replays`); when one did, `handoff_results` gives it
one, the default tool name of that agent with no id and no arguments (as format `openai-agents` reads a request its
export kept without text, `openai_agents.handoff_calls`), and the SDK's reply as its result.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.conventions.agents_sdk import give_handoff_results
from tracejudge.stages.extract.otel.conventions.openai_agents import asking_request, error_text, handoff_tool_name
from tracejudge.stages.extract.otel.conventions.openai_agents import handoff_results as agents_handoff_results
from tracejudge.stages.extract.otel.conventions.openllmetry_replays import FROM_REPLAY, replayed_replies
from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation
from tracejudge.stages.extract.otel.conventions.traceloop import NAME as TRACELOOP
from tracejudge.stages.extract.otel.reused_ids import agrees
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.view import MISSING, View, tool_call_part, unjson
from tracejudge.stages.extract.said_once import first_time

__all__ = ["SCOPE", "Hosts", "calls_of", "handoff_results", "mend_errors", "own", "read_group", "warn_unrecorded", "within"]

log = get_logger("tracejudge.extract.otel")
SCOPE = "opentelemetry.instrumentation.openai_agents"
_OPS = {"agent": "invoke_agent", "tool": "execute_tool"}
_FROM_SPAN = "openllmetry_agents.from_handoff_span"  # on a handoff call part read off the handoff span, not the request


def own(span: Span, kind: str) -> bool:
    """Whether `span` is this instrumentation's span of `traceloop.span.kind` `kind` (`agent` or `tool`).

    Its scope names it; a span whose scope was not kept (an export that drops it) is its when it has the kind, the
    operation (`invoke_agent` / `execute_tool`) and the name `<entity>.<kind>` the instrumentation writes.
    """
    a = span.attrs
    if a.get("traceloop.span.kind") != kind:
        return False
    if span.scope:
        return span.scope == SCOPE
    entity = a.get("gen_ai.agent.name" if kind == "agent" else "gen_ai.tool.name")
    return a.get("gen_ai.operation.name") == _OPS.get(kind) and isinstance(entity, str) and span.name == f"{entity}.{kind}"


def calls_of(mem: list[Span], rows: list[Any], views: dict[str, View]) -> list[tuple[Span, dict[str, Any]]]:
    """This instrumentation's tool spans among `mem` (one anchor's spans) paired with their calls in `rows` (its `turns.Row`s).

    A span pairs with a call of its name by call id, else (the instrumentation records none) with the first call
    left that has its arguments and result, else with the first left whose arguments agree with its own
    (`reused_ids.agrees`) and whose result is its result (any, when it recorded none). Each call pairs once; a span
    whose call is not among `rows` (an absorbed or answer tool) is left out.
    """
    spans = sorted((s for s in mem if own(s, "tool") and views[s.span_id].role == "tool"), key=lambda s: (s.start, s.span_id))
    if not spans:
        return []
    calls = [c for r in rows for _, c in sorted(r.calls, key=lambda e: e[0])]
    exact: dict[str, list[dict[str, Any]]] = {}  # each list last call first: the next one left is popped
    for c in reversed(calls):
        exact.setdefault(_key(c.get("name"), c.get("arguments"), c.get("result")), []).append(c)
    taken: set[int] = set()
    out = []
    for span in spans:
        v = views[span.span_id]
        call = _by_id(v, calls, taken) or _next(exact.get(_key(v.tool_name, v.args, v.result)) if v.result is not MISSING else None, taken) \
            or _alike(v, calls, taken)
        if call is not None:
            taken.add(id(call))
            out.append((span, call))
    return out


def _key(name: Any, args: Any, result: Any) -> str:
    """Name, arguments and result as one text: arguments given as JSON text decoded, keys sorted."""
    return json.dumps([name, unjson(args), result], sort_keys=True, default=repr)


def _next(stack: list[dict[str, Any]] | None, taken: set[int]) -> dict[str, Any] | None:
    """The first call of `stack` (kept last first) not taken yet, popped with those taken before it."""
    while stack and id(stack[-1]) in taken:
        stack.pop()
    return stack.pop() if stack else None


def _by_id(v: View, calls: list[dict[str, Any]], taken: set[int]) -> dict[str, Any] | None:
    if v.call_id is None:
        return None
    return next((c for c in calls if id(c) not in taken and c.get("name") == v.tool_name and c.get("id") == v.call_id), None)


def _alike(v: View, calls: list[dict[str, Any]], taken: set[int]) -> dict[str, Any] | None:
    return next((c for c in calls if id(c) not in taken and c.get("name") == v.tool_name
                 and agrees(v.args, unjson(c.get("arguments"))) is not False and (v.result is MISSING or c.get("result") == v.result)), None)


def mend_errors(pairs: list[tuple[Span, dict[str, Any]]], views: dict[str, View]) -> None:
    """Give each call of `pairs` (`calls_of`) whose error is its span's raw status text the SDK's error read out of it.

    The status message is the SDK's `{'message': …, 'data': {…}}` as Python text: it becomes `"<message>:
    <data.error>"` (`openai_agents.error_text`). Another error (an exception event's, a result's) is kept.
    """
    for span, call in pairs:
        raw = span.status_message
        if not span.status_error or not raw or call.get("error") is None or call["error"] != views[span.span_id].error:
            continue
        err = python_literal(raw)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            call["error"] = error_text(err)


def within(agent: Span, tool: Span) -> bool:
    """Whether `agent` ran inside `tool` by their times: another span of the same trace that started no later and ended no
    earlier (this instrumentation parents a run started in a tool's body on the workflow span, not on the tool's)."""
    return tool.trace_id == agent.trace_id and tool.span_id != agent.span_id and tool.start <= agent.start and agent.end <= tool.end


class Hosts:
    """The tool calls this instrumentation recorded, to find the one an agent run it left under the workflow ran inside."""

    def __init__(self, views: dict[str, View]) -> None:
        self.views = views
        self.calls: list[tuple[Span, dict[str, Any], Any]] = []  # (tool span, its call, the turn it is laid out in)

    def add(self, pairs: list[tuple[Span, dict[str, Any]]], turn: Any) -> None:
        """Keep `pairs` (`calls_of`), laid out in `turn`."""
        self.calls.extend((span, call, turn) for span, call in pairs)

    def host(self, agent: Span) -> tuple[Span, dict[str, Any], Any] | None:
        """The call `agent` (a turn's anchor) ran inside, with its tool span and turn, else `None`.

        `agent` must be this instrumentation's agent span right under a workflow span it recorded (the parent it
        gives every agent), and lie in time within one of the tool spans kept so far (of the same trace): the
        innermost such span, for a sub-agent's sub-agent. Anchors are added in start order, so the calling agent's
        calls are kept by then.
        """
        parent = self.views.get(agent.parent_id or "")
        if not own(agent, "agent") or parent is None or parent.role != "chain" or TRACELOOP not in (parent.conventions or []):
            return None
        inside = [e for e in self.calls if within(agent, e[0])]
        return max(inside, key=lambda e: (e[0].start, -e[0].end)) if inside else None


def warn_unrecorded(group: Group, views: dict[str, View]) -> None:
    """Say once per file that this instrumentation recorded model requests of `group` without output and usage.

    Such a request (a Chat Completions model's) recorded its input messages but neither output messages nor token
    counts nor an error: its reply is known only where the next request replays it (`openllmetry_replays`: its calls,
    their ids, arguments and results, and the text beside them); the last one's, the run's final output, never is.
    A request that recorded no input either is content capture turned off, which the format says on its own.
    """
    loose = _scopeless(group.spans)
    blank = [s for s in group.spans if _unrecorded(s, views[s.span_id], loose)]
    if not blank:
        return
    first = blank[0]
    if not first_time("openllmetry_agents_unrecorded", first.file):
        return
    asked = sum(1 for s in group.spans if views[s.span_id].role == "model" and _request(s, loose))
    log.warning(f"otel: {first.file}:{first.line}: conversation {group.case_id}: {len(blank)} of its {asked} model requests recorded "
                "by OpenLLMetry's openai-agents instrumentation hold their input but no output and no token usage (it reads "
                "them off a Responses API response only, so a Chat Completions model's requests lack them): a request's "
                "calls and text are read off the next request's input, which replays them, so the run has no final output "
                "(no request replays it), a request whose reply no later input replays (a handoff's input_filter removed "
                "it) has only the calls its tool and handoff spans show, without ids, and the usage is unknown (said once "
                "per file). Record with the Responses API (the SDK's default) or another instrumentation to read them")


def _unrecorded(span: Span, v: View, loose: bool = False) -> bool:
    """Whether `span` is a request of this instrumentation recorded with its input alone (a handoff call `handoff_results`
    read off the handoff span, a reply read off the next request's replay of it, is no output it recorded)."""
    kept = [p for m in v.outputs or [] for p in m.get("parts") or [] if not (isinstance(p, dict) and (p.get(_FROM_SPAN) or p.get(FROM_REPLAY)))]
    return _request(span, loose) and v.role == "model" and bool(v.inputs) and not kept and v.usage_in is None and v.usage_out is None \
        and v.error is None


def read_group(spans: list[Span], views: dict[str, View]) -> None:
    """Read what this instrumentation's spans of a group say only together: a Chat Completions request's reply its next
    request replays (`openllmetry_replays`), every span's error as the export reads it (`mend_span_errors`), then a
    handoff's call and reply (`handoff_results`). In place; running it twice changes nothing more."""
    loose = _scopeless(spans)
    replayed_replies([s for s in spans if _request(s, loose) and views[s.span_id].role == "model"], views,
                     lambda s, v: _unrecorded(s, v, loose))
    mend_span_errors(spans, views)
    handoff_results(spans, views)


def mend_span_errors(spans: list[Span], views: dict[str, View]) -> None:
    """Give each span of this instrumentation whose error is its raw status text the SDK's error read out of it.

    The instrumentation writes `str(span.error)`, the SDK's `{'message': …, 'data': {…}}` as Python text, on every span
    the SDK marked (a tool's, an agent run's "Error in agent run", a request's): read safely (`python_literal`, nothing
    evaluated) as `"<message>: <data.error>"` (`openai_agents.error_text`), as the SDK's own export reads the same run.
    An error read from anything else (an exception event, a result) is kept.
    """
    for span in spans:
        if not (span.scope == SCOPE or (not span.scope and (own(span, "agent") or own(span, "tool") or _handoff(span)))):
            continue
        v, raw = views[span.span_id], span.status_message
        if not span.status_error or not raw or v.error != raw:
            continue
        err = python_literal(raw)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            v.error = error_text(err)


def handoff_results(spans: list[Span], views: dict[str, View]) -> None:
    """Give each handoff call this instrumentation recorded in `spans` (a group) whose reply no later request's input
    holds (an `input_filter` removed it) the SDK's reply, `{"assistant": "<agent>"}`, as its result (module docstring).

    Which call, and whether a request's input answers it, is `openai_agents.handoff_results`'s rule; the reply is
    decoded, as format otel decodes the tool message that holds it when no filter removed it. A request recorded
    without output (`_unrecorded`: Chat Completions) whose next request's replay showed no such call (`read_group` reads
    that first) gets the handoff's call as its output, with that reply.
    """
    if not any(_handoff(s) for s in spans):
        return
    loose = _scopeless(spans)

    def kind(span: Span) -> str | None:
        if _handoff(span):
            return "handoff"
        if own(span, "tool"):
            return "tool"
        # (a request under the agent span the handoff is under: `openai_agents.handoff_results` looks no further)
        return "model" if span.scope in (SCOPE, None) and views[span.span_id].role == "model" else None

    def view(span: Span) -> View:
        return views[span.span_id]

    def target(h: Span) -> str | None:
        to = h.attrs.get("gen_ai.handoff.to_agent")
        if isinstance(to, str) and to and to != "unknown":
            return to
        # named before the SDK knew the target: the agent run recorded next in the trace, one the request asked for first
        after = sorted((s for s in spans if s.trace_id == h.trace_id and s.start >= h.start and own(s, "agent")
                        and isinstance(s.attrs.get("gen_ai.agent.name"), str)), key=lambda s: (s.start, s.span_id))
        model = asker(h)
        names = {p.get("name") for m in (view(model).outputs or [] if model else []) for p in m.get("parts") or [] if isinstance(p, dict)}
        named = [s for s in after if handoff_tool_name(s.attrs["gen_ai.agent.name"]) in names]
        pick = named[0] if named else after[0] if after else None
        return pick.attrs["gen_ai.agent.name"] if pick is not None else None

    def asker(h: Span) -> Span | None:
        return asking_request(spans, kind, h)

    # A Chat Completions request recorded no output and no replay showed its handoff call (a filter removed it): the
    # call is the handoff span's, its reply the SDK's.
    replies: list[tuple[Span, str, str]] = []
    for h in sorted((s for s in spans if _handoff(s)), key=lambda s: (s.start, s.span_id)):
        model, to = asker(h), target(h)
        if model is None or not to or not _unrecorded(model, view(model), loose):
            continue
        name, v = handoff_tool_name(to), view(model)
        if any(isinstance(p, dict) and p.get("name") == name for m in v.outputs or [] for p in m.get("parts") or []):
            continue  # (a second handoff span of the same request: one call)
        v.outputs = (v.outputs or []) + [{"role": "assistant", "parts": [{**tool_call_part(None, name, None), _FROM_SPAN: True}]}]
        replies.append((model, name, json.dumps({"assistant": to})))
    for model, name, output in replies + agents_handoff_results(spans, kind, view, target):
        give_handoff_results(views[model.span_id].outputs, {name: json.loads(output)})


def _request(span: Span, loose: bool) -> bool:
    """Whether `span` is this instrumentation's model request: its scope names it; without one (an export that drops it),
    a request as it writes one (`openai.response`, `gen_ai.operation.name` `chat`) in a group `loose` says is its."""
    return from_instrumentation(span, lambda sc: sc == SCOPE,
                                lambda s: loose and s.name == "openai.response" and s.attrs.get("gen_ai.operation.name") == "chat")


def _scopeless(spans: list[Span]) -> bool:
    """Whether `spans` (a group) hold this instrumentation's agent spans without a scope (`own`: as it writes them)."""
    return any(not s.scope and own(s, "agent") for s in spans)


def _handoff(span: Span) -> bool:
    """Whether `span` is this instrumentation's handoff span (a scope that was not kept: its kind, operation and name)."""
    a = span.attrs
    if a.get("traceloop.span.kind") != "handoff":
        return False
    if span.scope:
        return span.scope == SCOPE
    return a.get("gen_ai.operation.name") == "handoff" and span.name.endswith(".handoff")
