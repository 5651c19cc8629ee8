"""The labels a trace store keeps on a trace, as the readers of those stores put them in the case's metadata.

Langfuse keeps scores on a trace, Phoenix annotations on its spans and on the trace, MLflow assessments; people
make them (an annotation queue, a reviewer in the UI), and so do evaluators and scripts. Formats `langfuse`,
`phoenix`, `mlflow` and `mlflow-server` read a trace's into one shape:

- `metadata.labels.<name>`: the value of the label `<name>` that a person made — a number, `true`/`false` or a
  category's text, as the store holds it; with several of one name on the case (two annotators, or the traces of one
  conversation), the list of their values, oldest first;
- `metadata.label_sources.<name>`: who made it, `human` (a list beside a list);
- `metadata.other_labels.<name>` / `metadata.other_label_sources.<name>`: the same for those the store says no person
  made (`llm`, `code`, `api`): kept apart, so `judge.labels.fields` reads a person's only unless it names these.

tracejudge's own verdicts, written back by `tracejudge export --to phoenix|mlflow`, are none of these: a label
marked as an export's (`ours`) is dropped, since calibrating the judge against what it said before proves nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["HUMAN", "StoreLabel", "label_metadata", "merge_label_metadata", "plain_value"]

HUMAN = "human"
_KEYS = (("labels", "label_sources"), ("other_labels", "other_label_sources"))


@dataclass(frozen=True)
class StoreLabel:
    """One label a store holds on a trace: `name`, `value` (bool, float or text), `source` (`human`, `llm`, `code` or `api`),
    `when` (the store's time of making it, ISO text: the order of several of one name)."""

    name: str
    value: bool | float | str
    source: str
    when: str = ""


def plain_value(raw: Any) -> bool | float | str | None:
    """A label's value as kept: a bool, a finite number (as float), or text; None for anything else (none, a list, a mapping,
    a NaN), which is no label."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, (int, float)):
        return float(raw) if math.isfinite(raw) else None
    if isinstance(raw, str) and raw.strip():
        return raw
    return None


def label_metadata(found: list[StoreLabel]) -> dict[str, Any]:
    """The metadata keys (`labels`, `label_sources`, `other_labels`, `other_label_sources`) for `found`, each present only
    when it has a label: one value per name, or the list of them, oldest first (module docstring)."""
    out: dict[str, Any] = {}
    for (values_key, sources_key), human in zip(_KEYS, (True, False)):
        values: dict[str, list[Any]] = {}
        sources: dict[str, list[str]] = {}
        for lab in sorted((x for x in found if (x.source == HUMAN) == human), key=lambda x: x.when):
            values.setdefault(lab.name, []).append(lab.value)
            sources.setdefault(lab.name, []).append(lab.source)
        if values:
            out[values_key] = {n: v[0] if len(v) == 1 else v for n, v in values.items()}
            out[sources_key] = {n: s[0] if len(s) == 1 else s for n, s in sources.items()}
    return out


def merge_label_metadata(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One case's label keys from its traces' (`label_metadata` of each, in turn order): the values of a name on several
    traces put in one list."""
    out: dict[str, Any] = {}
    for keys in _KEYS:
        merged: dict[str, tuple[list[Any], list[Any]]] = {}
        for part in parts:
            values, sources = part.get(keys[0]) or {}, part.get(keys[1]) or {}
            for name, value in values.items():
                vs, ss = merged.setdefault(name, ([], []))
                vs.extend(value if isinstance(value, list) else [value])
                source = sources.get(name)
                ss.extend(source if isinstance(source, list) else [source])
        if merged:
            out[keys[0]] = {n: v[0] if len(v) == 1 else v for n, (v, _) in merged.items()}
            out[keys[1]] = {n: s[0] if len(s) == 1 else s for n, (_, s) in merged.items()}
    return out
