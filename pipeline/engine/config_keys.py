"""A config flattened to dotted keys, and a difference between two of them shown in one short line (`manifest.diff`)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MISSING", "flatten", "show", "subtree", "type_first", "whole"]

MISSING = object()
"""A key one side of a difference does not have."""


def flatten(value: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    """`out` with each leaf of `value` under its dotted key (`metrics.0.type`); an empty dict or list is a leaf."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            flatten(v, f"{prefix}.{i}", out)
    else:
        out[prefix] = value
    return out


def show(value: Any) -> str:
    """`value` as JSON cut to 60 characters; `(absent)` for `MISSING`."""
    text = json.dumps(value) if value is not MISSING else "(absent)"
    return text if len(text) <= 60 else text[:57] + "..."


def whole(key: str, present: dict[str, Any], absent: dict[str, Any]) -> str | None:
    """The shortest prefix of `key` (a flattened dotted key of `present`) under which `absent` holds nothing, such as
    `metrics.1` for a metric one side has and the other not; None when that is `key` itself (one value differs)."""
    parts = key.split(".")
    for n in range(1, len(parts)):
        prefix = ".".join(parts[:n])
        if not any(k == prefix or k.startswith(prefix + ".") for k in absent):
            return prefix
    return None


def subtree(tree: Any, dotted: str) -> Any:
    """The value at a flattened key's prefix; `MISSING` when the dots do not lead there (a key holding a dot itself,
    such as a price table's `gpt-4.1`)."""
    try:
        for part in dotted.split("."):
            tree = tree[int(part)] if isinstance(tree, list) else tree[part]
    except (KeyError, IndexError, ValueError, TypeError):
        return MISSING
    return tree


def type_first(value: Any) -> Any:
    """A metric shown whole starts with its `type` (and `name`), so the cut at 60 characters keeps what it is; its
    parameters left unset (`null`) are left out."""
    if isinstance(value, dict) and "type" in value:
        return {k: v for k, v in ({k: value[k] for k in ("type", "name") if k in value} | value).items() if v is not None}
    return value
