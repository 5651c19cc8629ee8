"""The exported spans of one trace of format `openai-agents` as spans of the `otel` model (see `tracejudge.stages.extract.openai_agents`).

`spans_of` translates them (and runs the `openai_agents` convention's checks that need the whole trace: run
errors, handoff calls and their results, handoffs ignored or failed (`agents_handoffs`), missing tools, runs cut short before their calls ran (`agents_cancel`), runs paused for
approval (`agents_approval`), runs stopped at a tool); `problem` says what makes a record no trace the format reads, for the reader (a trace of a conversation it
cannot read is a case of its own) and the adapter alike.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.common import json_type
from tracejudge.stages.extract.otel.conventions.agents_approval import AWAITING, paused_runs, warn_pause_lookalike
from tracejudge.stages.extract.otel.conventions.agents_cancel import unrun_calls, warn_cancel_lookalike
from tracejudge.stages.extract.otel.conventions.agents_tripped import UNFINISHED as TRIPPED_UNFINISHED, tripped_calls
from tracejudge.stages.extract.otel.conventions.agents_handoffs import missed_handoffs
from tracejudge.stages.extract.otel.conventions.openai_agents import (AWAITING_APPROVAL, FINAL_OUTPUT, HANDOFF_CALLS, HANDOFF_RESULTS, NOT_FINISHED, NOT_RUN, RUN_ERROR,
                                                                     error_text, handoff_calls, handoff_results, missing_tools, run_errors, stopped_runs,
                                                                     turn_data)
from tracejudge.stages.extract.otel.conventions.openai_agents import read as read_view
from tracejudge.stages.extract.otel.native import in_order, nanos, native_span
from tracejudge.stages.extract.otel.once import once
from tracejudge.stages.extract.otel.spans import Span

__all__ = ["problem", "spans_of", "trace_id"]


def spans_of(cid: str, spans: list[Any], meta: dict[str, list[Any]]) -> tuple[list[Span], Any, list[int]]:
    """`(spans, task usage, times)`: the exported spans in the `otel` model, the SDK `task` span's usage and every start/end time (ns).

    `meta` (lists by name: agents, handoffs, guardrails, custom, errors, duplicates, stopped_at_tool, paused_for_approval) gets what goes to
    `metadata.openai_agents`.

    A span exported twice (the exporter retries a batch) is read once; see `once`. `spans` passed `problem`.
    """
    out, starts, times, task_usage = [], [], [], None
    kept, differed = once(spans, key=_span_key, ended=lambda s: bool(s.get("ended_at")))
    meta["duplicates"].extend(str(k[1]) for k in differed)
    for i in kept:
        span = spans[i]
        data = span["span_data"]  # (its shape checked by `problem`)
        kind, name = data["type"], data.get("name")
        error = error_text(span.get("error"))
        start, end = nanos(span.get("started_at")), nanos(span.get("ended_at"))
        starts.append(start)
        times += [t for t in (start, end) if t is not None]
        attrs = {"openai_agents.span_data": data, "openai_agents.error": span.get("error")}
        out.append(native_span(cid, span.get("id") or f"#{i}", span.get("parent_id"), name or kind, 0, end or 0, attrs,
                               error=error is not None, message=error))
        if kind == "agent":
            meta["agents"].append({k: data.get(k) for k in ("name", "tools", "handoffs", "output_type")})
        elif kind == "handoff":
            meta["handoffs"].append({"from_agent": data.get("from_agent"), "to_agent": data.get("to_agent")})
        elif kind == "guardrail":
            meta["guardrails"].append({"name": name, "triggered": data.get("triggered")})
        elif kind == "custom" and name not in ("task", "turn"):
            meta["custom"].append({"name": name, "data": data.get("data")})
        if kind == "custom" and isinstance(data.get("data"), dict) and data["data"].get("sdk_span_type") == "task":
            task_usage = data["data"].get("usage")
        if error and kind != "function":
            meta["errors"].append({"span": kind, "name": name, "error": error})
    for span, start in zip(out, in_order(starts)):
        span.start = start
    for agent, error in run_errors(out, _kind, read_view):  # before `stopped_runs`: a failed run stopped at no tool
        agent.attrs[RUN_ERROR] = error  # the convention reads it as the agent's error: the run's, `metadata.run_error`
    for model, tool_name in handoff_calls(out, _kind):
        model.attrs.setdefault(HANDOFF_CALLS, []).append(tool_name)  # the convention reads it as the request's call
    for model, tool_name, output in handoff_results(out, _kind, read_view, _handoff_target):  # (after `handoff_calls`: their parts)
        model.attrs.setdefault(HANDOFF_RESULTS, {})[tool_name] = output  # the convention gives the call it as its result
    for model, tool_name, why in missing_tools(out, _kind, read_view):
        model.attrs.setdefault(NOT_RUN, {})[tool_name] = why  # the convention marks the model's call of it as not run
    for missed in missed_handoffs(out, _kind, read_view, _handoff_target, lambda s: error_text(s.attrs.get("openai_agents.error"))):
        missed.model.attrs.setdefault(NOT_RUN, {}).update(missed.unrun)  # an ignored or failed handoff: its call did not run
        if missed.run_error and missed.agent is not None:
            missed.agent.attrs[RUN_ERROR] = missed.run_error  # the run raised; only the handoff span says why
    for tripped in tripped_calls(out, _kind, read_view):  # an input guardrail cancelled the turn: its calls did not run or finish
        tripped.model.attrs.setdefault(NOT_RUN, {}).update(tripped.unrun)
        for tool in tripped.unfinished:
            tool.attrs[NOT_FINISHED] = TRIPPED_UNFINISHED  # read as the call's error
    for cut in unrun_calls(out, _kind, read_view):  # a run cut short (a cancel): stopped at no tool
        cut.model.attrs.setdefault(NOT_RUN, {}).update(cut.unrun)  # the convention marks the model's calls of them as not run
        for tool in cut.unfinished:
            tool.attrs[NOT_FINISHED] = cut.unfinished_why  # read as the call's error
        cut.agent.attrs[RUN_ERROR] = cut.error  # read as the agent's error: the run's, `metadata.run_error`; no output
    for pause in paused_runs(out, _kind, read_view):  # a run paused for approval: stopped at no tool
        warn_pause_lookalike(pause, f"openai-agents: trace {cid}")
        for tool in pause.pending:
            tool.attrs[AWAITING_APPROVAL] = AWAITING  # read as the call's error: it did not run
        pause.agent.attrs[RUN_ERROR] = pause.error  # read as the agent's error: the run's, `metadata.run_error`; no output
        meta["paused_for_approval"].append({"agent": pause.agent.name, "tools": [t.name for t in pause.pending]})
    for agent, tool, text, model in stopped_runs(out, _kind, read_view):  # needs the start times just set
        warn_cancel_lookalike(agent, tool, text, model, f"openai-agents: trace {cid}")  # (or a run cancelled after its tools)
        agent.attrs[FINAL_OUTPUT] = text  # the convention reads it as the agent's answer: the turn's output
        meta["stopped_at_tool"].append({"agent": agent.name, "tool": tool.name})
    return out, task_usage, times


_KINDS = {"function": "tool", "generation": "model", "response": "model", "agent": "agent", "handoff": "handoff"}


def _kind(span: Span) -> str | None:
    """What an exported span is to `stopped_runs` / `run_errors` (by its `span_data.type`; `turn` for the SDK's turn span)."""
    data = span.attrs["openai_agents.span_data"]
    return "turn" if turn_data(data) else _KINDS.get(data["type"])


def _handoff_target(span: Span) -> str | None:
    """The agent an exported `handoff` span hands off to (`span_data.to_agent`)."""
    to = span.attrs["openai_agents.span_data"].get("to_agent")
    return to if isinstance(to, str) and to else None


def _span_key(span: Any) -> tuple[Any, str] | None:
    """A span's identity: its trace id and span id (none for a span without an id: never a copy)."""
    sid = span.get("id") if isinstance(span, dict) else None
    return (str(span.get("trace_id")), sid) if isinstance(sid, str) and sid else None


def problem(payload: Any) -> tuple[str, str | None] | None:
    """`(message, field)` of what makes `payload` no trace this format reads, or `None`: the checks `adapt` makes of every trace."""
    if not isinstance(payload, dict):
        return f"expected a trace object, got {json_type(payload)}", None
    spans = payload.get("spans")
    if not isinstance(spans, list):
        return "spans: required list of exported spans is missing", "spans"
    if not spans:
        return "the trace holds no span: nothing the agent did was recorded", None
    for i, span in enumerate(spans):
        data = span.get("span_data") if isinstance(span, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            return "expected an exported span with `span_data.type`", f"spans[{i}].span_data.type"
        if data["type"] == "function" and not (isinstance(data.get("name"), str) and data["name"]):
            return "function span has no name", f"spans[{i}].span_data.name"
    return None


def trace_id(payload: dict[str, Any]) -> str | None:
    """The id of a trace line (`{"trace", "spans"}`): the trace's own, else its first span's trace id, else the line's `id`."""
    trace = payload.get("trace") if isinstance(payload.get("trace"), dict) else {}
    spans = payload.get("spans") if isinstance(payload.get("spans"), list) else []
    first = next((s.get("trace_id") for s in spans if isinstance(s, dict) and isinstance(s.get("trace_id"), str)), None)
    tid = trace.get("id") or first or payload.get("id")
    return str(tid) if tid else None
