"""Call ids a conversation's model requests used more than once, and how long each such call may be waited for.

Servers that number calls per response (llama.cpp, some vLLM and Ollama builds, fake servers in tests) give the
first call of every response the id `call_0`. Under a framework that records tool spans (LangGraph's `ToolNode`,
smolagents, MLflow's and Langfuse's LangChain callbacks) a tool span then carries an id that names every round's
call at once, and a failed call's span often carries none (the id was only written in the tool's output). Pairing a
model's part with "the first tool span of its id" then hands round 1's call the span of round 2, round 2's the span
of round 3, and leaves round 1's own span over as a call of its own.

So a reused id pairs within its round: the part asked for by request `m` takes a tool span of its name that started
after `m` began and before the next request in the same scope that asked for a call of that id (`window`), with that
id or none. A span whose id is another call's is never taken.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["reuse_windows"]

_NEVER = float("inf")


def reuse_windows(by_start: list[Any], part_ids: Callable[[Any], Iterable[str]], scope: Callable[[Any], Any]) -> dict[tuple[str, str], float]:
    """`{(model span id, reused call id): the start of the next request in the same scope asking for that id (inf: none)}`.

    `by_start`: the conversation's model spans in start order; `part_ids(span)`: the ids of the tool-call parts its
    output holds; `scope(span)`: the call it ran inside (an agent called as a tool), compared by identity. Only ids
    that two or more parts carry are keyed: a unique id pairs by itself.
    """
    asked = [(m, [pid for pid in part_ids(m)]) for m in by_start]
    counts = Counter(pid for _, pids in asked for pid in pids)
    out: dict[tuple[str, str], float] = {}
    nxt: dict[tuple[int, str], float] = {}  # (id of the scope object, call id) -> the start of the next request asking it
    for m, pids in reversed(asked):
        where = id(scope(m))
        for pid in pids:
            if counts[pid] > 1:
                out[(m.span_id, pid)] = nxt.get((where, pid), _NEVER)
        for pid in pids:
            if counts[pid] > 1:
                nxt[(where, pid)] = m.start
    return out
