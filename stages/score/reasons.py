"""Pieces of reasons that most scores repeat, built at a fraction of the general way's cost and equal to it.

A case's six checks build about as many reason strings as they compute numbers, and in CPython a
list's `repr` or a float's `round` costs more than the arithmetic around it. What is here returns
exactly what the general expression returns (each function names it), only cheaper for the
values reasons hold: short lists of tool names.
"""

from __future__ import annotations

from typing import Any

from tracejudge.core.memo import SeenSet

__all__ = ["names_repr", "ordinal"]

_PLAIN: SeenSet[str] = SeenSet()  # names seen whose `repr` is themselves in single quotes (`names_repr`)


def ordinal(n: int) -> str:
    """`1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`, …: a call's place in an order, which reasons spell so that a `#N` is
    always the trace's own 0-based call number (`#0 (step 0) search(…)`, `closest: call #1`, `trace call #0`)."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else _SUFFIX.get(n % 10, 'th')}"


_SUFFIX = {1: "st", 2: "nd", 3: "rd"}


def names_repr(names: list[str]) -> str:
    """`repr(names)` of a list of str.

    A str whose `repr` is itself in single quotes (printable, no `'` and no backslash: what
    `str.__repr__` escapes or requotes) needs no per-item `repr`: the list's text is the names
    joined, checked once as a whole. Any other list goes the general way.
    """
    if not names:
        return "[]"
    try:
        if _PLAIN.issuperset(names):  # (in C: tool names repeat from case to case; only str are in the set)
            return "['" + "', '".join(names) + "']"
        body = "', '".join(names)
    except TypeError:  # an item that is not a str (an unhashable one, for the set)
        return repr(names)
    if body.isprintable() and "\\" not in body and body.count("'") == 2 * (len(names) - 1):
        _PLAIN.remember(names)  # each one plain: the joined text is exactly when every name is
        return f"['{body}']"
    return repr(names)

