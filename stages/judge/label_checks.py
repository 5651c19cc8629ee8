"""Labels that cannot be compared with the run's verdicts: for a metric, a case or a trial the run does not have, out of
their metric's range, or of the other kind among a graded metric's labels (`take_mixed_kinds`).

Each is named as a problem (`file:line: field: …`) rather than only counted, so a mistyped metric, case id or trial or a
label of 1.5 on a yes/no metric is found where it was written (`agreement.agreement_block` adds them to `problems`).
A metric written in another case than the run's is read as the run's (`metric_case_read`), and said so among them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracejudge.core.suggest import did_you_mean
from tracejudge.stages.judge.label_grades import yes_no_metric
from tracejudge.stages.judge.labels import Label, LabelSet

if TYPE_CHECKING:
    from tracejudge.stages.judge.agreement import Pair

__all__ = ["metric_case_read", "take_mixed_kinds", "take_out_of_range", "unknown_case", "unknown_cases", "unknown_metrics", "unknown_trials", "unusable_labels",
           "written"]


def unknown_metrics(labels: LabelSet, unknown: dict[str, int], run_metrics: set[str], cases: set[str] | None = None,
                    config_metrics: set[str] | None = None, known: frozenset[str] = frozenset()) -> list[str]:
    """A problem for each labelled metric no result of the run has (`unknown`: its label count), named where its first
    label was written, with the lines of the others in the same file, and the run's metric it may be a slip for.

    When none of the metric's labelled cases is in the run (`cases`: the run's case ids), the run cannot say whether it
    has the metric — `calibrate --labels` judges only the labelled cases, so unknown case ids leave it no result at
    all — and each label is named for its case instead (`unknown_case`), not blamed on its metric. Unless the config
    says (`config_metrics`: `label_grades.metric_keys`) it has no such metric: calibrate then judges none of its cases.
    `known`: case ids of the dataset beside the run's, offered for a slip (`unknown_case`).
    """
    named = []
    metrics = run_metrics | (config_metrics or set())  # (not `known`: a label whose case was a slip was offered a metric)
    for metric, n in unknown.items():
        mine = [lab for lab in labels.labels if lab.metric == metric]
        lacked = config_metrics is not None and metric not in metrics
        if cases is not None and mine and not lacked and not any(lab.case_id in cases for lab in mine):
            either = f"; no result of this run has metric {metric!r} either" if run_metrics else ""
            named += [unknown_case(lab, cases, known) + either for lab in mine]
            continue
        wheres = [lab.where for lab in mine]
        file = wheres[0].rpartition(":")[0] if wheres else ""
        lines = [w.rpartition(":")[2] for w in wheres[1:] if file and w.rpartition(":")[0] == file]
        more = f" (also line{'s' if len(lines) > 1 else ''} {', '.join(lines[:5])}{', …' if len(lines) > 5 else ''})" if lines else ""
        hint = did_you_mean(metric, metrics, n=1, typo=True)
        named.append(f"{wheres[0] + ': ' if wheres else ''}metric: {n} label(s) for metric {metric!r}{more}: no result of this run "
                     f"has that metric{f'; {hint}' if hint else ''}")
    return named


def metric_case_read(labels: LabelSet, names: set[str]) -> LabelSet:
    """`labels` with each metric name the run lacks but has in another case (`taskcompletion` for `TaskCompletion`; one
    metric of `names` only) read as that metric, and a note saying so where its first label was written. Header names
    and `yes`/`PASS` are read in any case too; a name two metrics share in another case, or with an exact match, stays
    as written (and is named as a metric the run lacks). The set is made again, so a label now repeating or conflicting
    with one written with the exact name is resolved and named as any other."""
    folded: dict[str, list[str]] = {}
    for name in names:
        folded.setdefault(name.casefold(), []).append(name)
    to: dict[str, str] = {}
    for lab in labels.labels:
        same = folded.get(lab.metric.casefold(), [])
        if lab.metric not in names and len(same) == 1:
            to[lab.metric] = same[0]
    if not to:
        return labels
    notes = []
    for written_as, name in to.items():
        mine = [lab.where for lab in labels.labels if lab.metric == written_as]
        first = f"{mine[0]}: " if mine and mine[0] else ""
        notes.append(f"{first}metric: {len(mine)} label(s) for metric {written_as!r} read as the run's metric {name!r} "
                     "(the names differ only in case)")
    kept = [Label(lab.case_id, to.get(lab.metric, lab.metric), lab.value, lab.trial, lab.where, lab.text) for lab in labels.labels]
    return LabelSet(kept, [*notes, *labels.problems], labels.unreadable)


def unknown_case(lab: Label, cases: set[str], known: frozenset[str] = frozenset()) -> str:
    """The problem of a label whose case is not in the run (`cases`), with the id of the run or of its dataset (`known`,
    when the run judged only some of its cases: `calibrate --labels`) it may be a slip for."""
    # A spreadsheet reads `007` as the number 7, and a case id may be typed in another case: the run's id is offered.
    near = {_loose(c): c for c in sorted(cases | known, reverse=True)}
    what = f"{lab.where}: case_id: no result of this run is case {lab.case_id!r}"
    if _loose(lab.case_id) in near:
        return what + f"; did you mean {near[_loose(lab.case_id)]!r}?"
    return what + ("" if cases else " (the run has no result: none of the labelled cases is in it)")


def unknown_cases(results: list[dict[str, Any]], labels: LabelSet, run_metrics: set[str], known: frozenset[str] = frozenset()) -> list[str]:
    """A problem naming each label (its `file:line`) of a metric the run has for a case no result of the run is: a
    mistyped or stale case id, which would otherwise be only a count (`unmatched`); `known` as for `unknown_case`."""
    cases = {str(r.get("case_id")) for r in results}
    return [unknown_case(lab, cases, known) for lab in labels.labels if lab.metric in run_metrics and lab.case_id not in cases]


def unknown_trials(results: list[dict[str, Any]], labels: LabelSet, run_metrics: set[str]) -> list[str]:
    """A problem naming each label (its `file:line`) of a metric the run has for a trial its case does not have in the run
    (`trial: 5` when the run has trials 0 and 1), which would otherwise be only a count (`unmatched`). A label of a case
    not in the run is named for its case (`unknown_cases`)."""
    trials: dict[str, set[int]] = {}
    for r in results:
        trials.setdefault(str(r.get("case_id")), set()).add(int(r.get("trial", 0) or 0))
    named = []
    for lab in labels.labels:
        have = trials.get(lab.case_id)
        if lab.trial is None or have is None or lab.metric not in run_metrics or lab.trial in have:
            continue
        shown = ", ".join(map(str, sorted(have)))
        named.append(f"{lab.where + ': ' if lab.where else ''}trial: no result of this run is trial {lab.trial} of case {lab.case_id!r} "
                     f"(its trial{'s' if len(have) > 1 else ''} in the run: {shown}; trials count from 0), so the label is unmatched")
    return named


def _loose(case_id: str) -> str:
    if case_id.isdigit():
        return case_id.lstrip("0") or "0"
    return case_id.lower()


def take_out_of_range(pairs: dict[str, list[Pair]], labels: LabelSet, scales: dict[str, tuple[float, float]],
                      pass_fail: set[str] | None = None) -> list[str]:
    """Take out of `pairs` the labels outside their metric's range, and name each (`file:line: label: …`).

    A metric without grades (its verdicts' grade is their value in [0, 1]: a yes/no judge), and a metric whose labels are
    read as pass/fail (`pass_fail`: 0 and 1 on a 1..5 scale, `agreement.read_as_grades`), takes labels in [0, 1]; a
    graded one with a known scale (`scales`) takes labels on that scale. One label of 1.5 on a yes/no metric made the
    whole metric a graded comparison of every 0/1 label with the verdicts' values; the 0 labels of a Rubric scored 1..5
    that README reads as pass/fail were taken out as grades off its scale.
    """
    index = labels.lookup()
    named: list[str] = []
    for metric, got in pairs.items():
        scale = scales.get(metric)
        if metric in (pass_fail or set()):
            lo, hi, scale = 0.0, 1.0, None
        elif scale is not None:
            lo, hi = scale[0], scale[0] + scale[1]
        elif yes_no_metric(got, scale):
            lo, hi = 0.0, 1.0
        else:
            continue  # grades read off the verdicts: their range is not known for certain
        keep = []
        for p in got:
            lab = index.get((p.case_id, metric, p.trial)) or index.get((p.case_id, metric, None))
            line = _off_range(p.label, metric, lo, hi, scale is not None, lab.where if lab else p.case_id, lab.text if lab else "")
            if line is None:
                keep.append(p)
            elif line not in named:  # (a label without a trial pairs with each trial of its case: named once)
                named.append(line)
        got[:] = keep
    return named


def _off_range(label: bool | float, metric: str, lo: float, hi: float, graded: bool, where: str, text: str) -> str | None:
    """The problem of a label outside `lo..hi` (a grade on a `graded` scale, else a yes/no label in 0..1), or between two
    whole grades of a scale of whole grades; `None` when it is in range (`true`/`false` always are)."""
    # On a scale of whole grades a label between two of them (2.5 on 1..5) is no grade either: kept, it left the whole
    # metric without a weighted kappa (which compares whole grades), every other label's agreement with it.
    whole = graded and float(lo).is_integer() and float(hi).is_integer()
    if isinstance(label, bool) or (lo <= label <= hi and (not whole or float(label).is_integer())):
        return None
    what = f"a grade on its scale {lo:g}..{hi:g}" if graded else "a yes/no label (true/false, or a number from 0 to 1)"
    off = "out of range for" if not whole or not lo <= label <= hi else "not a whole grade of"
    return f"{where}: label: {written(label, text)} is {off} metric {metric!r}, which takes {what}"


def unusable_labels(labels: LabelSet, scales: dict[str, tuple[float, float]], yes_no: set[str]) -> dict[tuple[str, str, int | None], str]:
    """The labels no reading of their metric can use, known before any verdict, each keyed `(case_id, metric, trial)`
    with its problem (worded as `take_out_of_range` words it): on a metric of `yes_no`, a number outside 0..1; on one
    of `scales` (`(lowest, span)`), a number neither a grade of the scale nor 0 or 1 (which may be read as pass/fail).
    A metric in neither may grade its verdicts on a scale only they show: its labels are left to `take_out_of_range`.

    `tracejudge calibrate --labels` judges no case whose every label is here: its verdicts could meet no label."""
    out: dict[tuple[str, str, int | None], str] = {}
    for lab in labels.labels:
        if lab.metric in yes_no:
            line = _off_range(lab.value, lab.metric, 0.0, 1.0, False, lab.where or lab.case_id, lab.text)
        elif lab.metric in scales and lab.value not in (0.0, 1.0):  # (`True == 1.0`: true/false stay, as 0 and 1 do)
            lo, span = scales[lab.metric]
            line = _off_range(lab.value, lab.metric, lo, lo + span, True, lab.where or lab.case_id, lab.text)
        else:
            continue
        if line is not None:
            out[(lab.case_id, lab.metric, lab.trial)] = line
    return out


def written(label: bool | float, text: str = "") -> str:
    """A label as its file has it: `text`, as its source wrote it (`yes`, `4.0`: `Label.text`), when known; else
    `true`/`false`, a whole number without `.0` (`3`), another number as it reads (`2.5`)."""
    if text:
        return text
    if isinstance(label, bool):
        return "true" if label else "false"
    return f"{int(label)}" if float(label).is_integer() else f"{label!r}"


def take_mixed_kinds(pairs: dict[str, list[Pair]], labels: LabelSet, graded: dict[str, bool],
                     scales: dict[str, tuple[float, float] | None]) -> tuple[list[str], dict[str, str]]:
    """Take out of `pairs` the labels of the rarer kind among a metric's labels, when its labels mix `true`/`false` with
    numbers it reads as grades (`graded`: the metric's numeric labels alone would be grades, `agreement.read_as_grades`),
    and name each (`file:line: label: …`). `(problems, refused)`: `refused` holds the metrics whose labels are as many
    of one kind as of the other, each with why its agreement is not computed (all its labels are taken out and named).

    A metric's labels are read one way: `true`/`false` are pass/fail, numbers on a graded metric are grades. Mixed, the
    booleans were read as the grades 1 and 0 — `true` against a grade of 3 on 0..4 counted as a disagreement by 2 grades.
    The majority is counted over labels (a label without `trial` counts once, whatever its case's trials).
    """
    index = labels.lookup()
    named: list[str] = []
    refused: dict[str, str] = {}
    for metric, got in pairs.items():
        if not graded.get(metric):
            continue
        keys = {_key(p, metric, index): isinstance(p.label, bool) for p in got}  # each label: whether it is true/false
        flags = sum(keys.values())
        numbers = len(keys) - flags
        if not flags or not numbers:
            continue
        on = _scale_text(scales.get(metric))
        if flags == numbers:
            why = (f"metric {metric!r} has as many true/false labels as grades ({flags} each), so its labels cannot be read one "
                   f"way and its agreement is not computed; write every label of the metric as a grade{on}, or every one as "
                   "true/false to compare pass/fail")
            refused[metric] = f"no agreement: {why} (each label is named among the problems)"
            drop = set(keys)
        else:
            drop = {k for k, flag in keys.items() if flag == (flags < numbers)}
        done: set[tuple[str, str, int | None]] = set()  # (a label without a trial pairs with each trial of its case: named once)
        for p in got:
            if (key := _key(p, metric, index)) not in drop or key in done:
                continue
            done.add(key)
            lab = index.get(key)
            trial = "" if key[2] is None else f", trial {key[2]}"
            what = f"{lab.where if lab else p.case_id}: label: {written(p.label, lab.text if lab else '')} (case {p.case_id!r}{trial})"
            if flags == numbers:
                line = f"{what} left out: {why}"
            elif flags < numbers:
                line = (f"{what} is pass/fail among the grades of metric {metric!r} ({numbers} of its {len(keys)} labels are "
                        "numbers, read as grades): a metric's labels are read one way, so it is left out; write the grade it "
                        f"stands for{on} instead (or every label of the metric as true/false)")
            else:
                line = (f"{what} is a grade among the pass/fail labels of metric {metric!r} ({flags} of its {len(keys)} labels "
                        "are true/false): a metric's labels are read one way, so it is left out; write true or false instead "
                        f"(or every label of the metric as a grade{on})")
            named.append(line)
        got[:] = [p for p in got if _key(p, metric, index) not in drop]
    return named, refused


def _key(p: Pair, metric: str, index: dict[Any, Label]) -> tuple[str, str, int | None]:
    """The key of the label `p` pairs with: its trial's, else its case's (`agreement.pair_up`)."""
    return (p.case_id, metric, p.trial) if (p.case_id, metric, p.trial) in index else (p.case_id, metric, None)


def _scale_text(scale: tuple[float, float] | None) -> str:
    return "" if scale is None else f" on its scale {scale[0]:g}..{scale[0] + scale[1]:g}"
