"""The labels a trace store keeps on a trace, as the readers of those stores put them in the case's metadata.

Langfuse keeps scores on a trace, Phoenix annotations on its spans and on the trace, MLflow assessments; people
make them (an annotation queue, a reviewer in the UI), and so do evaluators and scripts. Formats `langfuse`,
`phoenix`, `mlflow` and `mlflow-server` read a trace's into one shape:

- `metadata.labels.<name>`: the value of the label `<name>` that a person made — a number, `true`/`false` or a
  category's text, as the store holds it; with several of one name on the case (two annotators, or the traces of one
  conversation) that all give the same value, that value: they agree, and the label is theirs; when they differ, the
  list of their values, oldest first (a conflict `judge.labels.fields` names and takes no label from);
- `metadata.label_sources.<name>`: who made it, `human`; beside several that agreed, the list of their sources, one
  each (`["human", "human"]`: two agreed), and beside a list of values the list of its sources;
- `metadata.other_labels.<name>` / `metadata.other_label_sources.<name>`: the same for those the store says no person
  made (`llm`, `code`, `api`): kept apart, so `judge.labels.fields` reads a person's only unless it names these. A
  source the reader does not know (a kind the store added since) is no person's either: its labels are kept here,
  their source `unknown:<the store's word>` (`unknown` when it names none), and the first of each kind is warned about
  (`unknown_source`);
- `metadata.label_details.<name>` / `metadata.other_label_details.<name>`: present only where a store keeps more than the
  value (an OTel evaluation result's explanation, its text label beside the number kept): one object per label, in the
  order of the sources (`{}` for a label without any).

tracejudge's own verdicts, written back by `tracejudge export --to phoenix|mlflow`, are none of these: a label
marked as an export's (`ours`) is dropped, since calibrating the judge against what it said before proves nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.said_once import first_time

__all__ = ["HUMAN", "StoreLabel", "label_metadata", "merge_label_metadata", "plain_value", "unknown_source"]

HUMAN = "human"
_KEYS = (("labels", "label_sources"), ("other_labels", "other_label_sources"))
_DETAILS = {"labels": "label_details", "other_labels": "other_label_details"}
log = get_logger("tracejudge.extract.labels")


@dataclass(frozen=True)
class StoreLabel:
    """One label a store holds on a trace: `name`, `value` (bool, float or text), `source` (`human`, `llm`, `code` or `api`),
    `when` (the store's time of making it, ISO text: the order of several of one name), `details` (what the store keeps
    beside the value, `label_details`: e.g. `{"explanation": ...}`; empty for most stores)."""

    name: str
    value: bool | float | str
    source: str
    when: str = ""
    details: tuple[tuple[str, Any], ...] = ()


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


def unknown_source(store: str, raw: Any, known: str) -> str:
    """The source of a label whose maker's kind `raw` the reader of `store` does not know (not among `known`, as the store
    writes them): `unknown:<raw>` (`unknown` when it names none), which keeps it among `other_labels`, never a person's.
    The first of each kind is warned about, once per process: dropping it said nothing, reading it as a person's would
    be a guess."""
    word = str(raw).strip() if raw is not None and not isinstance(raw, (dict, list)) else ""
    source = f"unknown:{word}" if word else "unknown"
    if first_time("store_label_source", f"{store}:{word}"):
        log.warning(f"{store}: a label made by {f'{word!r}' if word else 'no named source'}, a kind tracejudge does not know "
                    f"({known} are): kept in `metadata.other_labels` with source {source!r}, not read as a person's; name it in "
                    "`judge.labels.fields` (`metadata.other_labels.<name>`) to use it")
    return source


def _same(a: Any, b: Any) -> bool:
    """Whether two labels' values say the same, as the store holds them: equal, and of one kind (`true` is not `1`)."""
    return type(a) is type(b) and a == b


def _shaped(values: list[Any], sources: list[Any]) -> tuple[Any, Any]:
    """`(value, source)` of one name's labels: the one's; of several that agree, their value and the list of their
    sources (how many agreed); of several that differ, the two lists (module docstring)."""
    if len(values) == 1:
        return values[0], sources[0]
    if all(_same(v, values[0]) for v in values[1:]):
        return values[0], list(sources)
    return list(values), list(sources)


def label_metadata(found: list[StoreLabel]) -> dict[str, Any]:
    """The metadata keys (`labels`, `label_sources`, `other_labels`, `other_label_sources`) for `found`, each present only
    when it has a label: one value per name (of several, the value they agree on, with the list of their sources), or
    the list of values that differ, oldest first (module docstring); `label_details` / `other_label_details` only for
    names some label of which has `details`."""
    out: dict[str, Any] = {}
    for (values_key, sources_key), human in zip(_KEYS, (True, False)):
        values: dict[str, list[Any]] = {}
        sources: dict[str, list[str]] = {}
        details: dict[str, list[dict[str, Any]]] = {}
        for lab in sorted((x for x in found if (x.source == HUMAN) == human), key=lambda x: x.when):
            values.setdefault(lab.name, []).append(lab.value)
            sources.setdefault(lab.name, []).append(lab.source)
            details.setdefault(lab.name, []).append(dict(lab.details))
        if values:
            shaped = {n: _shaped(v, sources[n]) for n, v in values.items()}
            out[values_key] = {n: v for n, (v, _) in shaped.items()}
            out[sources_key] = {n: s for n, (_, s) in shaped.items()}
            if kept := {n: d for n, d in details.items() if any(d)}:
                out[_DETAILS[values_key]] = kept
    return out


def merge_label_metadata(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One case's label keys from its traces' (`label_metadata` of each, in turn order): the labels of a name on several
    traces read as one trace's of that name (the value they agree on with all their sources, else the list of values)."""
    out: dict[str, Any] = {}
    for keys in _KEYS:
        merged: dict[str, tuple[list[Any], list[Any]]] = {}
        for part in parts:
            values, sources = part.get(keys[0]) or {}, part.get(keys[1]) or {}
            for name, value in values.items():
                vs, ss = merged.setdefault(name, ([], []))
                source = sources.get(name)
                given = source if isinstance(source, list) else [source]
                # (a value a trace's labels agreed on stands for each of them: one per source)
                vs.extend(value if isinstance(value, list) else [value] * len(given))
                ss.extend(given)
        if merged:
            shaped = {n: _shaped(v, s) for n, (v, s) in merged.items()}
            out[keys[0]] = {n: v for n, (v, _) in shaped.items()}
            out[keys[1]] = {n: s for n, (_, s) in shaped.items()}
    return out
