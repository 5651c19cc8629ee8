"""One conversation's span views into a native case: turns, steps, calls, user messages.

See the package docstring for the rules; this module applies them to the
`View` of every span (what the convention readers said), never to raw
attributes.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.common import fail
from tracejudge.stages.extract.otel.calls import Responses, Tool, answer_value, build_call, deferred_call, part_call
from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.messages import last_user_text, output_text, user_texts
from tracejudge.stages.extract.otel.spans import Group, Span
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
    when it is JSON text, unless `opts.decode_tool_messages` is False.

    Raises `AdapterError` naming the span when a span could not be decoded.
    """
    for span in group.spans:
        if span.problem:
            fail(span.problem, field=f"span {span.span_id}", case_id=group.key)
    index = {s.span_id: s for s in group.spans}
    views = group_views(group)
    role = {sid: v.role for sid, v in views.items()}
    prefixes = tuple(opts.error_prefixes)
    answer_tools = set(opts.answer_tools)

    # Tool calls: answer tools set aside, a nested span of the same tool folded into its outer call.
    tools: dict[str, Tool] = {}
    answer_ids: set[str] = set()
    answer_texts: list[tuple[int, str]] = []
    for span in group.spans:
        v = views[span.span_id]
        if v.role != "tool" or not v.tool_name:
            continue
        if v.answer_tool or v.tool_name in answer_tools:
            if v.call_id:
                answer_ids.add(v.call_id)
            text = answer_value(v.args)
            if text:
                answer_texts.append((span.start, text))
            continue
        _custom_keys(span, v, opts)
        tool = Tool(span, v)
        outer = _ancestor(span, index, lambda p: p.span_id in tools)
        if outer is not None and tools[outer.span_id].name == tool.name:
            tools[outer.span_id].absorb(tool)
            continue
        tools[span.span_id] = tool
    models = [s for s in group.spans if role[s.span_id] == "model" and _ancestor(s, index, lambda p: role[p.span_id] == "model") is None]
    model_ids = {s.span_id for s in models}
    views = fold_wrapped_models(group.spans, models, index, views)

    def anchor(span: Span) -> Span:
        top = span if role[span.span_id] == "agent" else None
        node = _ancestor(span, index, lambda p: role[p.span_id] == "agent")
        while node is not None:
            top = node
            node = _ancestor(node, index, lambda p: role[p.span_id] == "agent")
        return top or _root(span, index)

    members: dict[str, list[Span]] = {}
    anchors: dict[str, Span] = {}
    agents = [s for s in group.spans if role[s.span_id] == "agent"]
    root_chains = [s for s in group.spans if role[s.span_id] == "chain" and s.parent_id not in index]  # a workflow that may have no model span
    for span in [*agents, *root_chains, *models, *(t.span for t in tools.values())]:
        a = anchor(span)
        anchors[a.span_id] = a
        members.setdefault(a.span_id, []).append(span)
    ordered = sorted(anchors.values(), key=lambda s: (s.start, s.span_id))

    all_part_ids = {str(p["id"]) for m in models for p in _parts(views[m.span_id].outputs, "tool_call") if p.get("id")}
    responses = Responses(all_part_ids | {t.call_id for t in tools.values() if t.call_id})
    decode = getattr(opts, "decode_tool_messages", True)  # native exports keep the text the model got
    by_start = sorted(models, key=lambda s: (s.start, s.span_id))
    asked = {s.span_id: i for i, s in enumerate(by_start)}
    for i, m in enumerate(by_start):
        for p in _parts(views[m.span_id].inputs, "tool_call_response"):
            responses.add(i, {**p, "response": unjson(p.get("response"))} if decode else p)
    tool_list = sorted(tools.values(), key=lambda t: (t.span.start, t.span.span_id))

    def claim(part: dict[str, Any], after: int) -> tuple[Tool | None, bool]:
        """The tool span of a model's part, and whether the call id paired them: by id, else name and arguments, else name in order."""
        pid = None if part.get("id") is None else str(part["id"])
        if pid is not None:
            for t in tool_list:
                if not t.claimed and t.call_id == pid:
                    return t, True
        free = [t for t in tool_list if not t.claimed and t.name == part["name"] and t.span.start >= after and (t.call_id is None or t.call_id not in all_part_ids)]
        wanted = unjson(part.get("arguments"))
        same = next((t for t in free if t.args is not MISSING and unjson(t.args) == wanted), None)
        return (same or (free[0] if free else None)), False

    builder = _Builder(views)
    for a in ordered:
        mem = members[a.span_id]
        mem_ids = {s.span_id for s in mem}
        turn_models = sorted((s for s in mem if s.span_id in model_ids), key=lambda s: (s.start, s.span_id))
        rows: list[_Row] = []
        for m in turn_models:
            mv = views[m.span_id]
            row = _Row(m, output_text(mv.outputs or []))
            row.delegated = _ancestor(m, index, lambda p: role[p.span_id] == "tool") is not None
            last = m.start  # a call not paired by id sorts right after the call the model emitted before it
            for k, part in enumerate(_parts(mv.outputs, "tool_call")):
                if not isinstance(part.get("name"), str):
                    continue
                pid = None if part.get("id") is None else str(part["id"])
                if (pid is not None and pid in answer_ids) or part["name"] in mv.output_tools or part["name"] in answer_tools:
                    text = answer_value(part.get("arguments")) if part["name"] in answer_tools else None
                    if text:
                        answer_texts.append((m.end, text))
                    continue  # the run's answer given through a tool, not a tool call
                t, by_id = claim(part, m.start)
                if t is not None:
                    t.claimed = True
                    call = build_call(t, part, responses, prefixes, asked[m.span_id])
                    if t.deferral:
                        row.deferred.append(deferred_call(call, t.deferral))
                        continue
                    if by_id and t.span_order:
                        last = t.span.start
                    row.calls.append(((0, last, k), call))
                elif part["name"] in mv.deferred_tools:
                    row.deferred.append(deferred_call(part_call(part, responses, prefixes, asked[m.span_id]), mv.deferred_tools[part["name"]]))
                else:
                    row.calls.append(((0, last, k), part_call(part, responses, prefixes, asked[m.span_id])))
            rows.append(row)
        for t in tool_list:
            if t.claimed or t.span.span_id not in mem_ids:
                continue
            t.claimed = True
            call = build_call(t, None, responses, prefixes)
            if t.deferral:
                builder.orphan_deferred.append(deferred_call(call, t.deferral))
                continue
            owner = None
            for i, row in enumerate(rows):
                if row.model is not None and row.model.start <= t.span.start:
                    owner = i
            if owner is None:
                if not rows or rows[0].model is not None:
                    rows.insert(0, _Row(None, None))  # calls made before any model request
                owner = 0
            rows[owner].calls.append(((0, t.span.start, 1 << 30), call))
        av = views[a.span_id]
        if not rows and not present(av.request) and not present(av.answer):
            continue  # an agent span with no request, call or text under it (a controller's bookkeeping span) is no turn
        builder.add_anchor(a, av, mem, rows)
    answer = sorted(answer_texts)[-1][1] if answer_texts else None
    return builder.case(group, answer, _documents(group.spans, views), _conventions(views))


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


class _Row:
    """One model request of a turn (or `model=None`: calls made before any request)."""

    __slots__ = ("model", "text", "calls", "deferred", "delegated")

    def __init__(self, model: Span | None, text: str | None) -> None:
        self.model = model
        self.text = text
        self.delegated = False  # a request inside a tool's span (an agent called as a tool): its text is the tool's result
        self.calls: list[tuple[tuple[int, int, int], dict[str, Any]]] = []
        self.deferred: list[dict[str, Any]] = []


class _Builder:
    """Accumulates turns, then lays out steps, user messages and the case mapping."""

    def __init__(self, views: dict[str, View]) -> None:
        self.views = views
        self.turns: list[dict[str, Any]] = []
        self.orphan_deferred: list[dict[str, Any]] = []

    def add_anchor(self, a: Span, av: View, mem: list[Span], rows: list[_Row]) -> None:
        """Add one anchor's rows; an anchor of the same trace with the same user text joins the previous turn."""
        model_rows = [r for r in rows if r.model is not None]
        first_inputs = next((self.views[r.model.span_id].inputs for r in model_rows if self.views[r.model.span_id].inputs), None)  # type: ignore[union-attr]
        asked = next((last_user_text(self.views[r.model.span_id].inputs or []) for r in model_rows if last_user_text(self.views[r.model.span_id].inputs or [])), None)  # type: ignore[union-attr]
        user_text = _pick_request(av.request, asked)
        last = self.turns[-1] if self.turns else None
        if last is not None and last["_trace"] == a.trace_id and (user_text is None or user_text == last["user_text"]):
            turn = last
        else:
            turn = {"_trace": a.trace_id, "user_text": user_text, "_rows": [], "_final": None, "_agents": set(), "_in": None, "_out": None, "_history": None}
            self.turns.append(turn)
            if first_inputs is not None:
                turn["_history"] = user_texts(first_inputs)
        turn["_rows"].extend(rows)
        if av.answer:
            turn["_final"] = av.answer
        for s in mem:
            v = self.views[s.span_id]
            if v.role == "agent" and v.agent_name:
                turn["_agents"].add(v.agent_name)
        for r in model_rows:
            mv = self.views[r.model.span_id]  # type: ignore[union-attr]
            turn["_in"] = _add(turn["_in"], mv.usage_in)
            turn["_out"] = _add(turn["_out"], mv.usage_out)

    def case(self, group: Group, answer_tool_text: str | None, documents: list[dict[str, Any]], conventions: dict[str, dict[str, int]]) -> dict[str, Any]:
        """The native case mapping of everything added."""
        steps: list[dict[str, Any]] = []
        user_messages: list[dict[str, Any]] = []
        meta_turns = []
        deferred_out: list[dict[str, Any]] = []
        calls_total = requests = 0
        usage_in: int | None = None
        usage_out: int | None = None
        for turn in self.turns:
            rows = sorted(turn["_rows"], key=lambda r: (r.model.start if r.model is not None else -1))
            first_step, first_call = len(steps), calls_total
            if turn["user_text"] is not None:
                user_messages.append({"step": len(steps), "content": turn["user_text"]})
            history = turn["_history"]
            for r in rows:
                if r.model is not None:
                    history = self._new_user_turns(r.model, history, len(steps), user_messages)
                    deferred_out.extend({**d, "step": len(steps)} for d in r.deferred)
                    requests += 1
                calls = [c for _, c in sorted(r.calls, key=lambda e: e[0])]
                calls_total += len(calls)
                step = {"thought": r.text, "tool_calls": calls} if calls else {"output": r.text}
                failed = self.views[r.model.span_id].error if r.model is not None else None
                if failed is not None:  # the request failed as recorded (a retried 500): said, not an empty step
                    step["error"] = failed
                steps.append(step)
            # a delegate's words reach the user only through the calling agent: not the turn's own texts
            own = [r for r in rows if r.model is not None and not r.delegated] or [r for r in rows if r.model is not None]
            model_texts = [r.text for r in own]
            if turn["_final"] is not None:
                final = turn["_final"]
                inter = [t for t in model_texts if t]
                if inter and inter[-1] == final:
                    inter = inter[:-1]
            else:
                final = model_texts[-1] if model_texts else None
                inter = [t for t in model_texts[:-1] if t]
            usage_in = _add(usage_in, turn["_in"])
            usage_out = _add(usage_out, turn["_out"])
            asked = sum(1 for r in rows if r.model is not None)
            meta_turns.append(
                {
                    "user_text": turn["user_text"],
                    "final_text": final,
                    "intermediate_texts": inter,
                    "agents": sorted(turn["_agents"]),
                    "steps": [first_step, len(steps)],
                    "calls": [first_call, calls_total],
                    "usage": _usage(turn["_in"], turn["_out"], asked),
                }
            )
        if meta_turns and meta_turns[-1]["final_text"] is None and answer_tool_text is not None:
            meta_turns[-1]["final_text"] = answer_tool_text
        texts = [t["user_text"] for t in meta_turns]
        otel: dict[str, Any] = {
            "group_key": group.key_attr or "trace_id",
            "traces": group.traces,
            "turns": meta_turns,
            "deferred": deferred_out + self.orphan_deferred,
            "conventions": conventions,
        }
        duplicates = [s.span_id for s in group.spans if s.copies_differ]
        if duplicates:
            otel["duplicates"] = duplicates
        return {
            "id": group.key,
            "input": texts[0] if texts else None,
            "turns": [t for t in texts[1:] if t is not None],
            "tags": ["otel"],
            "metadata": {"otel": otel},
            "trace": {
                "steps": steps,
                "user_messages": user_messages,
                "output": meta_turns[-1]["final_text"] if meta_turns else None,
                "usage": _usage(usage_in, usage_out, requests),
                "retrieved": documents,
            },
        }

    def _new_user_turns(self, model: Span, history: list[str] | None, step: int, out: list[dict[str, Any]]) -> list[str] | None:
        """User messages a request's history adds to the previous one's (the user spoke again mid-turn)."""
        inputs = self.views[model.span_id].inputs
        if not inputs:
            return history
        users = user_texts(inputs)
        if history is None:
            return users
        if len(users) > len(history) and users[: len(history)] == history:
            out.extend({"step": step, "content": text} for text in users[len(history) :])
            return users
        return history if len(users) < len(history) or users[: len(history)] != history else users


def _add(total: int | None, count: int | None) -> int | None:
    """A token sum that stays `None` until some model request recorded the count (0 would claim nothing was spent)."""
    return total if count is None else (total or 0) + count


def _usage(tokens_in: int | None, tokens_out: int | None, requests: int) -> dict[str, Any]:
    """Usage of model requests: a token count no request recorded is `None`, but no request at all spent none."""
    if requests == 0:
        tokens_in, tokens_out = tokens_in or 0, tokens_out or 0
    return {"input_tokens": tokens_in, "output_tokens": tokens_out, "requests": requests}


def _pick_request(recorded: Any, asked: str | None) -> str | None:
    """The turn's user text: the anchor's recorded input, else what its first model request was asked.

    When the anchor recorded a function's arguments (several candidate
    strings), the candidate the model was asked (equal, or contained in a
    framework's wrapper such as smolagents' "New task:") wins, else the
    model's own user message, else the first candidate.
    """
    if isinstance(recorded, str) and recorded:
        return recorded
    if isinstance(recorded, list) and recorded:
        if asked is not None:
            for text in recorded:
                if text == asked or (len(text) > 3 and text in asked):
                    return text
            return asked
        return recorded[0]
    return asked


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
