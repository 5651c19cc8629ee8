"""The line a part of a τ²-bench simulation starts on, for an error about one of its messages.

A results file is pretty-printed (τ²-bench writes it with `indent=2`), so a simulation spans hundreds of lines and its
own first line says little about where a bad message is. The reader decodes each simulation whole (no positions inside
it), so the place is found again only when an error needs it: the simulation's bytes are read from where it starts and
stepped through to its message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

__all__ = ["Place", "message_line"]

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\r\n]*")
# The message a field path of the adapter names: `simulations[3].messages[4].role` → 4.
_MESSAGE = re.compile(r"^simulations\[\d+\]\.messages\[(\d+)\]")


class Place(BaseModel):
    """Where a simulation starts: its file, the byte offset of its `{` there and the line that byte is on."""

    file: str
    offset: int
    line: int


def message_line(place: Any, field: str | None) -> int | None:
    """The line of the file where the message `field` names (`simulations[3].messages[4]…`) starts, or None: no
    message is named, `place` is not a `Place`'s fields, or the file no longer holds that message where it did.

    Raises nothing: a line that cannot be found leaves the simulation's own line said.
    """
    found = _MESSAGE.match(field or "")
    if found is None or not isinstance(place, dict):
        return None
    try:
        where = Place.model_validate(place)
        with open(where.file, "rb") as fh:
            fh.seek(where.offset)
            text = fh.read().decode("utf-8", "surrogateescape")
        at = _item(text, _member(text, 0, "messages"), int(found.group(1)))
    except (OSError, ValueError, RecursionError):
        return None
    return None if at is None else where.line + text.count("\n", 0, at)


def _skip(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _member(text: str, pos: int | None, key: str) -> int | None:
    """Where the value of the object's `key` starts (its last one, as JSON decoding keeps the last)."""
    if pos is None or text[pos : pos + 1] != "{":
        return None
    pos, found = _skip(text, pos + 1), None
    while text[pos : pos + 1] == '"':
        name, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos : pos + 1] != ":":
            return None
        pos = _skip(text, pos + 1)
        found = pos if name == key else found
        pos = _skip(text, _DECODER.raw_decode(text, pos)[1])
        if text[pos : pos + 1] != ",":
            break
        pos = _skip(text, pos + 1)
    return found


def _item(text: str, pos: int | None, index: int) -> int | None:
    """Where item `index` of the array starting at `pos` starts."""
    if pos is None or text[pos : pos + 1] != "[":
        return None
    pos = _skip(text, pos + 1)
    for _ in range(index):
        pos = _skip(text, _DECODER.raw_decode(text, pos)[1])
        if text[pos : pos + 1] != ",":
            return None
        pos = _skip(text, pos + 1)
    return pos if text[pos : pos + 1] not in ("", "]") else None
