"""The OpenAI Agents SDK's shapes that every reader of its spans shares, and its reading under OpenInference as a whole group.

Shared (format `openai-agents` and OpenInference's `OpenAIAgentsInstrumentor` alike): `response_calls` reads the
Responses API response a streamed run records as the model's answer, the calls' ids from their `call_id` (the
items' own id is the SDK's placeholder `__fake_id__`); `mark_not_run` marks the model's calls of a tool the agent
does not have.

Under OpenInference, `stop_answers` runs on a whole group (the spans of one trace need each other):

- a span the SDK marked failed has as its status `"<message>: <data>"`, the error's data as a Python repr
  (`Error running tool (non-fatal): {'tool_name': …, 'error': …}`, `Error in agent run: {'error': …}`, `Max turns
  exceeded: None`): `oi_errors` reads it (safely, `ast`: nothing is evaluated) as the SDK's own export is read
  (`openai_agents.error_text`: `"<message>: <data.error>"`, other data as JSON, none left out), so the same run reads
  the same error whichever convention recorded it;

- a run that ended at a tool call (`tool_use_behavior="stop_on_first_tool"`, `StopAtTools`) has no span holding
  its `final_output` (the instrumentation writes no output on AGENT spans): the root AGENT span gets that tool's
  output as its answer (the rules, and what the trace cannot tell, are `openai_agents.stopped_runs`'s); a streamed
  run cancelled after its tools ran (`cancel(mode="after_turn")`) is recorded alike, which a warning says
  (`agents_cancel.warn_cancel_lookalike`);
- a run that ended in an error its `turn` span (a CHAIN named `turn`) holds — a tool the agent does not have,
  a tripped input guardrail — records no error on its AGENT span: that agent's view gets the turn's error (the
  run's, `metadata.run_error`; rules in `openai_agents.run_errors`), and the model's call of a tool that does
  not exist is marked as not run (`openai_agents.missing_tools`);
- a run cut short before calls its last request asked for ran (`cancel()`, a cancelled task; the SDK records no
  error) has those calls marked as not run and that agent's view gets why as its error, so the run has no final
  output (`agents_cancel.unrun_calls`);
- a run paused for a human's approval (a `needs_approval` tool, an MCP server's `require_approval`; the SDK records no
  pause) has the calls awaiting it failed as not run and that agent's view gets why as its error, so the run has no
  final output (`agents_approval.paused_runs`);
- a handoff whose `input_filter` removed the transfer from the next agent's input (`remove_all_tools`) has its
  `transfer_to_<agent>` call's result, which no request's input holds, from its `handoff to <agent>` span: the SDK's
  transfer message `{"assistant": "<agent>"}` (`openai_agents.handoff_results`);
- a handoff the SDK ignored (a second one in a reply) or that failed (its `handoff` span names no agent) has its call
  failed as not run or with the handoff's error, and a run that ended in it its error (`agents_handoffs`).

`unanswered_usage` runs on the case a group of the SDK's spans (OpenInference's or OpenLLMetry's instrumentation)
assembles: a run that failed before any model request was answered (a tripped input guardrail; one at the first
request's provider error reads so already) has unknown token counts, not 0 and 0, as the SDK's own export reads the
same run (an input guardrail runs beside the first request by default: a request the tripwire cut short recorded
nothing, yet may have been sent).

No import of the other conventions at load time: `openai_agents` imports `langfuse`, which imports `openinference`,
which imports this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.conventions.agents_approval import AWAITING, paused_runs, warn_pause_lookalike
from tracejudge.stages.extract.otel.conventions.agents_cancel import unrun_calls, warn_cancel_lookalike
from tracejudge.stages.extract.otel.conventions.agents_handoffs import missed_handoffs
from tracejudge.stages.extract.otel.conventions.agents_tripped import UNFINISHED as TRIPPED_UNFINISHED, tripped_calls
from tracejudge.stages.extract.otel.conventions.scopeless import agents_sdk_group, agents_sdk_span, from_instrumentation
from tracejudge.stages.extract.otel.messages import response_output
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["FAKE_ID", "give_handoff_results", "handoff_span", "handoff_target", "mark_not_run", "oi_errors", "repr_error", "response_calls",
           "stop_answers", "unanswered_usage"]

FAKE_ID = "__fake_id__"  # the SDK's placeholder item id (`agents.models.fake_id.FAKE_RESPONSES_ID`): no call's id


def response_calls(body: Any) -> list[dict[str, Any]] | None:
    """`response_output(body)` with each function call's id its `call_id` (what the tool's output answers), not its item id.

    The Agents SDK writes a streamed answer's items with the placeholder id `__fake_id__`, the same for every call;
    the real id is the item's `call_id`. An item without `call_id` keeps its id, except the placeholder, which is no
    id (`None`: pairing then goes by name and arguments). `None` when `body` is no Responses API response.
    """
    msgs = response_output(body)
    if msgs is None:
        return None
    bodies = body if isinstance(body, list) else [body]
    items = [i for b in bodies for i in b.get("output") or [] if isinstance(i, dict) and i.get("type") == "function_call"]
    parts = [p for m in msgs for p in m.get("parts") or [] if p.get("type") == "tool_call" and not p.get("server")]  # (a hosted call keeps its item id)
    if len(items) != len(parts):  # not one part per call item: ids cannot be matched up, leave them
        return msgs
    for item, part in zip(items, parts):
        cid = item.get("call_id")
        if isinstance(cid, (str, int)) and not isinstance(cid, bool) and str(cid) and str(cid) != FAKE_ID:
            part["id"] = str(cid)
        elif part.get("id") == FAKE_ID:
            part["id"] = None
    return msgs


def mark_not_run(outputs: list[dict[str, Any]] | None, missing: Any) -> None:
    """Mark the tool-call parts of `outputs` naming a tool of `missing` (`{name: why}`) as not run: `part["not_run"]`.

    A part already marked keeps its reason; anything but a mapping marks nothing.
    """
    if not isinstance(missing, dict) or not outputs:
        return
    for m in outputs:
        for p in m.get("parts") or []:
            if p.get("type") == "tool_call" and isinstance(missing.get(p.get("name")), str) and "not_run" not in p and not p.get("server"):
                p["not_run"] = missing[p["name"]]


def give_handoff_results(outputs: list[dict[str, Any]] | None, results: Any) -> None:
    """Give the handoff calls of `outputs` named in `results` (`{tool name: output}`, `openai_agents.handoff_results`)
    that output as the result the framework made for them (`part["framework_result"]`), where no request's input shows it.

    A part that has one keeps it; anything but a mapping gives nothing.
    """
    if not isinstance(results, dict) or not outputs:
        return
    for m in outputs:
        for p in m.get("parts") or []:
            if p.get("type") == "tool_call" and results.get(p.get("name")) is not None and not p.get("server"):
                p.setdefault("framework_result", results[p["name"]])


_AGENTS_SCOPE = "openinference.instrumentation.openai_agents"


def stop_answers(spans: list[Span], views: dict[str, View]) -> None:
    """Read an OpenAI Agents SDK group as a whole: a run's error its turn holds, a stop at a tool (module docstring).

    Needs the whole group (like `langfuse.promote_tool_spans`). A failed turn that ended its run gives its error to
    the agent it ran under (one that recorded its own keeps it), and marks the model's calls of a tool that does not
    exist; a run cut short before its last request's calls ran is marked so (`agents_cancel.unrun_calls`), a run paused for
    approval too (`agents_approval.paused_runs`); all before
    the stops, as a failed run stopped at no tool. A stop read may be a cancelled run: warned once per file. A stop's
    answer goes on the outermost AGENT span above the stopped agent (the root `Agent workflow`, the turn's anchor),
    and only when no model request under it started after that tool (a later run of the same trace,
    `trace("Conversation")`, answered in text).
    Only spans of the Agents instrumentation count; an anchor that recorded an answer keeps it. Views are changed
    in place and only filled, so running it twice on a group changes nothing more.
    """
    ours = _ours(spans)

    def kind(span: Span) -> str | None:
        if not ours(span):
            return None
        if handoff_span(span):
            return "handoff"
        role = views[span.span_id].role
        return "turn" if role == "chain" and span.name == "turn" else role  # the SDK's turn span, a CHAIN named so

    if not any(ours(s) for s in spans):
        return
    # here: `openai_agents` imports langfuse, which imports openinference, which imports this module
    from tracejudge.stages.extract.otel.conventions.openai_agents import handoff_results, missing_tools, run_errors, stopped_runs

    def view(span: Span) -> View:
        return views[span.span_id]

    oi_errors(spans, views)  # first: the errors below are read as the export's

    for agent, error in run_errors(spans, kind, view):
        views[agent.span_id].error = error
    for model, name, why in missing_tools(spans, kind, view):
        mark_not_run(views[model.span_id].outputs, {name: why})
    for model, name, output in handoff_results(spans, kind, view, handoff_target):  # a transfer an `input_filter` removed
        # decoded, as format otel decodes the tool message that holds it when no filter removed it
        give_handoff_results(views[model.span_id].outputs, {name: json.loads(output)})
    for missed in missed_handoffs(spans, kind, view, handoff_target, _status_error):  # an ignored or failed handoff: not run
        mark_not_run(views[missed.model.span_id].outputs, missed.unrun)
        if missed.run_error and missed.agent is not None:
            views[missed.agent.span_id].error = missed.run_error  # the run raised; only the handoff span says why
    for tripped in tripped_calls(spans, kind, view):  # an input guardrail cancelled the turn: its calls did not run or finish
        mark_not_run(views[tripped.model.span_id].outputs, tripped.unrun)
        for tool in tripped.unfinished:
            views[tool.span_id].error = TRIPPED_UNFINISHED
    for cut in unrun_calls(spans, kind, view):  # before the stops too: a run cut short stopped at no tool
        mark_not_run(views[cut.model.span_id].outputs, cut.unrun)
        for tool in cut.unfinished:
            views[tool.span_id].error = cut.unfinished_why
        views[cut.agent.span_id].error = cut.error
    for pause in paused_runs(spans, kind, view):  # before the stops too: a run paused for approval stopped at no tool
        warn_pause_lookalike(pause, f"otel: {pause.agent.file}:{pause.agent.line}: trace {pause.agent.trace_id}")
        for tool in pause.pending:
            views[tool.span_id].error = AWAITING
        views[pause.agent.span_id].error = pause.error
    index = {s.span_id: s for s in spans}
    for agent, tool, text, model in stopped_runs(spans, kind, view):
        warn_cancel_lookalike(agent, tool, text, model, f"otel: {agent.file}:{agent.line}: trace {agent.trace_id}")
        anchor, node, passed = agent, agent, {agent.span_id}
        while node.parent_id in index and node.parent_id not in passed and kind(node) != "tool":  # (a loop of parents ends)
            node = index[node.parent_id]  # type: ignore[index]
            passed.add(node.span_id)
            if kind(node) == "agent":
                anchor = node
        later = [s for s in spans if kind(s) == "model" and s.start > tool.start and _under(s, anchor, index)]
        if not later and not views[anchor.span_id].answer:
            views[anchor.span_id].answer = text


def oi_errors(spans: list[Span], views: dict[str, View]) -> None:
    """Give each span of OpenInference's Agents SDK instrumentation whose error is its raw status text (`"<message>:
    <data repr>"`) the error the SDK's export reads for it (`repr_error`; module docstring). Another error is kept."""
    ours = _ours(spans)
    for span in spans:
        v = views[span.span_id]
        if not ours(span) or not span.status_error or not span.status_message or v.error != span.status_message:
            continue
        v.error = repr_error(span.status_message) or v.error


def unanswered_usage(built: dict[str, Any], spans: list[Span]) -> None:
    """`built` (the case mapping of `spans`) with unknown token counts when it is an Agents SDK run (OpenInference's or
    OpenLLMetry's spans) with no model request: nothing was answered, and the export reads the same run so (module
    docstring). In place."""
    usage = built.get("trace", {}).get("usage")
    if not isinstance(usage, dict) or usage.get("requests") != 0:
        return
    # here: openllmetry_agents imports this module
    from tracejudge.stages.extract.otel.conventions.openllmetry_agents import own

    ours = _ours(spans)
    if any(ours(s) or own(s, "agent") for s in spans):
        usage["input_tokens"] = usage["output_tokens"] = None


def _ours(spans: list[Span]) -> Callable[[Span], bool]:
    """A test of whether a span of `spans` (a group) is OpenInference's Agents SDK instrumentation's: its scope, else (a
    format that keeps none) what the instrumentation writes, in a group that holds its own spans (`scopeless`)."""
    loose = agents_sdk_group(spans)
    return lambda span: from_instrumentation(span, _AGENTS_SCOPE, lambda s: loose and agents_sdk_span(s))


_SPLIT = re.compile(r": (?=[{N])")  # where the data's repr may start: a mapping, or None


def repr_error(text: str) -> str | None:
    """The SDK's error written as `f"{message}: {data}"` (OpenInference's status: the data a Python repr) as the export
    reads it (`openai_agents.error_text`), else `None`: the data must read as a literal mapping or `None` (`ast`, never
    evaluated); the first `": "` after which it does splits the message from it."""
    # here: `openai_agents` imports langfuse, which imports openinference, which imports this module
    from tracejudge.stages.extract.otel.conventions.openai_agents import error_text

    if len(text) > 100_000:
        return None
    for found in _SPLIT.finditer(text):
        rest = text[found.end():]
        data = None if rest == "None" else python_literal(rest, default=False)
        if (data is None or isinstance(data, dict)) and found.start() > 0:
            return error_text({"message": text[:found.start()], "data": data})
    return None


def _under(span: Span, top: Span, index: dict[str, Span]) -> bool:
    node, hops = span, 0
    while node.parent_id in index and hops < 10_000:
        node, hops = index[node.parent_id], hops + 1  # type: ignore[index]
        if node is top:
            return True
    return False


def handoff_target(span: Span) -> str | None:
    """The agent an OpenInference handoff span (`handoff to <agent>`, its `output.value` the agent) hands off to."""
    to = span.attrs.get("output.value")
    if isinstance(to, str) and to:
        return to
    name = span.name[len("handoff to "):] if handoff_span(span) else ""
    return name or None


def handoff_span(span: Span) -> bool:
    """True for the Agents SDK's handoff span as OpenInference's `openai_agents` instrumentation writes it: `handoff to
    <agent>`, or `handoff` with no `output.value` when it recorded no agent (the handoff failed: `agents_handoffs`)."""
    named = span.name.startswith("handoff to ") or (span.name == "handoff" and "output.value" not in span.attrs)
    return named and "tool.name" not in span.attrs and (span.scope is None or span.scope.startswith(_AGENTS_SCOPE))


def _status_error(span: Span) -> str | None:
    """A span's failure as the SDK's export reads it (`repr_error`), else its status text; `None` when it did not fail."""
    if not span.status_error:
        return None
    return repr_error(span.status_message) or span.status_message if span.status_message else "error"
