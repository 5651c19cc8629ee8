"""A config flattened to dotted keys, and a difference between two of them shown in one short line (`manifest.diff`)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MISSING", "flatten", "moved_items", "show", "subtree", "type_first", "whole"]

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


def _identity(item: Any) -> Any:
    """What results key a metric by: its `name`, else its `type` (None for an item that is not a metric). One key, not
    which of the two gave it: `ToolCalls` unnamed and one named `ToolCalls` write the same scores."""
    if not isinstance(item, dict):
        return None
    return item.get("name") or item.get("type")


def _changes(old: Any, new: Any) -> str:
    """The parameters that differ between two items, `key: old → new` each, `; `-joined (`arguments: "exact" → "subset"`)."""
    a, b = flatten(old, "", {}), flatten(new, "", {})
    return "; ".join(f"{k}: {show(a.get(k, MISSING))} → {show(b.get(k, MISSING))}"
                     for k in sorted(set(a) | set(b)) if a.get(k, MISSING) != b.get(k, MISSING))


def moved_items(old: Any, new: Any, key: str) -> tuple[list[str], set[int], set[int]]:
    """The lines for list `key` (`metrics`) when an item of `old` is in `new` at another position: `(lines, old indices,
    new indices)`, the indices those lines tell of; `([], set(), set())` when none moved.

    A moved item is one line (`config metrics.0 → metrics.1: {"type": "ToolCalls", …} moved, the same metric at
    another position`), not one per parameter that differs between the two items now at each position; so is an
    item on one side only (added or removed), as `whole` gives it. An item moved and changed, told by what results
    key it by (its `name`, else its `type`, the only one of the list so named on either side), is one line too,
    naming what changed (`… moved, and changed: arguments: "exact" → "subset"`), not one removed and one added. An
    item changed in place (both sides have an item at that index, neither found elsewhere) is left out, for its keys
    to be compared one by one.
    """
    if not (isinstance(old, list) and isinstance(new, list)):
        return [], set(), set()
    free = list(range(len(new)))
    pairs: dict[int, int] = {}
    for i, item in enumerate(old):
        # (its own position first: of two equal items, the one that stayed is not called moved)
        j = i if i in free and new[i] == item else next((j for j in free if new[j] == item), None)
        if j is not None:
            pairs[i] = j
            free.remove(j)
    # Then an item left on each side that results key alike, at another position: the same metric, moved and changed.
    left = [i for i in range(len(old)) if i not in pairs]
    for i in left:
        ident = _identity(old[i])
        same = [j for j in free if ident is not None and _identity(new[j]) == ident]
        if len(same) == 1 and same[0] != i and sum(_identity(old[k]) == ident for k in left) == 1:
            pairs[i] = same[0]
            free.remove(same[0])
    if all(i == j for i, j in pairs.items()):
        return [], set(), set()
    lines = []
    for i, j in sorted(pairs.items()):
        if i == j:
            continue
        head = f"config {key}.{i} → {key}.{j}: {show(type_first(old[i]))} moved"
        lines.append(f"{head}, the same metric at another position" if old[i] == new[j] else f"{head}, and changed: {_changes(old[i], new[j])}")
    removed = [i for i in range(len(old)) if i not in pairs and i not in free]
    added = [j for j in free if j >= len(old) or j in pairs]
    lines += [f"config {key}.{i}: {show(type_first(old[i]))} → (absent)" for i in removed]
    lines += [f"config {key}.{j}: (absent) → {show(type_first(new[j]))}" for j in added]
    return lines, set(pairs) | set(removed), set(pairs.values()) | set(added)
