"""The JSON kind of a parsed value, in the words an error message uses."""

from __future__ import annotations

from typing import Any

__all__ = ["json_kind"]

_NAMES = {str: "a string", dict: "an object", list: "a list"}


def json_kind(value: Any) -> str:
    """The JSON kind of a parsed value, as an error names it (`a string`, `null`, `a number`, `a boolean`, `an object`,
    `a list`; another Python type by its name). Never the value itself: an error quoting it could echo anything."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return _NAMES.get(type(value), type(value).__name__)
