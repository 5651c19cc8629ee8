"""Maximum bipartite matching between expected and actual tool calls.

Pairing is an optimal assignment, never greedy: the number of pairs is the
largest possible, so a score does not depend on the order of the expected
list, and one actual call uses up at most one expected call (duplicates
count as duplicates).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["max_matching"]

E = TypeVar("E")
A = TypeVar("A")


def max_matching(expected: Sequence[E], actual: Sequence[A], compatible: Callable[[E, A], bool]) -> list[tuple[int, int]]:
    """Return a maximum set of `(expected_index, actual_index)` pairs.

    Kuhn's augmenting-path algorithm, O(E·(E+A)·A) in the worst case, which
    is microseconds at the sizes traces have (tens of calls). Among maximum
    matchings it prefers, for each expected call in list order, the earliest
    compatible actual call, so details read naturally. Pairs are sorted by
    expected index.
    """
    adj = [[j for j, a in enumerate(actual) if compatible(e, a)] for e in expected]
    owner: list[int] = [-1] * len(actual)

    def augment(i: int, seen: list[bool]) -> bool:
        for j in adj[i]:
            if seen[j]:
                continue
            seen[j] = True
            if owner[j] == -1 or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        if adj[i]:
            augment(i, [False] * len(actual))
    return sorted((i, j) for j, i in enumerate(owner) if i != -1)
