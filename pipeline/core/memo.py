"""Bounded memos of pure answers: the one kind of module-level state kept beside configuration.

Tool names, tag texts, short reasons and small ratios repeat from case to case, so a few hot
steps remember an answer they already worked out (a tool name seen to hold no credential, the
JUnit end of a reason already rendered, a ratio already rounded) instead of working it out
for every case. Every such memo is a `SeenSet` or a `Memo`, and each obeys three rules:

- it holds only the answer of a pure function of its key, so what a run writes is the same
  byte for byte whether the memo is empty, full or emptied half-way (`tests/test_memo.py`
  scores and renders τ-bench cases with every memo emptied before each insert, and compares);
- it is bounded: an insert that would take it past `limit` entries empties it first, so
  input with ever-new keys (hostile or not) costs the work the memo saves, never memory;
- it lives in one process: a forked worker starts from a copy of the head's and grows its own.

Both are the builtin containers (`set`, `dict`), so the lookups on the hot path (`in`, `get`,
`issuperset`) are the builtins' own C calls; only an insert goes through Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

__all__ = ["DEFAULT_LIMIT", "Memo", "SeenSet"]

DEFAULT_LIMIT = 4096
"""Entries a memo keeps before it is emptied: more than the distinct tool names, tags and short reasons of a real
dataset, and a few hundred KiB at most."""

_K = TypeVar("_K")
_V = TypeVar("_V")


class SeenSet(set[_K]):
    """The keys for which a pure check passed (a name seen plain, a text seen clean): a `set` with a bound.

    Ask with the set's own `in` / `issuperset`; record with `remember`. A key not in the set
    says nothing: it may have failed the check, or never been checked, or been dropped when the
    set was emptied.
    """

    __slots__ = ("limit",)

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        super().__init__()
        self.limit = limit
        """Entries kept before the set is emptied (≥ 1)."""

    def remember(self, keys: Iterable[_K]) -> None:
        """Add `keys` (hashable; a `TypeError` from an unhashable one propagates), emptying the set first when they
        could take it past `limit`."""
        keys = keys if isinstance(keys, (list, tuple, set, frozenset)) else list(keys)
        if len(self) + len(keys) > self.limit:
            self.clear()
        self.update(keys)

    def remember_one(self, key: _K) -> None:
        """Add one `key`, emptying the set first when it is full."""
        if len(self) >= self.limit:
            self.clear()
        self.add(key)


class Memo(dict[_K, _V], Generic[_K, _V]):
    """A pure function's answers by argument: a `dict` with a bound. Read with `get`; write with `put`."""

    __slots__ = ("limit",)

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        super().__init__()
        self.limit = limit
        """Entries kept before the memo is emptied (≥ 1)."""

    def put(self, key: _K, value: _V) -> _V:
        """Keep `value` as the answer for `key` (emptying the memo first when it is full) and return it."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value
