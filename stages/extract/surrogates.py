"""Where a JSON line holds a lone surrogate escape (`"\\ud800"`), which Python's `json` accepts and a case cannot hold.

A `\\uD800`–`\\uDFFF` escape is half of a UTF-16 pair: JSON text may spell a character
outside the Basic Multilingual Plane as two of them, high then low. One on its own is no
character, so no UTF-8 file, report or XML can carry the string: pydantic refuses the line,
while `json.loads` decodes it (into a `str` holding the half). The reason names the field
holding it and the column of the escape, as other decoding errors name theirs.
"""

from __future__ import annotations

import re
from typing import Any

from tracejudge.stages.extract.common import field_path

__all__ = ["lone_surrogate", "surrogate_field"]

# Every escape of a JSON string, so an escaped backslash (`\\\\ud800`: text, not an escape) is stepped over.
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.S)


def lone_surrogate(text: str, data: Any) -> tuple[str | None, str] | None:
    """`(field, reason)` for the first lone surrogate escape in JSON `text` (one line), which decoded to `data`; None: it has none.

    `field` is the key path of the string holding it (`trace.output`; None when the path cannot be
    told); the reason reads `invalid JSON: trace.output: lone surrogate escape \\ud800 … at column 48`.
    """
    found = _first_lone_escape(text)
    if found is None:
        return None
    column, escape = found
    path = _path_to_surrogate(data)
    field = field_path(path) if path is not None else None
    where = f"{field}: " if field else ""
    return field, f"invalid JSON: {where}lone surrogate escape {escape} (half of a UTF-16 pair, no character on its own) at column {column}"


def surrogate_field(data: Any) -> str | None:
    """The key path (`trace.output`) of the first string or key in decoded `data` holding a lone surrogate; None: none does.

    For data that never was JSON text (what a python agent returned), or whose text is gone: no column to give.
    """
    path = _path_to_surrogate(data)
    return None if path is None else field_path(path) or "reply"


def _first_lone_escape(text: str) -> tuple[int, str] | None:
    # (1-based column, the escape) of the first high surrogate escape not followed at once by a low one, or low one alone.
    high: tuple[int, str, int] | None = None  # (column, escape, end) of a high half waiting for its low half
    for m in _ESCAPE.finditer(text):
        code = int(m.group(1), 16) if m.group(1) else -1
        if high is not None:
            if 0xDC00 <= code <= 0xDFFF and m.start() == high[2]:
                high = None
                continue
            return high[0], high[1]
        if 0xD800 <= code <= 0xDBFF:
            high = (m.start() + 1, m.group(0), m.end())
        elif 0xDC00 <= code <= 0xDFFF:
            return m.start() + 1, m.group(0)
    return (high[0], high[1]) if high is not None else None


def _path_to_surrogate(data: Any) -> tuple[str | int, ...] | None:
    # The key path of the first string (or key) holding a lone surrogate, in the line's order; walked without
    # recursion (the line may nest as deep as the decoder allowed). A key is given with the half escaped, printable.
    from tracejudge.engine.admit import encodable, safe_text  # (here: the engine is not imported while a config is checked)

    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if path and isinstance(path[-1], str) and not encodable(path[-1]):
            return (*path[:-1], safe_text(path[-1]))
        if isinstance(value, str):
            if not encodable(value):  # (a decoded pair is one character: a surrogate left in a string is a lone half)
                return path
        elif isinstance(value, dict):
            stack.extend(((*path, k), v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))))
    return None
