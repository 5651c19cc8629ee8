"""Reference labels for judge verdicts: read from a JSONL or CSV file, or from a field of the results.

A label belongs to one (case, metric) and, optionally, one trial:

- JSONL: one object per line,
  `{"case_id": "3", "metric": "TaskCompletion", "label": true}`, optional `"trial": 0` (or a JSON array of them);
- CSV (`.csv`, `.tsv`, or a file whose first line is such a header): a header row with the columns `case_id`,
  `metric`, `label` (and optionally `trial`), separated by `,`, `;` or tabs (`label_rows` says how spreadsheets'
  files are read);
- a field of the results (`LabelsConfig.fields`, `--labels-field METRIC=PATH`):
  `TaskCompletion=metadata.reward` reads each result's `metadata.reward` as
  the label of its `TaskCompletion` verdict (τ-bench's reward is in the case
  metadata); a key holding a dot is written in brackets,
  `metadata.labels["correct.v2"]` (`core.field_paths`, which the dotted form
  also finds it by). A field holding a list (the labels several reviewers
  gave one case in a trace store) is one label when they all agree, and a
  conflict, named with their values, when they do not.

A label is `true`/`false` or a number, or a word `yes`/`no`, `pass`/`fail`, `true`/`false` (any case); spaces
around a case id or metric are dropped. Every message names a label as its source wrote it (`yes`, `PASS`, `4.0`,
`0,5`: `Label.text`), not as it was read (`true`, `4`). A `trial` is a whole number >= 0 (`0.7`, `true` or `-1` are not trials). A
line that cannot be read is left out and named (`file:line: field: problem`) — one bad line never stops a
calibration. The file is UTF-8 (a byte-order mark at its start is dropped); a line holding a byte that is not UTF-8
is named as one that cannot be read, with the byte's line and column, and a UTF-16 or UTF-32 file (Excel's "Unicode
text") is refused whole, naming its encoding.

One label per (case, metric, trial): a second label with the same value is
counted once and noted; a second label with another value is a conflict —
which one is right cannot be known, and keeping either would make the result
depend on the order of the lines — so every label of that key is left out and
each later one is named (`file:line: label: … conflicts with line N …`). A label
for one trial that differs from its case's label (no `trial`) is no conflict: it
answers its trial, the case's label the others; it is named too (`… differs
from line N's … for the whole case`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracejudge.core.errors import ConfigError
from tracejudge.core.field_paths import dig, parse_path
from tracejudge.core.suggest import did_you_mean
from tracejudge.stages.judge.label_rows import DECIMAL_COMMA, WRITTEN, label_rows
from tracejudge.stages.load.encoding import BOM, wide_encoding

__all__ = ["Label", "LabelSet", "as_written", "field_labels", "label_value", "load_label_file", "parse_field_spec"]

_WORDS = {"true": True, "yes": True, "pass": True, "false": False, "no": False, "fail": False}


@dataclass(frozen=True)
class Label:
    """One reference label: `value` is a bool or a finite float; `trial` `None` holds for every trial; `where` names its source;
    `text` is the label as its source wrote it (`yes`, `4.0`; `as_written`), empty when not known (then `value` is shown)."""

    case_id: str
    metric: str
    value: bool | float
    trial: int | None = None
    where: str = ""
    text: str = ""


@dataclass
class LabelSet:
    """Labels, one per (case, metric, trial), plus the lines that could not be read or repeat or conflict with another
    (`problems`, each `file:line: field: …`); made with repeated keys, it resolves them as the module doc says."""

    labels: list[Label]
    problems: list[str]
    unreadable: int = 0  # lines or fields that held no label at all (named among `problems`), which `labels` cannot count

    def __post_init__(self) -> None:
        """Leaves one label per key (see the module doc): repeats counted once, conflicting keys left out, each named.

        Made again from a set already resolved (labels of several sources put together), it adds no note twice.
        """
        first: dict[tuple[str, str, int | None], Label] = {}
        conflicting = {(lab.case_id, lab.metric, lab.trial) for lab in self.labels if _differs_from_first(lab, first)}
        first.clear()
        notes: list[str] = []
        for lab in self.labels:
            key = (lab.case_id, lab.metric, lab.trial)
            was = first.setdefault(key, lab)
            if was is lab:
                continue
            same = float(lab.value) == float(was.value)  # `true` beside 1 says the same
            trial = "" if lab.trial is None else f" trial {lab.trial}"
            what = f"case {lab.case_id!r} metric {lab.metric!r}{trial}"
            if same and key in conflicting:  # (the first line's value, in conflict with another line before or after it)
                notes.append(f"{lab.where}: label: repeats {_place(was, lab)} for {what} (same label {_shown(lab)}), "
                             "which conflicts with another label: left out with it")
            elif same:
                notes.append(f"{lab.where}: label: repeats {_place(was, lab)} for {what} (same label {_shown(lab)}): counted once")
            else:
                notes.append(f"{lab.where}: label: {_shown(lab)} conflicts with {_place(was, lab)}'s {_shown(was)} "
                             f"for {what}: both left out")
        # A trial's label takes its trial from the case's label (README): said when they differ, as it is no repeat.
        # (Not when either is left out for a conflict: then the case's label, or none, answers the trial.)
        for (case_id, metric, trial), lab in first.items():
            whole = first.get((case_id, metric, None)) if trial is not None else None
            if (whole is not None and float(whole.value) != float(lab.value) and (case_id, metric, None) not in conflicting
                    and (case_id, metric, trial) not in conflicting):
                notes.append(f"{lab.where}: label: {_shown(lab)} for case {case_id!r} metric {metric!r} trial {trial} differs "
                             f"from {_place(whole, lab)}'s {_shown(whole)} for the whole case: trial {trial} takes this one")
        self.labels = [lab for key, lab in first.items() if key not in conflicting]
        self.problems = [*self.problems, *(n for n in notes if n not in self.problems)]

    def lookup(self) -> dict[tuple[str, str, int | None], Label]:
        """Labels keyed by `(case_id, metric, trial)` (one per key: duplicates were resolved when the set was made)."""
        return {(lab.case_id, lab.metric, lab.trial): lab for lab in self.labels}


def _differs_from_first(lab: Label, first: dict[tuple[str, str, int | None], Label]) -> bool:
    """Whether `lab`'s value differs from the first label of its key (`first`, filled as the labels are read)."""
    was = first.setdefault((lab.case_id, lab.metric, lab.trial), lab)
    return was is not lab and float(lab.value) != float(was.value)


def _shown(lab: Label) -> str:
    return lab.text or (json.dumps(lab.value) if isinstance(lab.value, bool) else f"{lab.value:g}")


def as_written(raw: Any) -> str:
    """A label's raw value as its source wrote it: a text as it is, spaces around it dropped (`yes`, `PASS`, `4.0`); a
    JSON value as JSON (`true`, `4.0`, `3`)."""
    return raw.strip() if isinstance(raw, str) else json.dumps(raw, default=str)


def _place(was: Label, lab: Label) -> str:
    """Where `was` is, said from `lab`'s place: `line N` in the same file, else its whole `where`."""
    file, _, line = was.where.rpartition(":")
    return f"line {line}" if file and lab.where.rpartition(":")[0] == file and line.isdigit() else (was.where or "an earlier label")


def label_value(raw: Any) -> bool | float:
    """A label as a bool or a finite float; raises `ValueError` saying what was expected (its caller names the field)."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, (int, float)):
        if not math.isfinite(raw):
            raise ValueError(f"{raw!r} is not a finite number")
        return float(raw)
    if isinstance(raw, str):
        word = raw.strip().lower()
        if word in _WORDS:
            return _WORDS[word]
        try:
            return label_value(float(word))
        except ValueError:
            pass
        if DECIMAL_COMMA.fullmatch(word):
            # (Only a CSV separated by `;` or tabs, where Excel writes decimals so, reads it as a decimal: elsewhere `1,5`
            # may be two cells run together or a thousands mark, and a guess would be a wrong number said nowhere.)
            raise ValueError(f"{raw!r} has a decimal comma: write {word.replace(',', '.')}")
    raise ValueError(f"{raw!r} is not a label: expected true/false (yes/no, pass/fail) or a number")


def _one(row: dict[str, Any], where: str) -> Label:
    for key in ("case_id", "metric", "label"):
        if key not in row:  # (a JSON object: a CSV's header was checked)
            hint = did_you_mean(key, [str(k) for k in row], n=1, typo=True)
            raise ValueError(f"{key}: missing (the object has {', '.join(map(repr, row)) or 'no key'}{f'; {hint}' if hint else ''})")
        if row[key] is None or (isinstance(row[key], str) and not row[key].strip()):
            raise ValueError(f"{key}: missing")
    trial = _trial(row.get("trial"))
    try:
        value = label_value(row["label"])
    except ValueError as exc:
        raise ValueError(f"label: {exc}") from None
    # Spaces around a case id or a metric are a spreadsheet's, not part of the name: `c1 ` matched no case.
    return Label(str(row["case_id"]).strip(), str(row["metric"]).strip(), value, trial, where, as_written(row.get(WRITTEN, row["label"])))


def _trial(raw: Any) -> int | None:
    """A label's `trial`: `None` when absent or empty, else a whole number >= 0; raises `ValueError` (`trial: …`) otherwise.
    A bool is not a trial (JSON's `true` is not 1 here), nor is `0.7` trial 0."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, bool):
        raise ValueError(f"trial: {json.dumps(raw)} is a boolean, not a trial number")
    number = raw
    if isinstance(raw, str):
        try:
            number = float(raw.strip())
        except ValueError:
            raise ValueError(f"trial: {raw!r} is not an integer") from None
    if isinstance(number, float):
        if not number.is_integer():
            raise ValueError(f"trial: {raw!r} is not a whole number")
        number = int(number)
    if not isinstance(number, int):
        raise ValueError(f"trial: {raw!r} is not an integer")
    if number < 0:
        raise ValueError(f"trial: {raw} is negative")
    return number


def load_label_file(path: Path) -> LabelSet:
    """Labels from a CSV or JSON Lines file (`label_rows` tells which; see the module doc): one per (case, metric,
    trial), and `problems` in line order, each `file:line: field: problem`.

    Raises `ConfigError` when the file cannot be read, or a CSV lacks a required column.
    """
    path = Path(path)
    labels: list[Label] = []
    problems: list[str] = []
    try:
        with open(path, "rb") as raw:
            head = raw.read(4096)
        if (wide := wide_encoding(head)) is not None:  # (Excel's "Unicode text" is UTF-16: every line would be a problem)
            raise ConfigError(f"{path}: the labels file is not UTF-8 text: {wide}")
        # A byte-order mark (Excel's "CSV UTF-8", Notepad) is dropped: it made the first column `\ufeffcase_id`. A byte
        # that is not UTF-8 (a Latin-1 `é`) costs its line, named, not the whole file with a traceback.
        with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as fh:
            for where, row in label_rows(path, fh, len(BOM) if head.startswith(BOM) else 0):
                try:
                    if isinstance(row, str):
                        raise ValueError(row)
                    labels.append(_one(row, where))
                except ValueError as exc:
                    problems.append(f"{where}: {exc}")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the labels file ({exc.strerror or exc})") from None
    got = LabelSet(labels, [], len(problems))  # its problems: the repeated and conflicting labels, put among the others in line order
    got.problems = sorted(problems + got.problems, key=lambda p: int(p[len(str(path)) + 1:].partition(":")[0]))
    return got


def parse_field_spec(spec: str) -> tuple[str, str]:
    """`METRIC=DOTTED.PATH` (e.g. `TaskCompletion=metadata.reward`) as `(metric, path)`; raises `ConfigError`, also for a
    path `core.field_paths` cannot read."""
    metric, sep, path = spec.partition("=")
    if not sep or not metric.strip() or not path.strip():
        raise ConfigError(f"--labels-field {spec!r}: expected METRIC=FIELD, e.g. TaskCompletion=metadata.reward")
    try:
        parse_path(path.strip())
    except ValueError as exc:
        raise ConfigError(f"--labels-field {spec!r}: {exc}") from None
    return metric.strip(), path.strip()


def _field_value(raw: Any, res: dict[str, Any]) -> tuple[bool | float, str]:
    """The label a field holds, and its text as written; raises `ValueError` saying why there is none.

    A list is the labels of one name that several made (two reviewers in a trace store, the traces of one
    conversation): when every one reads as the same label they agree, and it is theirs; when they differ, which is
    right cannot be known, as with two conflicting lines of a labels file, and the message names the case, its traces
    and each value."""
    if not isinstance(raw, list) or not raw:
        return label_value(raw), as_written(raw)
    try:
        values = [label_value(x) for x in raw]
    except ValueError as exc:
        raise ValueError(f"{as_written(raw)}: {exc}") from None
    if all(float(v) == float(values[0]) for v in values[1:]):
        return values[0], as_written(raw[0])
    meta: dict[str, Any] = res["metadata"] if isinstance(res.get("metadata"), dict) else {}
    traces = next((t for m in meta.values() if isinstance(m, dict) and isinstance(t := m.get("traces"), list) and len(t) > 1), None)
    on = f" (from its traces {', '.join(map(str, traces))})" if traces else ""
    raise ValueError(f"the case's {len(raw)} labels of this name{on} disagree: {', '.join(as_written(x) for x in raw)}; "
                     "none is taken, as with two conflicting lines of a labels file")


def field_labels(results: Iterable[dict[str, Any]], fields: dict[str, str]) -> LabelSet:
    """Labels read from each result record: for `{metric: dotted path}`, the value at that path labels the metric's verdict
    on that (case, trial). A result without the field gives no label; one whose value is not a label is named in `problems`,
    and so is a path `core.field_paths` cannot read (a config checks its paths when it is read), which gives none."""
    labels: list[Label] = []
    problems: list[str] = []
    readable: dict[str, str] = {}
    for metric, path in fields.items():
        try:
            parse_path(path)
            readable[metric] = path
        except ValueError as exc:
            problems.append(f"{metric}={path}: {exc}")
    results = list(results)
    found: set[str] = set()
    for res in results:
        for metric, path in readable.items():
            raw = dig(res, path)  # (`core.field_paths`: a key holding a dot in brackets)
            if raw is None:
                continue
            found.add(metric)
            where = f"case {res.get('case_id')!r} {path}"
            try:
                value, text = _field_value(raw, res)
                labels.append(Label(str(res["case_id"]), metric, value, int(res.get("trial", 0)), where, text))
            except ValueError as exc:
                problems.append(f"{where}: label: {exc}")
    unreadable = len(problems)
    # A path no result has (`metadata.rewrd`) gives no label and so no problem of any label: calibrate ended "no label was
    # read (see the problems above)" with none above. It is named, with the field it may be a slip for; it is no label
    # line, so not counted among those that held none (`unreadable`).
    for metric, path in readable.items():
        if metric not in found and results:
            hint = did_you_mean(path, _field_paths(results), n=1, typo=True)
            problems.append(f"{metric}={path}: no result of this run has a value there (none of its {len(results)}){f'; {hint}' if hint else ''}")
    return LabelSet(labels, problems, unreadable)


def _field_paths(results: list[dict[str, Any]]) -> set[str]:
    """The dotted paths of the results' fields three levels deep (`metadata.reward`, `metadata.labels.correct`), the
    names a label field has, to suggest one for a path no result has."""
    paths: set[str] = set()

    def walk(node: dict[str, Any], prefix: str, depth: int) -> None:
        for key, value in node.items():
            paths.add(prefix + str(key))
            if isinstance(value, dict) and depth < 3:
                walk(value, f"{prefix}{key}.", depth + 1)

    for res in results[:50]:  # (enough to see a dataset's fields; a large run need not be walked whole)
        walk(res, "", 1)
    return paths
