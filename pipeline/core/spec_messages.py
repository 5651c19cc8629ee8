"""What a metric's parameter errors say, in the config's words: where the mistake is and what to write instead."""

from __future__ import annotations

import re
from typing import Any

from tracejudge.core import suggest

__all__ = ["param_error"]

_SEQUENCE_TYPES = frozenset({"tuple_type", "list_type", "set_type", "frozen_set_type"})


def param_error(loc: tuple[Any, ...], prefix: str, err: Any, cls: type) -> tuple[tuple[Any, ...], str]:
    """`(loc, message)` of one parameter error. A value a class parses itself (promptfoo's `value`) says where inside it
    the mistake is (`ctx.where`: `value.mode`, `value.steps[1].name`): the loc goes down to that key, so a config error
    names the line of the key at fault, not the `value:` line above a block of them, and the message says it once."""
    ctx = err.get("ctx") or {}
    where, message = ctx.get("where"), ctx.get("message")
    parts = re.findall(r"[^.\[\]]+", where) if isinstance(where, str) else []
    if parts and isinstance(message, str) and loc and str(loc[-1]) == parts[0]:
        return (*loc, *parts[1:]), prefix + message
    return loc, prefix + _param_message(err, cls)


def _param_message(err: Any, cls: type) -> str:
    """What one pydantic error of a metric's parameters says, in the config's words."""
    if err["type"] in _SEQUENCE_TYPES:  # (pydantic says "a valid tuple" of a field a config writes as a list)
        got = err.get("input")
        return "Input should be a list" + (f", such as [{got}]" if isinstance(got, str) else "")
    if err["type"] == "missing":
        return "required parameter is missing"
    if err["type"] == suggest.PAIRED:
        return str(err["msg"])
    return ("unknown parameter" if err["type"] == "extra_forbidden" else err["msg"]) + suggest.error_hint(err, cls)
