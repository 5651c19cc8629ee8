"""The OpenAI Agents SDK's own tracing (`Span.export()`), as format `openai-agents` puts it in a span.

The format keeps an exported span's `span_data` as the attribute
`openai_agents.span_data` and its `error` as `openai_agents.error`. What
counts, by `span_data.type`: `function` is a tool call (`name`; `input`, the
JSON the model sent, is the arguments; `output` the result; the span's
`error` `{message, data}` the error, as `"<message>: <data.error>"`);
`generation` (Chat Completions models) and `response` (Responses API
models) are model requests (a generation's `input` / `output` messages;
`usage.input_tokens` / `output_tokens`, unrecorded when both are 0: the SDK's
empty `Usage()` for a stream that reported none, as Chat Completions streams
do unless asked, `stream_options.include_usage`); `agent` is an agent run named by
`name` (its `error` the run's failure). `handoff`, `guardrail` and `custom` spans are noise (the format
lists them in its metadata); a handoff the model asked for
(`transfer_to_<agent>`) is a call through the model's own tool-call part.

An agent run can end at a tool call (`tool_use_behavior="stop_on_first_tool"`
or `StopAtTools`): its `final_output` is a tool's output, and no model
request follows the call. The SDK records neither the behaviour nor the
final output, so `stopped_runs` reads it off the run's shape (for any
convention that records the SDK's spans; format `openai-agents` puts what
it found on the agent span as `openai_agents.final_output`, which is the
agent's answer here). See `stopped_runs` for what the trace cannot tell: a streamed run cancelled after its
tools ran (`cancel(mode="after_turn")`) is recorded exactly alike, which a warning says. A run cut short before
its last request's calls ran or finished (`cancel()`, a cancelled task; the SDK records no error) is no stop:
`agents_cancel.unrun_calls` marks those calls and gives the run its error and no output (format `openai-agents`
puts it on the agent span as `openai_agents.run_error`, on the model span as `openai_agents.not_run`, on an
unfinished function span as `openai_agents.not_finished`). A run paused for a human's approval (a `needs_approval`
tool, an MCP server's `require_approval`: the SDK records no pause) is no stop either: `agents_approval.paused_runs` fails the calls awaiting it as not run
and gives the run its error and no output (format `openai-agents`: `openai_agents.awaiting_approval` on each such
function span, `openai_agents.run_error` on the agent span).

A run can also end on a `turn` span (the SDK's `custom` span of one model request and its tools; OpenInference
writes it as a CHAIN named `turn`): the SDK puts there the errors that raise out of `Runner.run` from inside a
turn — a tool the agent does not have ("Tool not found", `ModelBehaviorError`), a tripped input guardrail —
and leaves the agent span without `error`. `run_errors` finds them (the run's error), `missing_tools` the calls
of a tool that does not exist (they did not run: the call's error). A streamed run records its model answer
as the Responses API response it was streamed as, whose items carry the SDK's placeholder id `__fake_id__`:
`response_calls` reads a call's id from its `call_id`.

A Responses API request (`response` span) is exported without its output, so the model's handoff call
(`transfer_to_<agent>`), which runs no function span, would be lost: `handoff_calls` finds it from the
`handoff` span the SDK writes when it runs one (format `openai-agents` puts it on the request as
`openai_agents.handoff_calls`, which the convention reads as the request's tool-call part). The tool name is
the SDK's default (`Handoff.default_tool_name`: `transfer_to_` and the agent's name, lower case, anything but
letters, digits and `_` made `_`); a handoff given another name (`tool_name_override`) is not recorded as
such. Its id and arguments are not in the export either; the reply the SDK sent the model is its transfer message
(`handoff_results`, below).

A handoff's call has as its result the SDK's transfer message (`{"assistant": "<agent>"}`), which the next agent's
first request sends as that call's output. A handoff whose `input_filter` removes tool items
(`handoff_filters.remove_all_tools`) removes it too, so no span holds it and the call would read as one with no
result, though it ran: `handoff_results` finds such calls (no later request's input answers them) and gives them the
message the SDK made (format `openai-agents` puts it on the request as `openai_agents.handoff_results`; OpenInference:
`agents_sdk.stop_answers`), as it does for a Responses API request the export kept without text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.conventions.agents_sdk import give_handoff_results, mark_not_run, response_calls
from tracejudge.stages.extract.otel.conventions.agents_outputs import mcp_error, timeout_error, tool_output
from tracejudge.stages.extract.otel.conventions.langfuse import usage_pair
from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, present, tool_call_part

__all__ = ["AWAITING_APPROVAL", "FINAL_OUTPUT", "HANDOFF_CALLS", "HANDOFF_RESULTS", "NAME", "NOT_FINISHED", "NOT_RUN", "RUN_ERROR", "agent_runs", "asking_request", "error_text", "handoff_calls", "handoff_results",
           "handoff_tool_name", "missing_tools", "read", "run_errors", "stopped_runs", "turn_data"]

NAME = "openai-agents"
_ROLES = {"function": "tool", "generation": "model", "response": "model", "agent": "agent"}
FINAL_OUTPUT = "openai_agents.final_output"  # set by format `openai-agents` (not the SDK): a run's output that was a tool's
RUN_ERROR = "openai_agents.run_error"  # set by format `openai-agents` on an agent span: the error a turn of its run ended it in, or
#   why it ended before its calls ran (`agents_cancel.unrun_calls`)
NOT_RUN = "openai_agents.not_run"  # set by format `openai-agents` on a model span: {tool name: why its call did not run}
NOT_FINISHED = "openai_agents.not_finished"  # set by format `openai-agents` on a function span the run ended during: why
AWAITING_APPROVAL = "openai_agents.awaiting_approval"  # set by format `openai-agents` on a function span held for approval: why
HANDOFF_CALLS = "openai_agents.handoff_calls"  # set by format `openai-agents` on a textless request: the handoff tools it called
HANDOFF_RESULTS = "openai_agents.handoff_results"  # set by format `openai-agents` on a request: {handoff tool: its unsent output}


def read(span: Span) -> View | None:
    """The Agents SDK reading of `span`, or `None` when it has no `openai_agents.span_data`."""
    data = span.attrs.get("openai_agents.span_data")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        return None
    kind = data["type"]
    v = View(role=_ROLES.get(kind))
    error = error_text(span.attrs.get("openai_agents.error"))
    if v.role == "tool":
        name = data.get("name")
        v.tool_name = name if isinstance(name, str) and name else None
        if present(data.get("input")):
            v.args = data["input"]
        if data.get("output") is not None:
            v.result = tool_output(data["output"])  # the SDK's structured output (an MCP tool's) is `str()` of it: what the model got
        unrun = span.attrs.get(NOT_FINISHED) or span.attrs.get(AWAITING_APPROVAL)  # (why it did not finish, or run)
        v.error = error or (unrun if isinstance(unrun, str) else None) or timeout_error(v.tool_name, v.result)  # (no error recorded)
        if not v.error and data.get("mcp_data"):  # an MCP server's failed tool: its `isError` text is the output, no error recorded
            v.error = mcp_error(v.tool_name, v.result)
    elif v.role == "model":
        if kind == "generation":
            v.inputs = normalise(data.get("input"))
            # A streamed run records the model's answer as the Responses API response it was streamed as.
            v.outputs = response_calls(data.get("output")) or normalise(data.get("output"))
            mark_not_run(v.outputs, span.attrs.get(NOT_RUN))
        elif isinstance(span.attrs.get(HANDOFF_CALLS), list):
            v.outputs = [{"role": "assistant", "parts": [tool_call_part(None, name, None) for name in span.attrs[HANDOFF_CALLS]]}]
        give_handoff_results(v.outputs, span.attrs.get(HANDOFF_RESULTS))
        v.usage_in, v.usage_out = usage_pair(data.get("usage"))
        if v.usage_in == 0 and not v.usage_out:
            # no request sends 0 tokens: the SDK's empty `Usage()`, all it has for a stream read without usage
            v.usage_in = v.usage_out = None
        v.error = error
    elif v.role == "agent":
        name = data.get("name")
        v.agent_name = name if isinstance(name, str) and name else None
        # the run's own failure ("Max turns exceeded", "Error in agent run: …"), else the turn's that ended it
        run_error = span.attrs.get(RUN_ERROR)
        v.error = error or (run_error if isinstance(run_error, str) else None)
        answer = span.attrs.get(FINAL_OUTPUT)
        v.answer = answer if isinstance(answer, str) and answer else None
    elif turn_data(data):
        v.error = error  # no role: read by `run_errors` / `missing_tools` only
    return v


def turn_data(data: dict[str, Any]) -> bool:
    """Whether exported span data is the SDK's `turn` custom span (one model request of a run and its tools)."""
    inner = data.get("data")
    return data.get("type") == "custom" and (data.get("name") == "turn" or (isinstance(inner, dict) and inner.get("sdk_span_type") == "turn"))


def stopped_runs(spans: list[Span], kind: Callable[[Span], str | None], view: Callable[[Span], View]) -> list[tuple[Span, Span, str, Span]]:
    """`(agent span, tool span, final output text, last model span)` of every Agents SDK run that ended at a tool call.

    `kind(span)` says what a span of the SDK is: `agent`, `model` (a
    generation or response), `tool` (a function call), `handoff`, or `None`;
    `view(span)` is its reading (the agent's `error`, the model's `outputs`,
    the tool's `result`). A span's run is its nearest agent ancestor; spans
    under a tool span (an agent called as a tool) belong to that call, not to
    the run around it. The SDK's loop is strictly model request → its tools
    → next request, so tool spans starting after the run's last model request
    started are that request's calls: when there are some, and the agent span
    records no error (max_turns, a tool raising out of the run, a tripped
    guardrail: those mark it; so does `agents_cancel.unrun_calls`, for a run
    that ended before some of those calls ran) and no handoff left the agent
    after that request, no model request followed the calls and the run's
    `final_output` is a tool's output. A normal run always ends with a request
    that gives text.

    What the trace cannot tell: which tool it was when the last request made
    several calls (`stop_on_first_tool` returns the first in the model's
    order, taken here; `StopAtTools` naming a later one returns that one's);
    a custom `tool_use_behavior` function, whose `final_output` may be any
    value (the first call's output is taken); a tool output not recorded
    (`trace_include_sensitive_data=False`: no output, nothing is taken); and
    a streamed run cancelled once its turn was done (`cancel(mode="after_turn")`
    while the tools ran: no final output), which the SDK records exactly as a
    stop at the tool; the callers warn of it (`agents_cancel.warn_cancel_lookalike`,
    given the last model span). A non-text output is given as JSON.
    """
    out = []
    for agent, mine in agent_runs(spans, kind):
        if not mine.get("model") or not mine.get("tool") or view(agent).error:
            continue
        last = max(mine["model"], key=lambda s: (s.start, s.span_id))
        after = sorted((t for t in mine["tool"] if t.start >= last.start), key=lambda s: (s.start, s.span_id))
        if not after or any(h.start >= last.start for h in mine.get("handoff", [])):
            continue
        tool = _first_called(after, view(last).outputs, view)
        result = view(tool).result
        if present(result) and result is not None:
            out.append((agent, tool, result if isinstance(result, str) else json.dumps(result, default=str), last))
    return out


def agent_runs(spans: list[Span], kind: Callable[[Span], str | None]) -> list[tuple[Span, dict[str, list[Span]]]]:
    """`(agent span, its own spans by kind)` of each agent run with a `model`, `tool` or `handoff` span, as they first come.

    A span's run is its nearest agent ancestor; spans under a tool span belong to that call, not to the run around
    it, and an agent called as a tool (under a tool span) is left out: its output is that call's result, its end
    that call's business. `kind` as for `stopped_runs`.
    """
    index = {s.span_id: s for s in spans}
    own: dict[str, dict[str, list[Span]]] = {}
    for span in spans:
        k = kind(span)
        if k in ("model", "tool", "handoff") and (agent := _owner(span, index, kind, "agent")) is not None:
            own.setdefault(agent.span_id, {}).setdefault(k, []).append(span)
    return [(index[a], mine) for a, mine in own.items() if not _in_tool(index[a], index, kind)]


def run_errors(spans: list[Span], kind: Callable[[Span], str | None], view: Callable[[Span], View]) -> list[tuple[Span, str]]:
    """`(agent span, error)` of every Agents SDK run that ended in an error its `turn` span, or a model request's span (a
    Responses reply cut off: `ModelBehaviorError`), holds, not its agent span.

    `kind(span)` is as for `stopped_runs`, plus `turn` for the SDK's turn span; `view(span).error` is a span's error.
    A failed turn ended its run when no model request outside it started at or after it did, within the agent's
    parent (the run's `task` span or workflow; the whole trace for an agent without a parent): a later request (the
    next turn, another agent after a handoff) means the run went on, as it does after "Tool not found" under
    `RunConfig(tool_not_found_behavior="return_error_to_model")`, which marks the turn all the same. An agent that
    records its own error keeps it; a turn inside a tool's span (an agent called as a tool) is that call's business.
    The error is the turn's as recorded ("Tool not found: {'tool_name': 'x'}" under OpenInference, the export's
    `"<message>: <data as JSON>"`).
    """
    index = {s.span_id: s for s in spans}
    out: list[tuple[Span, str]] = []
    for turn in spans:
        error = view(turn).error if kind(turn) in ("turn", "model") else None
        agent = _owner(turn, index, kind, "agent") if error else None
        if agent is None or view(agent).error or any(a is agent for a, _ in out):
            continue
        scope = index.get(agent.parent_id or "")
        later = [m for m in spans if kind(m) == "model" and m is not turn and m.start >= turn.start and not _below(m, turn, index)
                 and (scope is None or _below(m, scope, index))]
        if not later:
            out.append((agent, error))  # type: ignore[arg-type]
    return out


def handoff_calls(spans: list[Span], kind: Callable[[Span], str | None]) -> list[tuple[Span, str]]:
    """`(model span, tool name)` for each handoff that a Responses API request exported without its output asked for.

    The request that asked is the last model request that started before the `handoff` span under the same
    parent (the SDK's `turn` span, or the agent span of an SDK without turns); a request whose output the export
    kept (a `generation`, a `response` with `output`) says its calls itself. `kind` as for `stopped_runs`.
    """
    out: list[tuple[Span, str]] = []
    for model, to in _handoffs(spans, kind, lambda h: h.attrs["openai_agents.span_data"].get("to_agent")):
        data = model.attrs["openai_agents.span_data"]
        if data.get("type") == "response" and data.get("output") is None:
            out.append((model, handoff_tool_name(to)))
    return out


def _handoffs(spans: list[Span], kind: Callable[[Span], str | None], target: Callable[[Span], str | None]) -> Iterator[tuple[Span, str]]:
    """`(model span that asked, target agent)` of each `handoff` span: the last model request that started before it
    under the same parent (the SDK's `turn` span, or the agent span of an SDK without turns)."""
    for h in spans:
        to = target(h) if kind(h) == "handoff" else None
        if not isinstance(to, str) or not to:
            continue
        if (model := asking_request(spans, kind, h)) is not None:
            yield model, to


def asking_request(spans: list[Span], kind: Callable[[Span], str | None], handoff: Span) -> Span | None:
    """The model request that asked for `handoff` (a `handoff` span): the last one that started before it under the same
    parent; None when there is none. `kind` as for `stopped_runs`."""
    asked = [m for m in spans if kind(m) == "model" and m.parent_id == handoff.parent_id and m.start <= handoff.start]
    return max(asked, key=lambda s: (s.start, s.span_id)) if asked else None


def handoff_tool_name(agent: str) -> str:
    """The SDK's default tool name of a handoff to `agent` (`Handoff.default_tool_name`)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", re.sub(r"\s", "_", f"transfer_to_{agent}")).lower()


def handoff_results(spans: list[Span], kind: Callable[[Span], str | None], view: Callable[[Span], View],
                    target: Callable[[Span], str | None]) -> list[tuple[Span, str, str]]:
    """`(model span, tool name, output)` for each handoff call whose output no later request's input holds.

    The SDK answers a handoff call with its transfer message (`Handoff.get_transfer_message`: `{"assistant":
    "<agent>"}` as JSON text) and sends it to the next agent as the call's output, unless the handoff's
    `input_filter` removed it (`handoff_filters.remove_all_tools`); the call ran all the same, and the `handoff`
    span says so. The request that asked is the one `handoff_calls` finds; its call is the `tool_call` part of the
    handoff's default tool name, else (a `tool_name_override`) the only part of that output no tool span under the
    same parent ran. A call whose id a tool message of a later request's input answers (or, with no id, one holding
    that message) is left to it. `kind` / `view` as for `stopped_runs`; `target(span)` the agent a handoff span hands
    off to.
    """
    out: list[tuple[Span, str, str]] = []
    for model, to in _handoffs(spans, kind, target):
        parts = [p for m in view(model).outputs or [] for p in m.get("parts") or []
                 if isinstance(p, dict) and p.get("type") == "tool_call" and not p.get("server")]
        part = next((p for p in parts if p.get("name") == handoff_tool_name(to)), None)
        if part is None:
            ran = {view(t).tool_name for t in spans if kind(t) == "tool" and t.parent_id == model.parent_id and t.start >= model.start}
            others = [p for p in parts if p.get("name") not in ran]
            part = others[0] if len(others) == 1 else None
        message = json.dumps({"assistant": to})
        if part is None or not isinstance(part.get("name"), str) or _answered(part, message, spans, kind, view, model):
            continue
        out.append((model, part["name"], message))
    return out


def _answered(part: dict[str, Any], message: str, spans: list[Span], kind: Callable[[Span], str | None],
              view: Callable[[Span], View], model: Span) -> bool:
    """Whether a model request that started after `model` has in its input a tool message answering `part`."""
    pid = part.get("id")
    for m in spans:
        if kind(m) != "model" or m is model or m.start < model.start:
            continue
        for msg in view(m).inputs or []:
            for p in msg.get("parts") or []:
                if not isinstance(p, dict) or p.get("type") != "tool_call_response":
                    continue
                if (pid is not None and p.get("id") == pid) or (pid is None and p.get("response") in (message, json.loads(message))):
                    return True
    return False


def missing_tools(spans: list[Span], kind: Callable[[Span], str | None], view: Callable[[Span], View]) -> list[tuple[Span, str, str]]:
    """`(model span, tool name, error)` for each call of a tool the agent does not have, as its `turn` span records it.

    The SDK marks the turn "Tool not found" (`data.tool_name`; "Custom tool not found", "Shell tool not found" …
    alike) and runs no tool: the model's call stays a call (the model made it), failed with that error. Only
    model requests of that turn count (not those of an agent called as a tool inside it), and only a tool no
    tool span of the turn ran. `kind` / `view` as for `run_errors`.
    """
    index = {s.span_id: s for s in spans}
    out: list[tuple[Span, str, str]] = []
    for turn in spans:
        name = _missing_name(view(turn).error) if kind(turn) == "turn" else None
        if name is None:
            continue
        mine = [s for s in spans if _owner(s, index, kind, "turn") is turn]
        if any(kind(s) == "tool" and view(s).tool_name == name for s in mine):
            continue
        why = f"Tool not found: {name} (the agent has no tool of that name; the call did not run)"
        out += [(m, name, why) for m in mine if kind(m) == "model"]
    return out


def _missing_name(error: str | None) -> str | None:
    """The tool a turn's "… tool not found: <data>" error names (`data.tool_name`, JSON or a Python repr), else `None`."""
    message, _, data = (error or "").partition(": ")
    if not message.lower().endswith("tool not found") or not data:
        return None
    try:
        parsed = json.loads(data)
    except ValueError:
        parsed = python_literal(data)
    name = parsed.get("tool_name") if isinstance(parsed, dict) else None
    return name if isinstance(name, str) and name else None


def _owner(span: Span, index: dict[str, Span], kind: Callable[[Span], str | None], wanted: str) -> Span | None:
    """The nearest ancestor of `span` of kind `wanted`; `None` when a tool span comes first (inside a call) or there is none."""
    node, hops = span, 0
    while node.parent_id in index and hops < 10_000:
        node, hops = index[node.parent_id], hops + 1  # type: ignore[index]
        k = kind(node)
        if k == "tool":
            return None
        if k == wanted:
            return node
    return None


def _below(span: Span, top: Span, index: dict[str, Span]) -> bool:
    """Whether `top` is `span` or one of its ancestors."""
    node, hops = span, 0
    while node is not top and node.parent_id in index and hops < 10_000:
        node, hops = index[node.parent_id], hops + 1  # type: ignore[index]
    return node is top


def _in_tool(span: Span, index: dict[str, Span], kind: Callable[[Span], str | None]) -> bool:
    node, hops = span, 0
    while node.parent_id in index and hops < 10_000:
        node, hops = index[node.parent_id], hops + 1  # type: ignore[index]
        if kind(node) == "tool":
            return True
    return False


def _first_called(tools: list[Span], outputs: list[dict[str, Any]] | None, view: Callable[[Span], View]) -> Span:
    """Of the tool spans of one request, the model's first call that has one (by name), else the first that started.

    The Agents SDK records no call id on a function span; the request's output (chat messages) names its calls in
    order. A Responses API request's output is not in the export: the SDK starts the calls in the model's order.
    """
    names = [p.get("name") for m in outputs or [] for p in m.get("parts") or [] if isinstance(p, dict) and p.get("type") == "tool_call"]
    for name in names:
        found = next((t for t in tools if view(t).tool_name == name), None)
        if found is not None:
            return found
    return tools[0]


def error_text(err: Any) -> str | None:
    """A span's `error` (`{message, data}`) as `"<message>: <data.error>"` (the data as JSON when it has no `error` text)."""
    if not err:
        return None
    if not isinstance(err, dict):
        return str(err)
    message = str(err.get("message") or "error")
    data = err.get("data")
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return f"{message}: {data['error']}"
    return f"{message}: {json.dumps(data, default=str)}" if data else message
