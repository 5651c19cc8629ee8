"""Breakdown group labels: the text a tag or metadata value is grouped under, and the groups the fold names itself.

A result with no value for a `group_by` field falls in `(missing)`; values past `aggregate.max_groups` fall in
`(other)`. A real value that reads as one of those labels is given one more pair of parentheses (`group_label`),
so no value's group merges with them, and `group_value` reads a label back (the viewer links a tag's group to
the cases carrying the tag).
"""

from __future__ import annotations

__all__ = ["MISSING", "OTHER", "group_label", "group_value"]

OTHER = "(other)"
MISSING = "(missing)"
_RESERVED = frozenset({"missing", "other"})  # the words of the labels the fold gives groups of its own


def group_label(value: str) -> str:
    """The breakdown label of a tag or of a metadata text value: `value` itself, unless it reads as a label the fold
    gives groups of its own (`(missing)`: results without the field; `(other)`: values past `max_groups`).

    Such a value, and any made of one in more pairs of parentheses (`((other))`), gets one more pair
    (`((missing))`): so no value's group merges with those, and a label depends on its value alone (the same in
    every shard and after a resume).
    """
    k = len(value) - len(value.lstrip("("))
    if k and len(value) - len(value.rstrip(")")) == k and value[k:-k] in _RESERVED:
        return f"({value})"
    return value


def group_value(label: str) -> str | None:
    """The tag or text value the breakdown label `label` stands for (`group_label`'s inverse); None for the groups the
    fold names itself (`(missing)`, `(other)`), which stand for no one value."""
    if label in (MISSING, OTHER):
        return None
    k = len(label) - len(label.lstrip("("))
    if k > 1 and len(label) - len(label.rstrip(")")) == k and label[k:-k] in _RESERVED:
        return label[1:-1]
    return label
