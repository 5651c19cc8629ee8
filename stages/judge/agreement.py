"""Agreement of judge verdicts with reference labels: accuracy, Cohen's κ, confusion matrix, bootstrap CIs.

Definitions (computed by scikit-learn and scipy, not here):

- yes/no comparison — for a yes/no metric (one without grades,
  `label_grades.yes_no_metric`), whose labels are `true`/`false` or numbers
  from 0 to 1, and for any metric labelled only `true`/`false` or 0/1 (when the 0/1 labels are not all grades of a
  graded metric's scale, below): the
  label (a number is a pass when >= `threshold`) against the verdict's
  `passed`; Cohen's κ (`sklearn.metrics.cohen_kappa_score`), accuracy, and
  the confusion matrix (`sklearn.metrics.confusion_matrix`, rows the label
  `[fail, pass]`, columns the verdict);
- graded comparison — the numeric labels of a graded metric (a scale of its own, `scale`, or grades on its verdicts)
  that are all whole grades of its scale (`read_as_grades`: labels of only 0 and 1 on `scale: [0, 4]` are grades,
  and `reading_note` says so), and other numeric labels that are not all 0/1: the label against the verdict's grade
  (`tracejudge.stages.judge.label_grades`); Spearman's ρ (`scipy.stats.spearmanr`), and, when labels and grades are
  all integers, the quadratic-weighted κ (`cohen_kappa_score(weights="quadratic", labels=…)`, J. Cohen, "Weighted kappa",
  Psychological Bulletin 70 (1968) 213–220) with the
  metric's whole scale as `labels` (`kappa_labels`), so that grades 1, 2, 5 weigh 5 three grades from 2, not one,
  and the confusion matrix over the grades seen; `accuracy` is the share of exact matches.

A metric's labels are read one way. `true`/`false` among numeric labels that a graded metric reads as grades are not
grades 1 and 0: the labels of the rarer kind are left out, each named among the problems
(counted as `mixed_kinds`), and the rest give the figures; with as many of one kind as of the other, every label of the metric is
left out and named, and its agreement is not computed (`note` says why) — which kind was meant cannot be known
(`label_checks.take_mixed_kinds`).

The unit of the intervals is the labelled case (`cases`; `n` counts verdicts: a label without `trial` answers every
trial of its case): accuracy has the Wilson score interval, κ and ρ a 95% BCa (bias-corrected and accelerated, Efron
1987) bootstrap over cases (every trial of a drawn case together, the acceleration from leaving out one case at a time;
`scipy.stats.bootstrap(method='BCa')` on the same resamples; a resample's κ is computed from its confusion counts with
scikit-learn's arithmetic, equal to `cohen_kappa_score`'s: `label_stats.kappa_of`), `resamples` times, seeded by `seed`
and the metric key, so the same inputs give the same interval (`tracejudge.stages.judge.label_stats`, which cites the
sources and says what is done where BCa is undefined; `kappa_ci_note` when there is no interval). A resample whose κ
is undefined (one class only) is dropped and counted (`kappa_ci_dropped`). Under `MIN_CASES` (20) labelled cases, with
under `MIN_OTHER` of them labelled other than the most common label, or with every label of one class (grade), the κ
and ρ intervals are marked not informative (`kappa_ci_informative`, `spearman_ci_informative`: false, with `_ci_why`)
and the gate's `min_kappa` fails on it (`label_stats.uninformative`, the one rule). κ is `None`
when every label and verdict are the same class: chance agreement is then 1 and κ is 0/0 (`note` says so, and that
labels of another class are needed). By tag, κ is `None` with `kappa_why` for a tag of one case or one class.

A verdict pairs with the label of its (case, metric, trial), or with the
case's label for the metric when the label names no trial; verdicts that
were not scored (`value: null`, or a non-`ok` result) are counted as
`not_judged` and left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tracejudge.core.errors import TracejudgeError
from tracejudge.stages.judge.label_checks import (metric_case_read, take_mixed_kinds, take_out_of_range, unknown_cases, unknown_metrics, unknown_trials,
                                                  unusable_labels)
from tracejudge.stages.judge.label_grades import grade_scale, metric_scales, verdict_grade, yes_no_metric
from tracejudge.stages.judge.label_stats import accuracy, accuracy_ci, case_bootstrap, kappa_of, rng, spearman, uninformative
from tracejudge.stages.judge.labels import Label, LabelSet

__all__ = ["Pair", "agreement_block", "metric_agreement", "metric_scales", "need_stats", "pair_up"]

SUMMARY_DISAGREEMENTS = 20  # disagreeing cases listed per metric in summary.json (calibrate's --json lists all)
SUMMARY_PROBLEMS = 20  # label problems listed in summary.json (calibrate's --json lists all; `problem_count` counts all)
CI_METHOD = "case bootstrap, BCa"  # κ's and ρ's intervals (`label_stats.case_bootstrap`)


def need_stats() -> None:
    """Raise `TracejudgeError` naming the extra to install when scikit-learn or scipy is missing."""
    from tracejudge.core.lazy_numpy import numpy

    try:
        numpy()  # first, so that under the command line its BLAS stays at one thread (`lazy_numpy`)
        import scipy.stats  # noqa: F401
        import sklearn.metrics  # noqa: F401
    except ImportError as exc:
        raise TracejudgeError(f"judge agreement statistics need scikit-learn and scipy ({exc}); install them with: "
                              "pip install 'tracejudge[stats]'") from None


@dataclass
class Pair:
    """One labelled verdict: `label` as given (`label_text`: as its source wrote it, `Label.text`), the verdict's `passed`,
    `value` in [0, 1] and `grade` (its score's grade, see the module doc; `value` for a metric without grades)."""

    case_id: str
    trial: int
    label: bool | float
    passed: bool | None
    value: float
    grade: float
    tags: list[str] = field(default_factory=list)
    reason: str = ""
    label_text: str = ""


def pair_up(results: Iterable[dict[str, Any]], labels: LabelSet,
            scales: dict[str, tuple[float, float]] | None = None) -> tuple[dict[str, list[Pair]], dict[str, Any]]:
    """`(pairs by metric, counts)`: each labelled verdict, and the label counts, which add up to `total_labels`:
    `matched` (paired with a scored verdict), `not_judged` (the case has the metric, but no scored verdict for the
    label) and `unmatched` (no result of that case, or no result of the run has that metric); `unknown_metrics`
    maps each labelled metric no result has to its label count. A `Pair.grade` follows the module doc; `scales`
    (`metric_scales`) gives a metric's scale, else it is read from the run's single verdicts (`label_grades.grade_scale`)."""
    results = list(results)
    index = labels.lookup()
    by_metric: dict[str, list[Pair]] = defaultdict(list)
    used: set[tuple[str, str, int | None]] = set()  # labels some result of their case answers (scored or not)
    paired: set[tuple[str, str, int | None]] = set()  # labels paired with at least one scored verdict
    metrics = {lab.metric for lab in labels.labels}
    scales = {m: (scales or {}).get(m) or grade_scale(results, m) for m in metrics}
    seen: set[str] = set()  # the labelled metrics some result has
    for res in results:
        cid, trial = str(res.get("case_id")), int(res.get("trial", 0))
        scores = res.get("scores") or {}
        seen.update(m for m in metrics if m in scores)
        for metric in metrics:
            key = (cid, metric, trial) if (cid, metric, trial) in index else (cid, metric, None)
            lab: Label | None = index.get(key)
            if lab is None:
                continue
            s = scores.get(metric)
            if s is None and res.get("status", "ok") == "ok":
                continue  # not a metric of this result: matched by another trial's, or by none (`unknown_metrics`)
            used.add(key)
            if res.get("status", "ok") != "ok" or not isinstance(s, dict) or s.get("value") is None:
                continue
            paired.add(key)
            grade = verdict_grade(s, scales[metric])
            by_metric[metric].append(Pair(cid, trial, lab.value, s.get("passed"), float(s["value"]), float(grade),
                                          list(res.get("tags") or []), str(s.get("reason", ""))[:300], lab.text))
    for pairs in by_metric.values():
        pairs.sort(key=lambda p: (p.case_id, p.trial))  # results come in completion order: the bootstrap must not depend on it
    unknown = {m: sum(1 for key in index if key[1] == m) for m in sorted(metrics - seen)}
    # (A label without a trial answers every trial of its case: it counts once, as matched when any trial was scored.)
    counts = {"total_labels": len(index), "matched": len(paired), "not_judged": len(used - paired), "unmatched": len(index) - len(used),
              "unknown_metrics": unknown}
    return dict(by_metric), counts


def _binary(pairs: list[Pair]) -> bool:
    return all(isinstance(p.label, bool) or p.label in (0.0, 1.0) for p in pairs)


def scale_grades(scale: tuple[float, float] | None) -> list[int] | None:
    """Every grade of a scale `(lowest, span)` of whole grades, lowest first; `None` when unknown or not whole numbers."""
    if scale is None:
        return None
    lo, hi = round(scale[0], 6), round(scale[0] + scale[1], 6)
    if lo != int(lo) or hi != int(hi) or hi - lo > 1000:
        return None
    return list(range(int(lo), int(hi) + 1))


def read_as_grades(pairs: list[Pair], scale: tuple[float, float] | None, yes_no: bool = False) -> bool:
    """Whether the labels of a graded metric are grades: every label a number (no true/false) that is a whole grade of the
    metric's `scale`. Labels of only 0 and 1 on a scale holding both (`scale: [0, 4]`) are grades, as README says of a
    graded metric's numeric labels; on a yes/no metric, or with a `true`/`false` label, or a label off the scale, they are
    pass/fail (`_binary`)."""
    grades = scale_grades(scale)
    return (not yes_no and grades is not None and bool(pairs)
            and all(not isinstance(p.label, bool) and float(p.label).is_integer() and int(p.label) in grades for p in pairs))


def _grades_among(pairs: list[Pair], scale: tuple[float, float] | None, yes_no: bool) -> bool:
    """Whether a metric's numeric labels (its `true`/`false` ones aside) are read as grades: on a metric that is not yes/no,
    when they are all whole grades of its scale (`read_as_grades`), or not all 0/1 (`_binary`). `true`/`false` among such
    labels are of another kind (`label_checks.take_mixed_kinds`); among 0/1 labels read as pass/fail they are not."""
    numbers = [p for p in pairs if not isinstance(p.label, bool)]
    return not yes_no and bool(numbers) and (read_as_grades(numbers, scale) or not _binary(numbers))


def _case_groups(pairs: list[Pair], among: list[int] | None = None) -> list[list[int]]:
    """The indices of `pairs` (of those in `among`) grouped by case, in case order (pairs are sorted by case and trial)."""
    groups: dict[str, list[int]] = {}
    for i in (range(len(pairs)) if among is None else among):
        groups.setdefault(pairs[i].case_id, []).append(i)
    return list(groups.values())


def metric_agreement(metric: str, pairs: list[Pair], *, threshold: float = 0.5, resamples: int = 1000, seed: int = 0,
                     disagreements: int | None = None, yes_no: bool = False, scale: tuple[float, float] | None = None,
                     grades: bool | None = None) -> dict[str, Any]:
    """The agreement block of one metric (see the module doc): `n` (verdicts), `cases`, `kind`, `accuracy`(`_ci`),
    `kappa`(`_ci`, `_kind`, `_labels`, `_ci_dropped`, `_ci_informative`, `_ci_why`, `_ci_note`), `spearman`(`_ci`,
    `_ci_informative`, `_ci_why`, `_ci_note`) for graded labels,
    `reading` (and `reading_note` when it could be ambiguous), `confusion`, `by_tag`, `disagreements` (at most
    `disagreements`, all when `None`). `yes_no` says the metric is yes/no (`label_grades.yes_no_metric`): its numeric
    labels are passes from `threshold` up. `scale` is the metric's `(lowest, span)`; `grades` whether its labels are
    read as grades (`read_as_grades`, the default).

    Raises `TracejudgeError` when scikit-learn or scipy is missing.
    """
    need_stats()
    import numpy as np
    from sklearn.metrics import confusion_matrix

    if not pairs:
        return {"n": 0, "cases": 0, "kind": None, "accuracy": None, "kappa": None, "kappa_ci": None,
                "note": "no labelled verdict: no label of this metric met a scored verdict (see the label counts and problems)"}
    if grades is None:
        grades = read_as_grades(pairs, scale, yes_no)
    binary = yes_no or (not grades and _binary(pairs))
    gen = rng(seed, metric)
    groups = _case_groups(pairs)
    kind: str | None
    scale_labels: list[Any] | None = None
    if binary:
        y = np.array([bool(p.label) if isinstance(p.label, bool) else p.label >= threshold for p in pairs])
        v = np.array([bool(p.passed) for p in pairs])
        classes: list[Any] = [False, True]
        names: list[Any] = ["fail", "pass"]
        kappa_fn, kind = kappa_of(None, classes), "cohen"
    else:
        y = np.array([float(p.label) for p in pairs])
        v = np.array([p.grade for p in pairs])
        integral = bool(np.all(y == np.round(y)) and np.all(v == np.round(v)))
        if integral:
            y, v = y.astype(int), v.astype(int)
        classes = sorted(set(y.tolist()) | set(v.tolist())) if integral else []
        names = classes
        # Weighted by distance on the metric's whole scale (the grades seen too, should a verdict fall off it); only the
        # grades seen when the scale is not known, which the output says (`kappa_labels`).
        scale_labels = sorted(set(scale_grades(scale) or []) | set(classes)) if integral else None
        kappa_fn, kind = (kappa_of("quadratic", scale_labels), "quadratic") if integral else ((lambda a, b: None), None)
    kappa = kappa_fn(y, v)
    kappa_ci, dropped, no_ci = case_bootstrap(getattr(kappa_fn, "resampled", kappa_fn), y, v, groups, resamples, gen) if kind else (None, 0, None)
    why = uninformative(y, groups)  # (one rule for κ's interval and ρ's: `label_stats.uninformative`)
    out: dict[str, Any] = {
        "n": len(pairs), "cases": len(groups), "kind": "yes_no" if binary else "graded",
        "reading": "pass/fail" if binary else "grades",
        "accuracy": round(accuracy(y, v), 6), "accuracy_ci": accuracy_ci(y, v, groups), "accuracy_ci_method": "wilson",
        "kappa": None if kappa is None else round(kappa, 6), "kappa_kind": kind, "kappa_ci": kappa_ci,
    }
    if kind:
        out.update(kappa_ci_method=CI_METHOD, kappa_ci_resamples=resamples, kappa_ci_dropped=dropped, kappa_ci_informative=why is None,
                   **({"kappa_ci_why": why} if why else {}), **({"kappa_ci_note": no_ci} if no_ci else {}))
    if scale_labels is not None:
        out["kappa_labels"] = scale_labels
        if scale_grades(scale) is None:
            out["kappa_labels_note"] = "the metric's scale is not known: grades weighted by their distance among those seen"
    if grades and not binary and all(float(p.label) in (0.0, 1.0) for p in pairs):
        lo, hi = scale_labels[0], scale_labels[-1]  # type: ignore[index]
        out["reading_note"] = (f"labels 0 and 1 only, read as grades on the metric's scale {lo}..{hi} (a graded metric); "
                               "write true/false to compare pass/fail")
    if binary and any(not isinstance(p.label, bool) and p.label not in (0.0, 1.0) for p in pairs):
        out["threshold"] = threshold  # (the labels between 0 and 1 were read at it: another threshold, other figures)
    if kappa is None and kind:
        only = _shown(y[0])
        other = f"cases that should {'fail' if only == 'pass' else 'pass'}" if binary else "cases of other grades"
        out["note"] = (f"kappa undefined: only one class occurs — every label and every verdict is {only} — so chance agreement is 1 "
                       f"and kappa is 0/0; add labels for {other} to measure agreement")
    elif not binary and kind is None:
        out["note"] = "kappa undefined: the labels or the grades are not all whole numbers (weighted kappa compares grades); see spearman"
    if not binary:
        rho = spearman(y, v)
        out["spearman"] = None if rho is None else round(rho, 6)
        rho_ci, _, no_ci = case_bootstrap(spearman, y, v, groups, resamples, gen)
        why = uninformative(y, groups, "spearman")
        out.update(spearman_ci=rho_ci, spearman_ci_method=CI_METHOD, spearman_ci_informative=why is None,
                   **({"spearman_ci_why": why} if why else {}), **({"spearman_ci_note": no_ci} if no_ci else {}))
    if classes:
        matrix = confusion_matrix(y, v, labels=classes)
        out["confusion"] = {"rows": "label", "columns": "verdict", "labels": names, "matrix": matrix.tolist()}
    tags: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        for t in p.tags:
            tags[t].append(i)
    # (Where the metric has no κ at all, a tag has none for the metric's reason, not for "one class only".)
    never = None if kind else "labels or grades not all whole numbers (weighted kappa compares whole grades; see spearman)"
    out["by_tag"] = {t: _tag(y, v, ix, len(_case_groups(pairs, ix)), kappa_fn, never) for t, ix in sorted(tags.items())}
    wrong = [i for i in range(len(pairs)) if y[i] != v[i]]
    listed = wrong if disagreements is None else wrong[:disagreements]
    # (A label of 0.75 read as a pass at the threshold says so beside it: "label 0.75, verdict fail" alone reads as a grade.)
    out["disagreements"] = [{"case_id": pairs[i].case_id, "trial": pairs[i].trial, "label": pairs[i].label,
                             **({"label_written": pairs[i].label_text} if pairs[i].label_text else {}),
                             **({"label_as": _shown(y[i])} if binary and pairs[i].label not in (0.0, 1.0) else {}),
                             "verdict": _shown(v[i]), "value": pairs[i].value, "reason": pairs[i].reason} for i in listed]
    out["disagreeing"] = len(wrong)
    return out


def _tag(y: Any, v: Any, ix: list[int], cases: int, kappa_fn: Callable[[Any, Any], float | None], never: str | None = None) -> dict[str, Any]:
    """One tag's figures; κ `None` with `kappa_why`: `never` when the metric has no κ at all (its labels or grades are not
    whole numbers), else for a single case (κ of one case is 0 or 0/0, not agreement) or one class."""
    got: dict[str, Any] = {"n": len(ix), "cases": cases, "accuracy": round(accuracy(y[ix], v[ix]), 6)}
    k = kappa_fn(y[ix], v[ix]) if cases > 1 and never is None else None
    got["kappa"] = None if k is None else round(k, 6)
    if k is None:
        got["kappa_why"] = never or ("one case" if cases < 2 else "one class only")
    return got


def _shown(x: Any) -> Any:
    """A numpy scalar as plain JSON: a yes/no verdict as `pass`/`fail`."""
    x = x.item() if hasattr(x, "item") else x
    return ("pass" if x else "fail") if isinstance(x, bool) else x


def agreement_block(results: Iterable[dict[str, Any]], labels: LabelSet, *, threshold: float = 0.5, resamples: int = 1000, seed: int = 0,
                    disagreements: int | None = SUMMARY_DISAGREEMENTS, with_cases: bool = False,
                    scales: dict[str, tuple[float, float]] | None = None, listed: int | None = SUMMARY_PROBLEMS,
                    yes_no: set[str] | None = None, config_metrics: set[str] | None = None, known: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The `labels` block of a summary (and of `tracejudge calibrate --json`): counts, `problems` (unreadable label lines,
    labels of metrics or cases the run lacks, of the other kind among a metric's labels, or out of their metric's range,
    `label_checks`; the first `listed`, all when `None`) and `metrics.<metric>` from
    `metric_agreement`; with `with_cases`, `cases`: each labelled verdict beside its label. The counts are `pair_up`'s,
    with `mixed_kinds` and `out_of_range` (when any) taken from `matched`, and `not_labels` (when any): the lines or fields
    that held no label (a list of two annotators' labels, `"NaN"`), named among the problems and in no other count.
    `yes_no`: the metrics known to be yes/no from the config (`label_grades.yes_no_metrics`): a label out of its metric's
    range whose case has no result (`calibrate --labels` does not judge a case whose every label is such,
    `label_checks.unusable_labels`) is named and counted as out of range, not as a case the run lacks. `config_metrics`: every
    metric of the config (`label_grades.metric_keys`): a label of a metric outside them and the run's is blamed on its
    metric (calibrate judges none of its cases), not counted as one of a case the run lacks. `known`: the dataset's case
    ids, offered for a label's case id one slip from one (`label_checks.unknown_case`)."""
    results = list(results)
    cases = {str(r.get("case_id")) for r in results}
    run_metrics = {m for r in results for m in (r.get("scores") or {})}
    # (the config's metrics known beside the run's: with no case judged, a label's metric in another case is still read)
    labels = metric_case_read(labels, run_metrics | set(scales or {}) | set(yes_no or set()) | (config_metrics or set()))
    unusable = unusable_labels(labels, scales or {}, yes_no or set())
    unjudged = [lab for lab in labels.labels if lab.case_id not in cases and (lab.case_id, lab.metric, lab.trial) in unusable]
    if unjudged:
        gone = set(unjudged)
        labels = LabelSet([lab for lab in labels.labels if lab not in gone], labels.problems, labels.unreadable)
    pairs, counts = pair_up(results, labels, scales)
    metrics = sorted({lab.metric for lab in labels.labels} - set(counts["unknown_metrics"]))
    problems = (unknown_metrics(labels, counts["unknown_metrics"], run_metrics, cases, config_metrics, known) + labels.problems
                + unknown_cases(results, labels, run_metrics, known) + unknown_trials(results, labels, run_metrics))
    absent: dict[str, int] = defaultdict(int)  # labels (by metric) of cases not in the run, which a metric is not blamed for
    for lab in labels.labels:
        if lab.case_id not in cases and (config_metrics is None or lab.metric in config_metrics | run_metrics):
            absent[lab.metric] += 1
    full = {m: (scales or {}).get(m) or grade_scale(results, m) for m in metrics}
    # A metric's labels are read one way: true/false mixed with numbers a graded metric reads as grades keep the kind most
    # of its labels are; the others are left out and named (`mixed_kinds`), all of them when neither kind is the more.
    graded = {m: _grades_among(pairs.get(m, []), full[m], yes_no_metric(pairs.get(m, []), (scales or {}).get(m))) for m in metrics}
    mixed, refused = take_mixed_kinds(pairs, labels, graded, full)
    # The reading is decided over every label, out-of-range ones too: 0 and 1 on a 1..5 scale are pass/fail, not grades.
    grades = {m: read_as_grades(pairs.get(m, []), full[m], yes_no_metric(pairs.get(m, []), (scales or {}).get(m))) for m in metrics}
    yes_no = {m: yes_no_metric(pairs.get(m, []), (scales or {}).get(m)) for m in metrics}
    # Labels read as pass/fail are checked as pass/fail (in [0, 1]), not against the grade scale they are not read on.
    pass_fail = {m for m in metrics if yes_no[m] or (not grades[m] and _binary(pairs.get(m, [])))}
    out_of_range = take_out_of_range(pairs, labels, scales or {}, pass_fail)
    counts["matched"] -= len(out_of_range)
    counts["total_labels"] += len(unjudged)  # (counted as labels out of range, not as cases the run lacks)
    out_of_range += [unusable[(lab.case_id, lab.metric, lab.trial)] for lab in unjudged]
    if mixed:
        counts["matched"] -= len(mixed)
        counts["mixed_kinds"] = len(mixed)
        problems += mixed
    if out_of_range:
        counts["out_of_range"] = len(out_of_range)
        problems += out_of_range
    if labels.unreadable:  # (named among the problems; no label, so no other count holds them)
        counts["not_labels"] = labels.unreadable
    block: dict[str, Any] = {**counts, "cases_not_in_run": dict(absent), "problems": problems[:listed], "problem_count": len(problems),
                             "metrics": {m: metric_agreement(m, pairs.get(m, []), threshold=threshold, resamples=resamples, seed=seed,
                                                             disagreements=disagreements, yes_no=yes_no[m], scale=full[m],
                                                             grades=grades[m])
                                         for m in metrics}}
    for m, why in refused.items():
        block["metrics"][m]["note"] = why
    if with_cases:
        block["cases"] = [{"case_id": p.case_id, "trial": p.trial, "metric": m, "label": p.label,
                           **({"label_written": p.label_text} if p.label_text else {}), "passed": p.passed, "value": p.value,
                           "grade": p.grade} for m in metrics for p in pairs.get(m, [])]
    return block


def run_labels(results: list[dict[str, Any]], cfg: Any, extra: LabelSet | None = None) -> LabelSet:
    """The labels of `cfg` (a `LabelsConfig`: its file, then its `fields` read from `results`), then `extra`'s, in that order."""
    from tracejudge.stages.judge.labels import field_labels, load_label_file

    sets = ([load_label_file(cfg.path)] if cfg.path is not None else []) + ([field_labels(results, cfg.fields)] if cfg.fields else [])
    sets += [extra] if extra is not None else []
    return LabelSet([lab for s in sets for lab in s.labels], [p for s in sets for p in s.problems], sum(s.unreadable for s in sets))


def run_agreement(run_dir: Any, cfg: Any, *, with_cases: bool = False, disagreements: int | None = SUMMARY_DISAGREEMENTS,
                  scales: dict[str, tuple[float, float]] | None = None, listed: int | None = SUMMARY_PROBLEMS,
                  yes_no: set[str] | None = None, config_metrics: set[str] | None = None) -> dict[str, Any]:
    """The summary's `labels` block for the run in `run_dir` against `cfg` (`judge.labels`; `scales`: `metric_scales` of the
    run's metrics, `yes_no`: `yes_no_metrics`, `config_metrics`: `metric_keys`); an `error` block instead of raising when the labels or the statistics
    cannot be had, so a run's summary is always written."""
    from tracejudge.engine.store import iter_results

    try:
        results = list(iter_results(run_dir))
        labels = run_labels(results, cfg)
        return agreement_block(results, labels, threshold=cfg.threshold, resamples=cfg.resamples, seed=cfg.seed,
                               disagreements=disagreements, with_cases=with_cases, scales=scales, listed=listed, yes_no=yes_no,
                               config_metrics=config_metrics, known=getattr(cfg, "_dataset_cases", frozenset()))
    except TracejudgeError as exc:
        return {"error": str(exc), "metrics": {}}
