"""Call ids a conversation's model requests used more than once, and how long each such call may be waited for.

Servers that number calls per response (llama.cpp, some vLLM and Ollama builds, fake servers in tests) give the
first call of every response the id `call_0`. Under a framework that records tool spans (LangGraph's `ToolNode`,
smolagents, MLflow's and Langfuse's LangChain callbacks) a tool span then carries an id that names every round's
call at once, and a failed call's span often carries none (the id was only written in the tool's output). Pairing a
model's part with "the first tool span of its id" then hands round 1's call the span of round 2, round 2's the span
of round 3, and leaves round 1's own span over as a call of its own.

So a reused id pairs within its round: the part asked for by request `m` takes a tool span of its name that started
after `m` began and before the next request in the same scope that asked for a call of that id, with that id or none,
and whose recorded arguments do not contradict the part's; its tool message is one that request showed at the latest.
A span whose id is another call's is never taken, nor (for any id) a span whose arguments give another value to one of
the part's (`agrees`): a missing span leaves its call to its tool message instead of handing it a later call's span.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from tracejudge.stages.extract.otel.view import MISSING, unjson

__all__ = ["agrees", "reuse_windows"]

_NEVER = float("inf")


def reuse_windows(by_start: list[Any], part_ids: Callable[[Any], Iterable[str]], scope: Callable[[Any], Any]) -> dict[tuple[str, str], tuple[float, float]]:
    """`{(model span id, reused call id): (start, number) of the next request in the same scope asking for that id}`.

    `by_start`: the conversation's model spans in start order (a request's number is its place there);
    `part_ids(span)`: the ids of the tool-call parts its output holds; `scope(span)`: the call it ran inside (an agent
    called as a tool), compared by identity. With no such later request both are `inf`. Only ids that two or more parts
    carry are keyed: a unique id pairs by itself. The call's tool span started before that request, and its tool
    message was first shown by that request at the latest (`call_results.Responses`).
    """
    asked = [(m, list(part_ids(m))) for m in by_start]
    counts = Counter(pid for _, pids in asked for pid in pids)
    out: dict[tuple[str, str], tuple[float, float]] = {}
    nxt: dict[tuple[int, str], tuple[float, float]] = {}  # (id of the scope object, call id) -> the next request asking it
    for i in range(len(asked) - 1, -1, -1):
        m, pids = asked[i]
        where = id(scope(m))
        for pid in pids:
            if counts[pid] > 1:
                out[(m.span_id, pid)] = nxt.get((where, pid), (_NEVER, _NEVER))
        for pid in pids:
            if counts[pid] > 1:
                nxt[(where, pid)] = (m.start, i)
    return out


def agrees(recorded: Any, wanted: Any) -> bool | None:
    """Whether a tool span's `recorded` arguments are those of a model's part (`wanted`, decoded).

    True when they say the same (an equal value for a key both hold, or a lone value equal to a one-key part's); False
    when they give another value to a key both hold; None when they cannot be compared: none recorded, a framework's
    own shape (a Python repr), keys a framework added with none in common (LangGraph's injected state), or a text one
    side holds inside the other's (smolagents hands a managed agent its task inside its own instructions). Values
    compare as JSON text, so "5" and 5 agree (a framework may coerce them).
    """
    if recorded is MISSING or wanted is None:
        return None
    got = unjson(recorded)
    if isinstance(got, dict) and isinstance(wanted, dict):
        seen = [_compare(got[k], wanted[k]) for k in got.keys() & wanted.keys()]
        return False if False in seen else (True if True in seen else None)
    if isinstance(wanted, dict) and len(wanted) == 1 and isinstance(got, (str, int, float)) and not isinstance(got, bool):
        (only,) = wanted.values()
        return True if _said(only) == _said(got) else None
    return None


def _compare(a: Any, b: Any) -> bool | None:
    x, y = _said(a), _said(b)
    if x == y:
        return True
    return None if isinstance(a, str) and isinstance(b, str) and (x in y or y in x) else False


def _said(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
