"""How deep a JSON text nests arrays and objects, counted without decoding it (`too_deep`).

A record nested deeper than pydantic-core reads back (`MAX_DEPTH`) is refused where it is read, with its file
and line, instead of failing where its result is written or pickled.
"""

from __future__ import annotations

import re

__all__ = ["MAX_DEPTH", "nests_deeper", "too_deep"]

MAX_DEPTH = 201
"""The deepest nesting of arrays and objects a record may hold: what pydantic-core reads (its JSON parser refuses
a 202nd level), so every result and checkpoint line written from a record can be read back, and its values
pickled to and from worker processes and serialized, far below the interpreter's recursion limit."""

# `too_deep`'s tables: each bracket mapped to +1 (opening) or -1 (closing, as a signed byte), every other byte deleted.
_STEP = bytes(1 if c in b"[{" else 255 if c in b"]}" else 0 for c in range(256))
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")
_NOT_OPENING = bytes(c for c in range(256) if c not in b"[{")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def too_deep(raw: bytes | str, limit: int = MAX_DEPTH) -> bool:
    """True when the JSON text `raw` nests arrays and objects deeper than `limit` levels.

    The opening brackets alone are kept (`bytes.translate`); a line with at most `limit` of them
    cannot nest deeper, and only the others are summed as brackets open and close, in numpy. A sum past
    `limit` is checked again without the strings (a string full of `[` nests nothing). A string
    full of `]` can still hide as many levels from the first sum (a line made to): what writes
    a result then refuses a value nested too deeply to serialize (`engine.flow`).
    """
    b = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if not _deeper(b, limit):
        return False
    return _deeper(_STRING.sub(b'""', b), limit)


def _deeper(b: bytes, limit: int) -> bool:
    # The bracket sum of `_STEP` over `b`, strings included, goes past `limit`. Most lines hold at most `limit`
    # opening brackets (19 of the 200 τ-bench lines more): counted alone, a third cheaper than mapping every bracket.
    if len(b.translate(None, _NOT_OPENING)) <= limit:
        return False
    steps = b.translate(_STEP, _NOT_BRACKET)
    import numpy as np

    return int(np.cumsum(np.frombuffer(steps, np.int8), dtype=np.int32).max()) > limit


def nests_deeper(value: object, limit: int) -> bool:
    """True when the Python value `value` nests dicts, lists and tuples more than `limit` levels deep (`value` itself is
    level 1 when it is one of those). Walked with a stack of its own, not recursion: a value nested past the interpreter's
    recursion limit is told apart, not raised on (a custom metric's `details`, before they are masked, pickled and written)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if level > limit:
                return True
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False
