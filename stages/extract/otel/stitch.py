"""Rejoin a conversation that a model-only instrumentation recorded as one trace per request.

An instrumented client with no agent or workflow span around it (the
OpenInference or OpenLLMetry OpenAI instrumentor on a plain loop, Phoenix's
quick-start) writes every model request as a trace of its own, and an agent
run again on the same memory (smolagents' `run(..., reset=False)`) starts a
new trace. The later trace's first request then replays the earlier trace's
last request — its input and its output — as the start of its own input:
that prefix is what joins them. Only traces that no conversation key
grouped are candidates; an unrelated run that merely shares a system prompt
and a first question never matches, since the replayed prefix includes the
earlier run's answers. Traces a conversation key did group are split into
turns by `continues`: the same replay, adding no user message, is the same
user turn (`turns.Builder`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.spans import Group

__all__ = ["continues", "stitch"]


def _key(msg: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a message when it is replayed in a later request (arguments may be re-encoded)."""
    out: list[Any] = [msg.get("role")]
    for p in msg.get("parts") or []:
        kind = p.get("type")
        if kind == "text":
            out.append(("t", p.get("content")))
        elif kind == "tool_call":
            out.append(("c", p.get("id") or p.get("name")))
        elif kind == "tool_call_response":
            out.append(("r", p.get("id")))
    return tuple(out)


def continues(previous: Any, request: Any) -> bool:
    """Whether model request `request` (a `View`) goes on from `previous`: the same user exchange, one more model round.

    True when its input replays `previous`'s input and output exactly (as `stitch` joins traces) and
    adds no user message after them: the tool results of that round, nothing the user said; or when it is
    `previous` sent again after `previous` got no reply (a failed request the application retried). Edge cases:
    either request with no recorded input is no continuation; a replay that adds a user message is the
    user speaking again (a new turn, or a mid-turn message `assemble` places itself).
    """
    if not previous.inputs or not request.inputs:
        return False
    prefix = [_key(m) for m in [*previous.inputs, *(previous.outputs or [])]]
    inputs = request.inputs
    if len(inputs) < len(prefix) or [_key(m) for m in inputs[: len(prefix)]] != prefix:
        return False
    if len(inputs) == len(prefix):
        return not previous.outputs  # the same request again after it got no reply: an application's retry
    return not any(m.get("role") == "user" for m in inputs[len(prefix) :])


def _hashes(keys: list[Any]) -> list[int]:
    out, h = [], 0
    for key in keys:
        h = hash((h, key))
        out.append(h)
    return out


def _said(messages: list[dict[str, Any]]) -> list[Any]:
    """The user's and the system's texts: what every framework replays verbatim, whatever it does to the rest."""
    return [_key(m) for m in messages if m.get("role") in ("user", "system")]


class _Chain:
    """A candidate trace's replay fingerprints: strict (every message) and lenient (user and system texts only)."""

    __slots__ = ("group", "first_strict", "first_said", "first_len", "last_strict", "last_said", "last_len")

    def __init__(self, group: Group, first: Any, last: Any) -> None:
        self.group = group
        self.first_strict = _hashes([_key(m) for m in first.inputs])
        self.first_said = _hashes(_said(first.inputs))
        self.first_len = len(first.inputs)
        full = _hashes([_key(m) for m in [*last.inputs, *(last.outputs or [])]])
        self.last_strict = full[-1]
        said = _hashes(_said(last.inputs))
        self.last_said = said[-1] if said else 0
        self.last_len = len(last.inputs)


def _candidate(group: Group) -> _Chain | None:
    """Fingerprints of a trace's first and last model requests; `None` when a conversation key grouped it or it has no request input."""
    if group.key_attr is not None:
        return None
    models = []
    views = group_views(group)
    for span in group.spans:
        view = views[span.span_id]
        if view.role == "model" and view.inputs:
            models.append((span, view))
    ids = {s.span_id for s, _ in models}
    top = [v for s, v in models if s.parent_id not in ids]
    return _Chain(group, top[0], top[-1]) if top else None


def stitch(groups: Iterable[Group]) -> Iterator[Group]:
    """`groups` with each chain of replaying traces joined into the first one's group (order kept).

    A trace joins the chain whose last request's input and output its first
    request replays exactly; failing that (a framework re-renders the
    assistant's turns: smolagents replays a call as "Calling tools: …"
    text), the chain whose last request's user and system texts its first
    request starts with while replaying more messages. A joined group keeps
    its first trace's key; `traces` lists every trace id, and the spans of
    later traces take the first trace's id so that the conversation reads as
    one exchange.
    """
    out: list[Group] = []
    strict: dict[int, Group] = {}
    lenient: dict[int, list[tuple[int, Group]]] = {}
    for group in groups:
        got = _candidate(group)
        if got is None:
            out.append(group)
            continue
        chain = next((strict.pop(h) for h in reversed(got.first_strict) if h in strict), None)
        if chain is None:
            for h in reversed(got.first_said):
                fits = [g for n, g in lenient.get(h, []) if n < got.first_len]
                if fits:
                    chain = fits[-1]
                    break
        for table in lenient.values():
            table[:] = [(n, g) for n, g in table if g is not chain]
        if chain is None:
            out.append(group)
            chain = group
        else:
            for span in group.spans:
                span.trace_id = chain.traces[0]
            chain.spans.extend(group.spans)
            chain.views = {**group_views(chain), **group_views(group)}
            chain.traces.extend(group.traces)
        strict[got.last_strict] = chain
        lenient.setdefault(got.last_said, []).append((got.last_len, chain))
    yield from out
