"""Keys spelled with `\\u` escapes, for `redact`: read as the name JSON reads, then spelled back as they were.

A key written with escapes of ASCII characters (`"pass\\u0077ord": …`, at any depth) names the field it spells, so the
fields' rules must see it unescaped to mask its value; the masked text must still keep the key as the text spelled it.
`_keys_read` writes each such key that names a credential or a PIN as it reads and notes where (`_Spans`),
`_sub_spelled` applies one of the masking passes while moving those notes along, and `_spelled_back` restores the
spelling at the end. Kept apart from `redact.py`, which runs the passes: only a text with a credential's hint calls
in here (`_keys_read` returns at once without a `u00`), so text without credentials never does.
Re-exported (`_unescaped_keys`) by `tracejudge.llm.redact`.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from tracejudge.llm.redact_patterns import _ESCAPE, _ESCAPED_KEY, _KEY_NAME


@cache
def _key_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """`(_ESCAPED_KEY, _ESCAPE, _KEY_NAME)` compiled, on first use (a text with a `\\u00` escape after a hint)."""
    return re.compile(_ESCAPED_KEY), re.compile(_ESCAPE), re.compile(_KEY_NAME)


def _unescaped_keys(text: str) -> str:
    """`text` with each key spelled with `\\u` escapes of ASCII characters (`"pass\\u0077ord": …`, at any depth) that
    names a credential or a PIN written as JSON reads it (`"password": …`), so that the fields' rules mask its value;
    any other key, and the rest of the text, as it is."""
    return _keys_read(text)[0]


# Where `_keys_read` wrote a key as it reads: its start and end in the text it returns, and the key as it was spelled.
_Spans = list[tuple[int, int, str]]


def _keys_read(text: str) -> tuple[str, _Spans]:
    """`_unescaped_keys(text)`, and where it wrote each key it read (`_Spans`), so that the masked text can spell it back."""
    if "u00" not in text:
        return text, []
    key, escape, name = _key_patterns()
    out: list[str] = []
    spans: _Spans = []
    pos = size = 0
    for m in key.finditer(text):
        spelled = escape.sub(lambda e: chr(int(e.group(1), 16)), m.group())
        if name.fullmatch(spelled) is None:
            continue
        out.append(text[pos:m.start()])
        size += m.start() - pos
        out.append(spelled)
        spans.append((size, size + len(spelled), m.group()))
        size += len(spelled)
        pos = m.end()
    if not spans:
        return text, spans
    out.append(text[pos:])
    return "".join(out), spans


def _sub_spelled(pattern: re.Pattern[str], kept: Any, tail: Any, text: str, spans: _Spans) -> tuple[str, _Spans]:
    """`pattern.sub` of `text` where each match becomes `kept(m)` (a start of the match: a field's name, a scheme, …) and
    then `tail(m)`, and `spans` (`_keys_read`'s) moved along with the text around them; a key that what a match
    replaced overlaps is gone with it. (Only for a text with a key spelled with `\\u` escapes: a loop in Python per match.)"""
    out: list[str] = []
    moved: _Spans = []
    pos = size = i = 0

    def copy(a: int, b: int) -> None:  # text[a:b] as it is, the keys wholly inside it moved along
        nonlocal size, i
        while i < len(spans) and spans[i][0] < a:
            i += 1
        while i < len(spans) and spans[i][1] <= b:
            start, end, spelled = spans[i]
            moved.append((start - a + size, end - a + size, spelled))
            i += 1
        out.append(text[a:b])
        size += b - a

    for m in pattern.finditer(text):
        copy(pos, m.start() + len(kept(m)))
        rest = tail(m)
        out.append(rest)
        size += len(rest)
        pos = m.end()
    copy(pos, len(text))
    return "".join(out), moved


def _spelled_back(text: str, spans: _Spans) -> str:
    """`text` with each key `_keys_read` wrote as it reads (`spans`, moved along by `_sub_spelled`) spelled as it was."""
    if not spans:
        return text
    out, pos = [], 0
    for start, end, spelled in spans:
        out.append(text[pos:start])
        out.append(spelled)
        pos = end
    out.append(text[pos:])
    return "".join(out)
