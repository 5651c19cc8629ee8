"""One conversation's span views into a native case: turns, steps, calls, user messages.

See the package docstring for the rules; this module applies them to the
`View` of every span (what the convention readers said), never to raw
attributes.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.common import fail, maybe_json
from tracejudge.stages.extract.otel.calls import Responses, Tool, answer_value, build_call, by_call_id, deferred_call, part_call
from tracejudge.stages.extract.otel.concurrent import run_anchor, run_heads
from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.conventions.agents_approval import AWAITING, approved_run, run_approved
from tracejudge.stages.extract.otel.conventions.mlflow_smolagents import code_run, unrecorded_usage
from tracejudge.stages.extract.otel.messages import output_text
from tracejudge.stages.extract.otel.pauses import Pauses
from tracejudge.stages.extract.otel.reused_ids import agrees, reuse_windows
from tracejudge.stages.extract.otel.retries import fold_retries
from tracejudge.stages.extract.otel.server_tools import from_history, same_response, server_reply
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.system_prompts import request_prompts
from tracejudge.stages.extract.otel.turns import Builder, Row
from tracejudge.stages.extract.otel.view import MISSING, View, present, unjson
from tracejudge.stages.extract.otel.wrapped import HOPS as _HOPS
from tracejudge.stages.extract.otel.wrapped import ancestor as _ancestor
from tracejudge.stages.extract.otel.wrapped import fold_wrapped_models

__all__ = ["assemble"]


def _root(span: Span, index: dict[str, Span]) -> Span:
    node, seen = span, 0
    while node.parent_id in index and seen < _HOPS:
        node = index[node.parent_id]
        seen += 1
    return node


def _parts(messages: list[dict[str, Any]] | None, kind: str) -> list[dict[str, Any]]:
    return [p for m in messages or [] for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == kind]


def assemble(group: Group, opts: Any) -> dict[str, Any]:
    """The native case mapping of one conversation (`opts` is the format's `Options`).

    A result taken from a tool message (no tool span recorded one) is decoded
    when it is the JSON text of an object or array, unless `opts.decode_tool_messages` is False; other
    text (`"42"`, `"true"`, `"\"ok\""`) is the text the tool gave.

    Raises `AdapterError` naming the span when a span could not be decoded.
    """
    for span in group.spans:
        if span.problem:
            fail(span.problem, field=f"span {span.span_id}" if span.span_id else "spanId", case_id=group.case_id)
    index = {s.span_id: s for s in group.spans}
    views = group_views(group)
    role = {sid: v.role for sid, v in views.items()}
    heads = run_heads(group.spans, views)  # runs started side by side under one span (`concurrent`): each its own
    prefixes = tuple(opts.error_prefixes)
    answer_tools = set(opts.answer_tools)

    # Tool calls: answer tools set aside, a nested span of the same tool folded into its outer call.
    tools: dict[str, Tool] = {}
    answer_ids: set[str] = set()
    answer_texts: list[tuple[int, str]] = []
    answer_spans: list[tuple[Span, str]] = []  # answer tools a model's code ran (a smolagents `CodeAgent`): `_code_answers`
    for span in group.spans:
        v = views[span.span_id]
        if v.role != "tool" or not v.tool_name:
            continue
        if v.interrupts:
            continue  # a tool that paused the graph runs again from its start on resume: that run is the call (`pauses`)
        if v.answer_tool or v.tool_name in answer_tools:
            if v.call_id:
                answer_ids.add(v.call_id)
            text = answer_value(v.args)
            if text:
                answer_texts.append((span.start, text))
            # (smolagents records a call its code made with the positional arguments as they were: `{"args": [answer]}`.)
            positional = v.args.get("args") if isinstance(v.args, dict) else None
            given = text or (positional[0] if isinstance(positional, list) and positional and isinstance(positional[0], str) else None)
            if given:
                answer_spans.append((span, given))
            continue
        _custom_keys(span, v, opts)
        tool = Tool(span, v)
        outer = _ancestor(span, index, lambda p: p.span_id in tools)
        if outer is not None and tools[outer.span_id].name == tool.name:
            tools[outer.span_id].absorb(tool)
            continue
        tools[span.span_id] = tool
    # (a request made inside a tool call is a request of its own even when that call hangs under a model span: a tool's
    # trace that lost its context, joined under the request that asked for it, `strays`)
    models = [s for s in group.spans if role[s.span_id] == "model" and _request_above(s, index, role) is None]
    model_ids = {s.span_id for s in models}
    views = fold_wrapped_models(group.spans, models, index, views)
    from_history(sorted(models, key=lambda s: (s.start, s.span_id)), views)  # server tool blocks OpenLLMetry left out of a response

    scopes: dict[str, Tool | None] = {}

    def scope(span: Span) -> Tool | None:
        """The call `span` ran inside (an agent called as a tool, its model requests and their tools), else `None`."""
        if span.span_id not in scopes:
            outer = _ancestor(span, index, lambda p: p.span_id in tools)
            scopes[span.span_id] = tools[outer.span_id] if outer is not None else None
        return scopes[span.span_id]

    def anchor(span: Span) -> Span:
        if span.span_id in heads:
            return run_anchor(span, heads[span.span_id], index, role)
        top = span if role[span.span_id] == "agent" else None
        node = _ancestor(span, index, lambda p: role[p.span_id] == "agent")
        passed = {span.span_id}
        while node is not None and node.span_id not in passed:  # (an agent seen before: the export's parents loop)
            passed.add(node.span_id)
            top = node
            node = _ancestor(node, index, lambda p: role[p.span_id] == "agent")
        return top or _root(span, index)

    members: dict[str, list[Span]] = {}
    anchors: dict[str, Span] = {}
    agents = [s for s in group.spans if role[s.span_id] == "agent"]
    root_chains = [s for s in group.spans if role[s.span_id] == "chain" and s.parent_id not in index]  # a workflow that may have no model span
    # (a named graph's or runnable's run names an agent of its turn, though it is a chain: `conventions.graph_names`)
    named = [s for s in group.spans if role[s.span_id] == "chain" and views[s.span_id].agent_name and s.parent_id in index]
    for span in [*agents, *root_chains, *named, *models, *(t.span for t in tools.values())]:
        a = anchor(span)
        anchors[a.span_id] = a
        members.setdefault(a.span_id, []).append(span)
    pauses = Pauses(group.spans, views, anchor)
    for aid, a in pauses.anchors.items():
        anchors.setdefault(aid, a)
        members.setdefault(aid, [])

    def run_of(a: Span) -> str | None:
        return heads[a.span_id].span_id if a.span_id in heads else None

    # a run's anchors stay together (a handoff's agents), the runs in the order they started
    ordered = sorted(anchors.values(), key=lambda s: (heads[s.span_id].start if s.span_id in heads else s.start, s.start, s.span_id))

    all_part_ids = {str(p["id"]) for m in models for p in _parts(views[m.span_id].outputs, "tool_call") if p.get("id")}
    asked_names = {p.get("name") for m in models for p in _parts(views[m.span_id].outputs, "tool_call")}
    first = group.spans[0] if group.spans else None
    by_start = sorted(models, key=lambda s: (s.start, s.span_id))
    asked = {s.span_id: i for i, s in enumerate(by_start)}
    reused = reuse_windows(by_start, lambda m: [str(p["id"]) for p in _parts(views[m.span_id].outputs, "tool_call") if p.get("id")], scope)
    responses = Responses(all_part_ids | {t.call_id for t in tools.values() if t.call_id},
                          where=f"{first.file}:{first.line}: trace {group.traces[0]}" if first is not None and group.traces else None,
                          reused={pid for _, pid in reused}, until={(asked[m], pid): int(w[1]) for (m, pid), w in reused.items() if w[1] != float("inf")})
    decode = getattr(opts, "decode_tool_messages", True)  # native exports keep the text the model got
    for i, m in enumerate(by_start):
        for p in _parts(views[m.span_id].inputs, "tool_call_response"):
            # (a JSON object or array only: a tool message's text "42" or '"ok"' is what the tool gave, text as "true" is)
            responses.add(i, {**p, "response": maybe_json(p.get("response"))} if decode else p)
    tool_list = sorted(tools.values(), key=lambda t: (t.span.start, t.span.span_id))
    # a node retried after its tool raised (LangGraph's `RetryPolicy`): the attempts of the one call asked for are that call
    tool_list, retried = fold_retries(tool_list, by_start, lambda m: _parts(views[m.span_id].outputs, "tool_call"),
                                      lambda x, y: scope(x) is scope(y) and anchor(x).span_id == anchor(y).span_id,
                                      lambda m: _parts(views[m.span_id].inputs, "tool_call_response"),
                                      lambda s: s.parent_id in index and index[s.parent_id].status_error)
    refused = {cid: why for m in models for cid, why in views[m.span_id].refused_answers.items()}  # answers the framework sent back
    first_of = by_call_id(tool_list)  # (the call ids are final once the retries are folded)
    held = [t for t in tool_list if t.error == AWAITING]  # the Agents SDK's calls held for approval: run on resume (`agents_approval`)


    def claim(part: dict[str, Any], m: Span, within: Tool | None) -> tuple[Tool | None, bool]:
        """The tool span of a model's part, and whether the call id paired them: by id, else name and arguments, else name in order.

        An id two parts carry pairs within its round (`reused_ids`): a span of the part's name, of that id or none,
        started between the request and the next one asking for that id; else any span of that id in the round.
        """
        pid = None if part.get("id") is None else str(part["id"])
        after = m.start
        window = reused.get((m.span_id, pid)) if pid is not None else None
        if window is not None:
            wanted = unjson(part.get("arguments"))
            here = [t for t in tool_list if not t.claimed and after <= t.span.start < window[0] and t.call_id in (pid, None)
                    and agrees(t.args, wanted) is not False]
            named = [t for t in here if t.name == part["name"]] or [t for t in here if t.call_id == pid]
            named = [t for t in named if scope(t.span) is within] or named
            t = next((t for t in named if agrees(t.args, wanted)), named[0] if named else None)
            return t, t is not None and t.call_id == pid
        if pid is not None and (t := first_of(pid)) is not None:
            return t, True
        wanted = unjson(part.get("arguments"))
        free = [t for t in tool_list if not t.claimed and t.name == part["name"] and t.span.start >= after and (t.call_id is None or t.call_id not in all_part_ids)
                and agrees(t.args, wanted) is not False]
        # two agents run as parallel calls ask for the same tool: each request's call ran inside its own agent's call
        free = [t for t in free if scope(t.span) is within] or free
        same = next((t for t in free if t.args is not MISSING and unjson(t.args) == wanted), None)
        if not free and isinstance(wanted, dict) and wanted:
            # a tool span its application named otherwise (Langfuse's `@observe(name=…)`, a span renamed with
            # `update_current_span(name=…)`), of no tool any request asked for: the one with the part's arguments, run
            # in the part's round (before the run's next request), is its call, not a call of its own beside it
            until = next((s.start for s in by_start if s.start > after and scope(s) is within), None)
            same = next((t for t in tool_list if not t.claimed and t.name not in asked_names and t.call_id in (None, pid) and after <= t.span.start
                         and (until is None or t.span.start < until) and scope(t.span) is within and t.args is not MISSING
                         and unjson(t.args) == wanted), None)
        return (same or (free[0] if free else None)), False

    builder = Builder(views)
    for a in ordered:
        mem = members[a.span_id]
        mem_ids = {s.span_id for s in mem}
        turn_models = sorted((s for s in mem if s.span_id in model_ids), key=lambda s: (s.start, s.span_id))
        rows: list[Row] = []
        for m in turn_models:
            mv = views[m.span_id]
            row = Row(m, output_text(mv.outputs or []))
            if (split := server_reply(mv.outputs)) is not None:  # ran a server tool and answered: words before it are thought
                row.before, row.text, row.replied = split[0], split[1], True
            answers = same_response(mv.outputs)  # server tools' results, in the response that called them
            row.delegated = _ancestor(m, index, lambda p: role[p.span_id] == "tool") is not None
            row.within = scope(m)
            if row.within is not None:
                runner = _ancestor(m, index, lambda p: role[p.span_id] == "agent" or p is row.within.span)  # type: ignore[union-attr]
                # (a smolagents managed agent's run is itself the call's span, and names the agent: `conventions.smolagents`)
                row.agent = views[(runner or row.within.span).span_id].agent_name  # type: ignore[union-attr]
            last = m.start  # a call not paired by id sorts right after the call the model emitted before it
            for k, part in enumerate(_parts(mv.outputs, "tool_call")):
                if not isinstance(part.get("name"), str):
                    continue
                pid = None if part.get("id") is None else str(part["id"])
                if (pid is not None and pid in answer_ids) or part["name"] in mv.output_tools or part["name"] in answer_tools:
                    text = answer_value(part.get("arguments")) if part["name"] in answer_tools else mv.answer_texts.get(pid or "")
                    if pid in refused:  # an answer the framework refused (pydantic-ai's output validation): said, and no answer
                        row.text, row.error = row.text or text, row.error or refused[pid]
                        continue
                    if text:
                        answer_texts.append((m.end, text))
                        if not row.text:
                            row.text = text  # the request's only words (smolagents' last step): its output, not an empty step
                        row.answered = row.answered or text  # the step's output, beside its calls or words (`turns`)
                    continue  # the run's answer given through a tool, not a tool call
                if part.get("server") and pid in answers:  # run by the API, no tool span: its result is in the output
                    row.calls.append(((0, last, k), part_call(part, responses, prefixes, asked[m.span_id], answers[pid])))
                    continue
                t, by_id = claim(part, m, row.within)
                if t is not None:
                    t.claimed = True
                    call = t.call = build_call(t, part, responses, prefixes, asked[m.span_id])
                    if t.deferral:
                        row.deferred.append(deferred_call(call, t.deferral, t.deferral_metadata))
                        continue
                    if by_id and t.span_order:
                        last = t.span.start
                    row.calls.append(((0, last, k), call))
                elif part["name"] in mv.deferred_tools:
                    row.deferred.append(deferred_call(part_call(part, responses, prefixes, asked[m.span_id]), mv.deferred_tools[part["name"]]))
                else:
                    row.calls.append(((0, last, k), part_call(part, responses, prefixes, asked[m.span_id])))
            rows.append(row)
        _code_answers(rows, [(span, text) for span, text in answer_spans if anchor(span) is a], views)  # (no member: not a call)
        for t in tool_list:
            if t.claimed or t.span.span_id not in mem_ids:
                continue
            t.claimed = True
            call = t.call = build_call(t, None, responses, prefixes)
            if t.deferral:
                builder.orphan_deferred.append(deferred_call(call, t.deferral, t.deferral_metadata))
                continue
            owner = None
            inside = scope(t.span)
            for same_scope in (True, False):  # a request of the agent the tool ran under, else any before it
                for i, row in enumerate(rows):
                    if row.model is not None and _ran_before(row.model, t.span) and (row.within is inside or not same_scope):
                        owner = i
                if owner is None and same_scope and inside is not None:  # a tool called inside another's call: that call's
                    runner = _ancestor(t.span, index, lambda p: role[p.span_id] == "agent" or p is inside.span) or inside.span  # type: ignore[union-attr]
                    owner = _inside_row(rows, inside, views[runner.span_id].agent_name)
                if owner is not None:
                    break
            if owner is None and (h := approved_run(held, t, mem_ids)) is not None:
                run_approved(h.call, call)  # a held call run on approval, first in the resumed run: that call, not a new one
                continue
            if owner is None:
                if not rows or rows[0].model is not None:
                    rows.insert(0, Row(None, None))  # calls made before any model request
                    rows[0].one_step = code_run(a)  # (a smolagents CodeAgent's code makes a step's calls one after another)
                owner = 0
            rows[owner].calls.append(((0, t.span.start, 1 << 30), call))
        av = views[a.span_id]
        error = _run_error(a, mem, index, views)
        paused = pauses.asked.get(a.span_id, [])
        if not rows and not present(av.request) and not present(av.answer) and error is None and not paused:
            # an agent span with no request, call or text under it (a controller's bookkeeping span) is no turn; one
            # whose run failed before any request (the Agents SDK's input guardrail) is: its error is the case's
            continue
        builder.add_anchor(a, av, mem, rows, error, paused, pauses.reply(a.span_id), run=run_of(a))
    answer = sorted(answer_texts)[-1][1] if answer_texts else None
    made = {s.span_id for s in group.spans if s.stand_in}  # stand-ins for lost parents were not delivered: no convention's spans
    builder.retried = [(t.call, retried[t.span.span_id]) for t in tool_list if t.call is not None and t.span.span_id in retried]
    built = builder.case(group, answer, _documents(group.spans, views), _conventions({k: v for k, v in views.items() if k not in made}))
    if prompts := request_prompts(by_start, views, index):  # (only when some: a trace without any is written as before)
        built["trace"]["system_prompts"] = prompts
    unrecorded_usage(built, group.spans, views)  # a smolagents run under MLflow, which records none of its requests: unknown, not 0
    return built


def _request_above(span: Span, index: dict[str, Span], role: dict[str, str | None]) -> Span | None:
    """The model span `span` is nested in (a wrapper's view of the same request), unless a tool span lies between."""
    above = _ancestor(span, index, lambda p: role[p.span_id] in ("model", "tool"))
    return above if above is not None and role[above.span_id] == "model" else None


def _ran_before(request: Span, tool: Span) -> bool:
    """Whether `request` started before `tool`: earlier, or at the same time and over by then (a clock in milliseconds,
    Langfuse's API, ties a fast tool with the request after it, which is still running when the tool starts)."""
    return request.start < tool.start or (request.start == tool.start and request.end <= tool.start)


def _inside_row(rows: list[Row], inside: Tool, agent: str | None) -> int | None:
    """The row for tools called inside `inside`'s call before any request of it (a tool that calls a tool), made when
    missing: a step with no request, nested in that call (`nesting`). `None` when no row of `rows` made that call."""
    if inside.call is None or not any(c is inside.call for r in rows for _, c in r.calls):
        return None
    for i, r in enumerate(rows):
        if r.model is None and r.within is inside:
            return i
    row = Row(None, None)
    row.delegated, row.within, row.agent = True, inside, agent
    rows.append(row)
    return len(rows) - 1


def _custom_keys(span: Span, v: View, opts: Any) -> None:
    """The user's `argument_keys` / `result_keys` win over what the conventions read."""
    for key in opts.argument_keys:
        if present(span.attrs.get(key)):
            v.args, v.args_wrapped = span.attrs[key], False
            break
    for key in opts.result_keys:
        if present(span.attrs.get(key)):
            v.result = unjson(span.attrs[key])
            break


def _run_error(anchor: Span, mem: list[Span], index: dict[str, Span], views: dict[str, View]) -> str | None:
    """The error the turn's run ended in: that of its outermost failed agent span (or root chain), else `None`.

    An agent run inside a tool's span (an agent called as a tool) is left out: its failure is that call's
    error, which the calling agent may have got past. The OpenAI Agents SDK under OpenInference marks the
    inner agent ("Max turns exceeded"), not the workflow span around it, so any agent of the turn counts.
    """
    def run(s: Span) -> bool:
        kind = views[s.span_id].role
        return kind == "agent" or (kind == "chain" and s is anchor)

    failed = [s for s in mem if run(s) and views[s.span_id].error and _ancestor(s, index, lambda p: views[p.span_id].role == "tool") is None]
    return views[min(failed, key=lambda s: (s.start, s.span_id)).span_id].error if failed else None


def _documents(spans: list[Span], views: dict[str, View]) -> list[dict[str, Any]]:
    return [d for s in spans for d in views[s.span_id].documents or [] if views[s.span_id].role == "retrieval"]


def _conventions(views: dict[str, View]) -> dict[str, dict[str, int]]:
    """Per convention, the spans it recognised that were used (a role) or ignored (noise); `unrecognised` counts the rest."""
    counts: dict[str, dict[str, int]] = {}
    for v in views.values():
        how = "used" if v.role is not None else "ignored"
        for name in v.conventions or ["unrecognised"]:
            entry = counts.setdefault(name, {"used": 0, "ignored": 0})
            entry[how] += 1
    return dict(sorted(counts.items()))


def _code_answers(rows: list[Row], answers: list[tuple[Span, str]], views: dict[str, Any]) -> None:
    """Mark the request whose code gave the run's answer (`Row.answered`): its words are then its thought.

    A smolagents `CodeAgent` answers by code (`final_answer("…")` inside `<code>`), not by a tool call of the
    model: its last request's text is its reasoning and that code, and was read as the step's output, what the agent
    said. The answer tool's span hangs under the same step as the request (`Step n`), after it. A request that called
    the answer tool itself (a tool call part: a `ToolCallingAgent`) is left as it is.
    """
    for span, text in answers:
        owner = None
        for row in rows:
            m = row.model
            if m is not None and m.parent_id is not None and m.parent_id == span.parent_id and m.start <= span.start:
                owner = row
        if owner is not None and owner.text and owner.text != text and not _parts(views[owner.model.span_id].outputs, "tool_call"):  # type: ignore[union-attr]
            owner.answered = text
