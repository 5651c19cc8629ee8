"""A tool node run again after a tool raised: each call the model asked for is one call, not one per run.

LangGraph's `RetryPolicy` on a node runs the whole node again when it raised: a `ToolNode` (or a node calling
`tool.invoke`) whose tool failed writes a tool span per run for each `tool_call` part the model emitted, the calls
that returned as well as the one that failed (a custom node calling the tools in turn stops at the one that raised,
so a call after it ran fewer times). All those spans are attempts of the calls asked for: each call is its last
attempt (its result and error), and what the earlier ones gave is kept aside (`metadata.otel.retried`).

A request's round is the tool spans of its run (the same agent run and call scope) that started after it and before
that run's next request. Each span of a round goes to the parts of the request it may be: of its tool name, of its call
id (or none), whose arguments its own agree with (`agrees`: equal, else not contradicted); spans that may be the same
parts (one part, or parts alike) are attempts of those parts when there are more of them than parts: the last ones
by start are the calls, each earlier one an attempt of the call of its id, else of the one in its place among the
spans of those parts in its node run (its parent span). A round is folded only when one of its folded attempts
failed and a later span took its call (a node re-run after a raise); then the other calls' extra runs fold too: a
call that returned and ran again because another call of its node raised is listed in `retried` with its attempts
and no errors (the tool did run that many times). So two calls the model did ask for (two parts, even alike) stay
two calls, a failed call the model asked for again in its next request is a new call (another round), and tool spans
no model part asked for (a smolagents `CodeAgent`'s code calling a tool) are left as they are.

A trace may lack a span (cut by hand, or dropped by its exporter). When a part's last span failed inside a node run
that raised (its parent span failed: nothing that run made reached the graph's state) and yet the run's next request
shows the model a new response for the part's id that is not the failure (smolagents sends a failure back, its step
span failed too) nor the result the span recorded (pydantic-ai writes there the retry prompt it sends back, argument
validation errors as pydantic's error details, and its agent span fails when the run raises later), a later run of the
node answered it and its span is missing: the call has that response as its result (`calls`), and the failure it
recorded is an attempt's (listed in `retried`, counting the run that answered); it also shows that the node was re-run,
so the round folds. The failed attempt's span missing leaves the call that
returned (a span whose node raised is evidence of a re-run too: the other calls' runs fold).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracejudge.stages.extract.otel.calls import Tool
from tracejudge.stages.extract.otel.conventions.agents_approval import AWAITING
from tracejudge.stages.extract.otel.reused_ids import agrees
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, unjson

__all__ = ["fold_retries"]


_Named = dict[str, tuple[list[int], dict[str, list[int]], list[int]]]


def _by_name(parts: list[dict[str, Any]]) -> _Named:
    """The indexes of `parts` by tool name: all of them, those by call id (as text), those of no id.

    Looked up once per request: matching each tool span against every part is quadratic in a wide fan-out."""
    out: _Named = {}
    for i, p in enumerate(parts):
        if not isinstance(p.get("name"), str):
            continue  # (a tool span's name is text: no other name is its)
        every, by_id, no_id = out.setdefault(p["name"], ([], {}, []))
        every.append(i)
        (no_id if p.get("id") is None else by_id.setdefault(str(p["id"]), [])).append(i)
    return out


def _asks(t: Tool, parts: list[dict[str, Any]], named_as: _Named) -> tuple[int, ...]:
    """The indexes of the `parts` span `t` may be: its name, its call id (or none), arguments agreeing (else not
    contradicting). `named_as`: `_by_name(parts)`."""
    every, by_id, no_id = named_as.get(t.name, ([], {}, []))
    named = every if t.call_id is None else sorted(by_id.get(t.call_id, []) + no_id)
    said = [(i, agrees(t.args, unjson(parts[i].get("arguments")))) for i in named]
    return tuple(i for i, ok in said if ok) or tuple(i for i, ok in said if ok is not False)


def _answered(asker: Span, pid: str, error: str, models: list[Span], replies: Callable[[Span], list[dict[str, Any]]],
              together: Callable[[Span, Span], bool], sent: Any = MISSING) -> bool:
    """Whether the next request of `asker`'s run shows the model a new response for call id `pid` (not one of another
    round's call of that id, which `asker` showed already) that does not say `error`'s message (a failure sent back)
    and is not `sent`, what the failed span itself recorded as its result: the failure as the framework sent it back
    (pydantic-ai writes its retry prompt on the span, argument validation errors as pydantic's error details)."""
    after = next((m for m in models if m.start > asker.start and together(m, asker)), None)
    if after is None:
        return False
    def of(m: Span) -> list[dict[str, Any]]:
        return [r for r in replies(m) if r.get("id") is not None and str(r["id"]) == pid]
    said = error.split(": ", 1)[-1]
    return any(said not in str(r.get("response")) and (sent is MISSING or sent is None or unjson(r.get("response")) != unjson(sent))
               for r in of(after)[len(of(asker)):])


def fold_retries(tools: list[Tool], models: list[Span], parts: Callable[[Span], list[dict[str, Any]]],
                 together: Callable[[Span, Span], bool], replies: Callable[[Span], list[dict[str, Any]]] = lambda m: [],
                 raised: Callable[[Span], bool] = lambda s: False) -> tuple[list[Tool], dict[str, list[str | None]]]:
    """`tools` (by start) without the earlier attempts of a retried call, and each last attempt's earlier outcomes, by its span id.

    An outcome is the attempt's error, or `None` for one that returned. `models`: the model requests by start;
    `parts(m)`: the `tool_call` parts request `m` emitted; `together(a, b)`: whether two spans belong to one run (the
    same agent run and call scope), so only its own requests bound a round. `replies(m)`: the `tool_call_response`
    parts request `m` showed the model; `raised(s)`: whether the node run tool span `s` ran in raised (its parent failed).
    """
    rounds: dict[str, tuple[Span, list[Tool]]] = {}
    for t in tools:
        if t.error == AWAITING or t.deferral:  # (a call held for approval runs on resume)
            continue
        asker = next((m for m in reversed(models) if m.start <= t.span.start and together(m, t.span)), None)
        if asker is not None:
            rounds.setdefault(asker.span_id, (asker, []))[1].append(t)
    folded: dict[int, Tool] = {}  # id of an attempt -> the call it was an attempt of
    lost: list[tuple[Tool, str]] = []  # a failed span whose call a later run answered, its span missing; the part's id
    for asker, spans in rounds.values():
        asked = parts(asker)
        named_as = _by_name(asked)
        alike: dict[tuple[int, ...], list[Tool]] = {}
        for t in spans:
            if (which := _asks(t, asked, named_as)):
                alike.setdefault(which, []).append(t)
        plan: dict[int, Tool] = {}
        gone: list[tuple[Tool, str]] = []
        for which, ran in alike.items():
            calls = ran[max(len(ran) - len(which), 0):]
            pid = asked[which[0]].get("id") if len(which) == 1 else None
            if (pid is not None and calls[-1].error is not None and raised(calls[-1].span)
                    and _answered(asker, str(pid), str(calls[-1].error), models, replies, together, calls[-1].result)):
                gone.append((calls[-1], str(pid)))
            if len(ran) <= len(which):
                continue
            for a in ran[:len(ran) - len(which)]:
                by_id = [c for c in calls if a.call_id is not None and c.call_id == a.call_id]
                place = [u for u in ran if u.span.parent_id == a.span.parent_id].index(a)
                last = by_id[-1] if by_id else calls[min(place, len(calls) - 1)]
                if last.span.start >= a.span.end:
                    plan[id(a)] = last
        if gone or any(a.error is not None or raised(a.span) for a in spans if id(a) in plan):  # a node re-run after a raise,
            folded.update(plan)  # not spans that only look alike
            lost.extend(gone)
    outcomes: dict[int, list[str | None]] = {}
    for t in tools:
        if id(t) in folded:
            last = folded[id(t)]
            t.claimed = True  # an attempt, not a call of its own
            outcomes.setdefault(id(last), []).append(None if t.error is None else str(t.error))
            if last.call_id is None:
                last.call_id = t.call_id
    for t, pid in lost:  # the last attempt recorded failed, the one that answered left no span: its failure is an attempt's
        outcomes.setdefault(id(t), []).append(str(t.error))
        t.error, t.result, t.call_id = None, MISSING, t.call_id or pid  # (its result: the response the model saw)
    kept = [t for t in tools if id(t) not in folded]
    return kept, {t.span.span_id: outcomes[id(t)] for t in kept if id(t) in outcomes}
