"""The model requests of an agent run inside a tool call (an agent called as a tool), placed with that call.

An agent called as a tool (the Agents SDK's `as_tool`, a LangGraph graph a
tool invokes, ADK's `AgentTool`, a smolagents managed agent) makes its model
requests and tool calls while the calling agent's call runs: after the
request that asked for the call, before its result came back. Laid out by
start time alone, two such calls run in parallel interleave their agents'
steps, and nothing tells the calling agent's own steps from theirs. So the
steps of a turn are its own requests in start order, each followed by the
requests made inside each of its calls (in the model's order of the calls),
each of those in start order and followed in turn by what ran inside its own
calls. `trace.tool_calls()` follows the steps, so a trajectory reads: a
request's calls, then what the first call's agent did, then the second's.

Each such step is listed in `metadata.nested_steps`: `{"step": i, "call": k,
"agent": name}`, `i` an index into `trace.steps`, `k` into
`trace.tool_calls()` (the call it ran inside, which comes earlier), `agent`
the name of the agent that made the request when an agent span names it.

A tool that calls a tool (Langfuse's `@observe(as_type="tool")`, MLflow's
`@mlflow.trace(span_type="TOOL")` inside another) is laid out the same way:
the inner call is a call of the call's step that started last before it, or,
when none of that call did, of a step with no request inside that call (the
steps of a call that calls `get_weather` and then asks a model to summarise:
a step holding `get_weather`, then the summarise request).

Which call a request ran inside is read from parent ids (`assemble`: the tool
span above it); an instrumentation that parents a sub-agent's run elsewhere
has its own evidence for it (`conventions.openllmetry_agents`), and its rows
are put inside the call with `adopt`.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["Within", "adopt", "in_call_order", "nested_entry"]


class Within:
    """The call a request ran inside, when no tool span above it says so: `span` (the call's tool span) and `call`
    (its native call); what `Row.within` (a `calls.Tool`) gives the layout."""

    __slots__ = ("span", "call")

    def __init__(self, span: Any, call: dict[str, Any]) -> None:
        self.span = span
        self.call = call


def adopt(rows: list[Any], within: Within, agent: str | None) -> None:
    """Mark `rows` (`turns.Row`, an agent run's requests) as made inside `within`'s call by the agent `agent`.

    They are a delegate's (its texts the call's result, its user message the calling agent's words); a row already
    inside a call of that run (a sub-agent's sub-agent, found by parent ids) keeps it.
    """
    for r in rows:
        r.delegated = True
        if r.within is None:
            r.within, r.agent = within, agent


def in_call_order(rows: list[Any]) -> list[Any]:
    """`rows` (`turns.Row`, in start order) with the requests made inside each call right after the request that made it.

    A row of no request (`model` None: calls a trace records without the request that asked for them, as MLflow records
    a smolagents run) is no step the model took: its calls are in start order, and one inside which an agent ran is
    followed by what that agent did before the next call starts a row of its own (`_split_at_nested`).
    """
    split = _nested(rows)
    rows = [piece for r in rows for piece in _split_at_nested(r, split)]
    inside = _nested(rows)
    placed = {id(r) for held in inside.values() for r in held}
    top = [r for r in rows if id(r) not in placed]
    out: list[Any] = []
    seen: set[int] = set()
    stack = list(reversed(top))
    while stack:  # depth first, without recursion: a hostile trace may nest calls thousands deep
        r = stack.pop()
        if id(r) in seen:
            continue
        seen.add(id(r))
        out.append(r)
        stack.extend(reversed([k for _, c in sorted(r.calls, key=lambda e: e[0]) for k in inside.get(id(c), [])]))
    # calls run inside each other's agents (a loop no real run makes) reach no top request: kept, in start order
    return out + [r for r in rows if id(r) not in seen]


def _nested(rows: list[Any]) -> dict[int, list[Any]]:
    """The rows of `rows` made inside a call another row of `rows` made, by that call's `id`."""
    made = {id(c) for r in rows for _, c in r.calls}
    inside: dict[int, list[Any]] = {}
    for r in rows:
        call = r.within.call if r.within is not None else None
        if call is not None and id(call) in made and not any(c is call for _, c in r.calls):
            inside.setdefault(id(call), []).append(r)
    return inside


def _split_at_nested(row: Any, inside: dict[int, list[Any]]) -> list[Any]:
    """`row` as it is, or, when it has no request and a call before its last ran something (`inside`) and was over
    before the next call started, cut after each such call: copies holding its calls in order, the last keeping what
    the row said (its text, answer, deferrals). Calls that overlap (smolagents runs the managed agents one reply asked
    for in threads) stay together, as the calls of one request do, and so do those of a row that is one step
    (`one_step`: an agent whose step makes its calls one after another, a smolagents CodeAgent's code)."""
    calls = sorted(row.calls, key=lambda e: e[0])  # (a call of no request sorts by its span's start: `assemble`)
    if row.model is not None or row.one_step:
        return [row]
    pieces, current = [], []
    for entry, following in zip(calls, [*calls[1:], None]):
        current.append(entry)
        ran = inside.get(id(entry[1]))
        if following is not None and ran and following[0][1] >= ran[0].within.span.end:
            pieces.append(current)
            current = []
    if not pieces:
        return [row]
    if current:
        pieces.append(current)
    out = []
    for k, held in enumerate(pieces):
        piece = copy.copy(row)
        piece.calls = held
        if k < len(pieces) - 1:
            piece.text, piece.answered, piece.deferred, piece.error = None, None, [], None
        out.append(piece)
    return out


def nested_entry(row: Any, step: int, numbers: dict[int, int]) -> dict[str, Any] | None:
    """`metadata.nested_steps`'s entry of `row`, laid out as step `step`; `numbers`: the calls laid out so far, by `id`."""
    call = row.within.call if row.within is not None else None
    if call is None or id(call) not in numbers:
        return None
    entry: dict[str, Any] = {"step": step, "call": numbers[id(call)]}
    if row.agent:
        entry["agent"] = row.agent
    return entry
