"""Format `langfuse`: the order of observations that started in the same millisecond.

Langfuse's server keeps an observation's times in milliseconds (it cuts the span's nanoseconds on ingestion), and its
API lists them in no order that says more: `GET /api/public/traces/{id}` selects them without `ORDER BY` (as stored:
by type and id), `GET /api/public/v2/observations` newest first, then by span id. So a fast tool and the one after it,
an agent and its first tool, a request and the tool it asked for, often share a start time, and the list order says
nothing of which ran first.

What the times still say is used: an observation starts no earlier than the one it is nested in, and of two that
started in the same millisecond, one after the other, the first ended no later than the second. `untied` gives each
tied observation a start a few nanoseconds later by its place in that order (an observation's chain of enclosing
observations tied with it, outermost first, compared by end time; a chain that is a prefix of another comes first),
so the spans are laid out in it whatever order the API listed them in. Observations tied in both start and end,
neither inside the other (two tools of under a millisecond each), cannot be told apart: they keep one start, and the
assembler orders them as it orders any two spans that started together (by span id), the same from either API.
"""

from __future__ import annotations

from typing import Any

__all__ = ["untied"]


def untied(observations: list[dict[str, Any]], starts: list[int], ends: list[int | None]) -> list[int]:
    """`starts` (ns, one per observation) with those tied in the same start put in order (module docstring)."""
    ids = [str(o.get("id")) for o in observations]
    parent = {ids[i]: str(o.get("parentObservationId")) for i, o in enumerate(observations)}
    at = {oid: i for i, oid in enumerate(ids)}
    tied: dict[int, list[int]] = {}
    for i, start in enumerate(starts):
        tied.setdefault(start, []).append(i)
    out = list(starts)
    for start, group in tied.items():
        if len(group) < 2:
            continue
        members = {ids[i] for i in group}

        def chain(i: int) -> tuple[int, ...]:
            # the ends of `i`'s enclosing observations tied with it, outermost first, then its own
            got: list[int] = []
            node, seen = ids[i], set()
            while node in members and node not in seen:
                seen.add(node)
                end = ends[at[node]]
                got.append(end if end is not None else start)
                node = parent[node]
            return tuple(reversed(got))

        keys = {i: chain(i) for i in group}
        rank = {key: n for n, key in enumerate(sorted(set(keys.values())))}
        for i in group:
            out[i] = start + rank[keys[i]]
    return out
