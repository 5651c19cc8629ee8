"""Breakdown group labels: the text a tag or metadata value is grouped under, and the groups the fold names itself.

A result with no value for a `group_by` field falls in `(missing)`; values past `aggregate.max_groups` fall in
`(other)`. A real value that reads as one of those labels is given one more pair of parentheses (`group_label`),
so no value's group merges with them, and `group_value` reads a label back (the viewer links a tag's group to
the cases carrying the tag).

A metadata value that is not text is labelled with its JSON (`1`, `true`, `null`), which the text of another
value can read as (`"1"`). The fold keeps such values apart (`metadata_key`), and a summary shows the text in
JSON quotes (`"1"`) only where both are in one breakdown (`shown_labels`): every other value keeps its label.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = ["MISSING", "OTHER", "group_label", "group_value", "metadata_key", "natural_label", "shown_labels"]

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


def _reads_as_json(text: str) -> bool:
    """Whether `text` is what `json.dumps` writes for some value other than a text, or is a JSON text literal (`"1"`)."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, str) or json.dumps(value, sort_keys=True) == text


def metadata_key(value: Any) -> str:
    """The fold's key for a metadata value: one key per value, whatever its type, depending on the value alone.

    A value that is not text: its JSON (`1`, `true`, `[1, 2]`). A text that reads as such JSON (`"1"`, `"true"`), or
    as a JSON text literal: that text in JSON quotes (`'"1"'`), which no other value's key can be. Any other text:
    `group_label(value)`. `natural_label` gives back the label each shows when nothing shares it.
    """
    if not isinstance(value, str):
        return json.dumps(value, sort_keys=True)
    return json.dumps(value) if _reads_as_json(value) else group_label(value)


def natural_label(key: str) -> str:
    """The label a metadata key shows when no other group of its breakdown shows the same (`'"1"'` → `1`)."""
    if key[:1] == '"':
        try:
            value = json.loads(key)
        except ValueError:
            return key  # a text that merely starts with a quote is its own key
        if isinstance(value, str):
            return value
    return key


def shown_labels(keys: Iterable[str]) -> dict[str, str]:
    """The labels of one metadata breakdown's groups, by key: each group's `natural_label`, but its key for a
    group whose natural label another group shows too (the text `"1"` beside the number 1); all distinct."""
    shown = {k: natural_label(k) for k in keys}
    while True:
        seen = Counter(shown.values())
        shared = [k for k, label in shown.items() if seen[label] > 1 and label != k]
        if not shared:
            return shown  # (keys are distinct, so labels that are all keys or unshared are distinct)
        for k in shared:
            shown[k] = k
