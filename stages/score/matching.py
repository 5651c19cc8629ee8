"""Maximum bipartite matching between expected and actual tool calls.

Pairing is an optimal assignment, never greedy: the number of pairs is the
largest possible, so a score does not depend on the order of the expected
list, and one actual call uses up at most one expected call (duplicates
count as duplicates).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["match_table", "max_matching", "max_matching_of", "ordered_matching", "ordered_matching_of"]

E = TypeVar("E")
A = TypeVar("A")


def max_matching(expected: Sequence[E], actual: Sequence[A], compatible: Callable[[E, A], bool]) -> list[tuple[int, int]]:
    """Return a maximum set of `(expected_index, actual_index)` pairs.

    Kuhn's augmenting-path algorithm, O(E·(E+A)·A) in the worst case, which
    is microseconds at the sizes traces have (tens of calls). Each expected
    call, in list order, first takes the earliest *free* compatible actual
    call and only then steals through an augmenting path, so uncontested
    calls pair in reading order and details read naturally. Pairs are sorted by
    expected index.
    """
    return max_matching_of(match_table(expected, actual, compatible), len(actual))


def match_table(expected: Sequence[E], actual: Sequence[A], compatible: Callable[[E, A], bool], backwards: bool = False
                ) -> list[list[int]]:
    """For each expected item, the indices of the actual items compatible with it, increasing.

    Each pair is tested once; the pairing and the reason then read the table instead of testing
    pairs again. `backwards` tests the pairs from the last to the first (the order
    `ordered_matching` fills its table in), so a `compatible` that raises raises for the same pair.
    """
    if not backwards:
        return [[j for j, a in enumerate(actual) if compatible(e, a)] for e in expected]
    rows = [[j for j in range(len(actual) - 1, -1, -1) if compatible(e, actual[j])] for e in reversed(expected)]
    return [row[::-1] for row in reversed(rows)]


def max_matching_of(adj: list[list[int]], n_actual: int) -> list[tuple[int, int]]:
    """`max_matching` from a `match_table` over `n_actual` actual items."""
    owner: list[int] = [-1] * n_actual
    for i in range(len(adj)):
        if adj[i]:
            _augment(adj, owner, i, [False] * n_actual)
    return sorted([(i, j) for j, i in enumerate(owner) if i != -1])  # (a list, not a generator: cheaper to sort)


def _augment(adj: list[list[int]], owner: list[int], i: int, seen: list[bool]) -> bool:
    # A module-level function, not a closure over `owner`: a nested recursive function is a reference cycle
    # that only the garbage collector frees, and one was made for every case scored.
    # A free compatible call first, so uncontested calls pair in reading order.
    for j in adj[i]:
        if owner[j] == -1 and not seen[j]:
            seen[j] = True
            owner[j] = i
            return True
    for j in adj[i]:
        if seen[j]:
            continue
        seen[j] = True
        if owner[j] == -1 or _augment(adj, owner, owner[j], seen):
            owner[j] = i
            return True
    return False


def ordered_matching(expected: Sequence[E], actual: Sequence[A], compatible: Callable[[E, A], bool]) -> list[tuple[int, int]]:
    """Longest order-preserving pairing (an LCS under `compatible`), as `(expected_index, actual_index)` pairs.

    Both index sequences of the result increase, so pairs never cross: this
    is the in-order counterpart of `max_matching`. O(E·A) time and memory.
    Among longest alignments it prefers pairing each expected call with the
    earliest actual call.
    """
    return ordered_matching_of(match_table(expected, actual, compatible, backwards=True), len(actual))


def ordered_matching_of(adj: list[list[int]], n_actual: int) -> list[tuple[int, int]]:
    """`ordered_matching` from a `match_table` over `n_actual` actual items."""
    n, m = len(adj), n_actual
    ok = [set(row) for row in adj]
    # table[i][j] = LCS length of expected[i:] and actual[j:]
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            if j in ok[i]:
                row[j] = below[j + 1] + 1
            else:
                row[j] = max(below[j], row[j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if j in ok[i] and table[i][j] == table[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i += 1
            j += 1
        elif table[i][j + 1] >= table[i + 1][j]:
            j += 1
        else:
            i += 1
    return pairs
