"""Agreement of judge verdicts with reference labels: accuracy, Cohen's κ, confusion matrix, bootstrap CIs.

Definitions (computed by scikit-learn and scipy, not here):

- yes/no comparison — for a yes/no metric (one without grades,
  `label_grades.yes_no_metric`), whose labels are `true`/`false` or numbers
  from 0 to 1, and for any metric labelled only `true`/`false` or 0/1: the
  label (a number is a pass when >= `threshold`) against the verdict's
  `passed`; Cohen's κ (`sklearn.metrics.cohen_kappa_score`), accuracy, and
  the confusion matrix (`sklearn.metrics.confusion_matrix`, rows the label
  `[fail, pass]`, columns the verdict);
- graded comparison — other numeric labels of a graded metric: the label
  against the verdict's grade (`tracejudge.stages.judge.label_grades`);
  Spearman's ρ (`scipy.stats.spearmanr`), and, when labels and grades are
  all integers, the quadratic-weighted κ and the confusion matrix over the
  grades seen; `accuracy` is the share of exact matches.

Each figure with a CI has a 95% percentile bootstrap over the labelled
verdicts (resampled with replacement, `resamples` times, seeded by `seed` and
the metric key, so the same inputs give the same interval). A resample whose
κ is undefined (one class only) is left out of its interval. κ is `None`
when every label and verdict are the same class: chance agreement is then 1
and κ is 0/0 (`note` says so, and that labels of another class are needed).

A verdict pairs with the label of its (case, metric, trial), or with the
case's label for the metric when the label names no trial; verdicts that
were not scored (`value: null`, or a non-`ok` result) are counted as
`not_judged` and left out.
"""

from __future__ import annotations

import hashlib
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tracejudge.core.errors import TracejudgeError
from tracejudge.stages.judge.label_checks import take_out_of_range, unknown_cases, unknown_metrics
from tracejudge.stages.judge.label_grades import grade_scale, metric_scales, verdict_grade, yes_no_metric
from tracejudge.stages.judge.labels import Label, LabelSet

__all__ = ["Pair", "agreement_block", "metric_agreement", "metric_scales", "need_stats", "pair_up"]

SUMMARY_DISAGREEMENTS = 20  # disagreeing cases listed per metric in summary.json (calibrate's --json lists all)
SUMMARY_PROBLEMS = 20  # label problems listed in summary.json (calibrate's --json lists all; `problem_count` counts all)


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
    """One labelled verdict: `label` as given, the verdict's `passed`, `value` in [0, 1] and `grade` (its score's grade, see the
    module doc; `value` for a metric without grades)."""

    case_id: str
    trial: int
    label: bool | float
    passed: bool | None
    value: float
    grade: float
    tags: list[str] = field(default_factory=list)
    reason: str = ""


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
                                          list(res.get("tags") or []), str(s.get("reason", ""))[:300]))
    for pairs in by_metric.values():
        pairs.sort(key=lambda p: (p.case_id, p.trial))  # results come in completion order: the bootstrap must not depend on it
    unknown = {m: sum(1 for key in index if key[1] == m) for m in sorted(metrics - seen)}
    # (A label without a trial answers every trial of its case: it counts once, as matched when any trial was scored.)
    counts = {"total_labels": len(index), "matched": len(paired), "not_judged": len(used - paired), "unmatched": len(index) - len(used),
              "unknown_metrics": unknown}
    return dict(by_metric), counts


def _binary(pairs: list[Pair]) -> bool:
    return all(isinstance(p.label, bool) or p.label in (0.0, 1.0) for p in pairs)


def _rng(seed: int, metric: str) -> Any:
    import numpy as np

    return np.random.default_rng(int(hashlib.sha256(f"{seed}:{metric}".encode()).hexdigest()[:12], 16))


def _ci(stat: Callable[[Any, Any], float | None], y: Any, v: Any, resamples: int, rng: Any) -> list[float] | None:
    """95% percentile bootstrap interval of `stat(y, v)` over paired resamples; `None` when no resample defines it."""
    import numpy as np

    n = len(y)
    got = []
    for idx in rng.integers(0, n, size=(resamples, n)):
        x = stat(y[idx], v[idx])
        if x is not None and np.isfinite(x):
            got.append(x)
    if not got:
        return None
    lo, hi = np.percentile(got, [2.5, 97.5])
    return [round(float(lo), 6), round(float(hi), 6)]


def _kappa(weights: str | None) -> Callable[[Any, Any], float | None]:
    from sklearn.metrics import cohen_kappa_score

    def k(y: Any, v: Any) -> float | None:
        if len(set(y.tolist()) | set(v.tolist())) < 2:
            return None  # one class only: κ is 0/0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(cohen_kappa_score(y, v, weights=weights))
    return k


def _spearman(y: Any, v: Any) -> float | None:
    from scipy.stats import spearmanr

    if len(set(y.tolist())) < 2 or len(set(v.tolist())) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(spearmanr(y, v).statistic)


def _accuracy(y: Any, v: Any) -> float:
    return float((y == v).mean())


def metric_agreement(metric: str, pairs: list[Pair], *, threshold: float = 0.5, resamples: int = 1000, seed: int = 0,
                     disagreements: int | None = None, yes_no: bool = False) -> dict[str, Any]:
    """The agreement block of one metric (see the module doc): `n`, `kind`, `accuracy`(`_ci`), `kappa`(`_ci`, `_kind`),
    `spearman`(`_ci`) for graded labels, `confusion`, `by_tag`, `disagreements` (at most `disagreements`, all when `None`).
    `yes_no` says the metric is yes/no (`label_grades.yes_no_metric`): its numeric labels are passes from `threshold` up.

    Raises `TracejudgeError` when scikit-learn or scipy is missing.
    """
    need_stats()
    import numpy as np
    from sklearn.metrics import confusion_matrix

    if not pairs:
        return {"n": 0, "kind": None, "accuracy": None, "kappa": None, "kappa_ci": None,
                "note": "no labelled verdict: no label of this metric met a scored verdict (see the label counts and problems)"}
    binary = yes_no or _binary(pairs)
    rng = _rng(seed, metric)
    kind: str | None
    if binary:
        y = np.array([bool(p.label) if isinstance(p.label, bool) else p.label >= threshold for p in pairs])
        v = np.array([bool(p.passed) for p in pairs])
        classes: list[Any] = [False, True]
        names: list[Any] = ["fail", "pass"]
        kappa_fn, kind = _kappa(None), "cohen"
    else:
        y = np.array([float(p.label) for p in pairs])
        v = np.array([p.grade for p in pairs])
        integral = bool(np.all(y == np.round(y)) and np.all(v == np.round(v)))
        if integral:
            y, v = y.astype(int), v.astype(int)
        classes = sorted(set(y.tolist()) | set(v.tolist())) if integral else []
        names = classes
        kappa_fn, kind = (_kappa("quadratic"), "quadratic") if integral else ((lambda a, b: None), None)
    kappa = kappa_fn(y, v)
    out: dict[str, Any] = {
        "n": len(pairs), "kind": "yes_no" if binary else "graded",
        "accuracy": round(_accuracy(y, v), 6), "accuracy_ci": _ci(lambda a, b: _accuracy(a, b), y, v, resamples, rng),
        "kappa": None if kappa is None else round(kappa, 6), "kappa_kind": kind,
        "kappa_ci": _ci(kappa_fn, y, v, resamples, rng) if kind else None,
    }
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
        rho = _spearman(y, v)
        out["spearman"] = None if rho is None else round(rho, 6)
        out["spearman_ci"] = _ci(_spearman, y, v, resamples, rng)
    if classes:
        matrix = confusion_matrix(y, v, labels=classes)
        out["confusion"] = {"rows": "label", "columns": "verdict", "labels": names, "matrix": matrix.tolist()}
    tags: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        for t in p.tags:
            tags[t].append(i)
    out["by_tag"] = {t: {"n": len(ix), "accuracy": round(_accuracy(y[ix], v[ix]), 6),
                         "kappa": None if (k := kappa_fn(y[ix], v[ix])) is None else round(k, 6)} for t, ix in sorted(tags.items())}
    wrong = [i for i in range(len(pairs)) if y[i] != v[i]]
    listed = wrong if disagreements is None else wrong[:disagreements]
    # (A label of 0.75 read as a pass at the threshold says so beside it: "label 0.75, verdict fail" alone reads as a grade.)
    out["disagreements"] = [{"case_id": pairs[i].case_id, "trial": pairs[i].trial, "label": pairs[i].label,
                             **({"label_as": _shown(y[i])} if binary and pairs[i].label not in (0.0, 1.0) else {}),
                             "verdict": _shown(v[i]), "value": pairs[i].value, "reason": pairs[i].reason} for i in listed]
    out["disagreeing"] = len(wrong)
    return out


def _shown(x: Any) -> Any:
    """A numpy scalar as plain JSON: a yes/no verdict as `pass`/`fail`."""
    x = x.item() if hasattr(x, "item") else x
    return ("pass" if x else "fail") if isinstance(x, bool) else x


def agreement_block(results: Iterable[dict[str, Any]], labels: LabelSet, *, threshold: float = 0.5, resamples: int = 1000, seed: int = 0,
                    disagreements: int | None = SUMMARY_DISAGREEMENTS, with_cases: bool = False,
                    scales: dict[str, tuple[float, float]] | None = None, listed: int | None = SUMMARY_PROBLEMS) -> dict[str, Any]:
    """The `labels` block of a summary (and of `tracejudge calibrate --json`): counts, `problems` (unreadable label lines,
    labels of metrics or cases the run lacks or out of their metric's range, `label_checks`; the first `listed`, all
    when `None`) and `metrics.<metric>` from
    `metric_agreement`; with `with_cases`, `cases`: each labelled verdict beside its label. The counts are `pair_up`'s,
    with `out_of_range` (when any) taken from `matched`."""
    results = list(results)
    pairs, counts = pair_up(results, labels, scales)
    metrics = sorted({lab.metric for lab in labels.labels} - set(counts["unknown_metrics"]))
    run_metrics = {m for r in results for m in (r.get("scores") or {})}
    problems = unknown_metrics(labels, counts["unknown_metrics"], run_metrics) + labels.problems + unknown_cases(results, labels, run_metrics)
    out_of_range = take_out_of_range(pairs, labels, scales or {})
    if out_of_range:
        counts["matched"] -= len(out_of_range)
        counts["out_of_range"] = len(out_of_range)
        problems += out_of_range
    block: dict[str, Any] = {**counts, "problems": problems[:listed], "problem_count": len(problems),
                             "metrics": {m: metric_agreement(m, pairs.get(m, []), threshold=threshold, resamples=resamples, seed=seed,
                                                             disagreements=disagreements,
                                                             yes_no=yes_no_metric(pairs.get(m, []), (scales or {}).get(m)))
                                         for m in metrics}}
    if with_cases:
        block["cases"] = [{"case_id": p.case_id, "trial": p.trial, "metric": m, "label": p.label, "passed": p.passed, "value": p.value,
                           "grade": p.grade} for m in metrics for p in pairs.get(m, [])]
    return block


def run_labels(results: list[dict[str, Any]], cfg: Any, extra: LabelSet | None = None) -> LabelSet:
    """The labels of `cfg` (a `LabelsConfig`: its file, then its `fields` read from `results`), then `extra`'s, in that order."""
    from tracejudge.stages.judge.labels import field_labels, load_label_file

    sets = ([load_label_file(cfg.path)] if cfg.path is not None else []) + ([field_labels(results, cfg.fields)] if cfg.fields else [])
    sets += [extra] if extra is not None else []
    return LabelSet([lab for s in sets for lab in s.labels], [p for s in sets for p in s.problems])


def run_agreement(run_dir: Any, cfg: Any, *, with_cases: bool = False, disagreements: int | None = SUMMARY_DISAGREEMENTS,
                  scales: dict[str, tuple[float, float]] | None = None, listed: int | None = SUMMARY_PROBLEMS) -> dict[str, Any]:
    """The summary's `labels` block for the run in `run_dir` against `cfg` (`judge.labels`; `scales`: `metric_scales` of the
    run's metrics); an `error` block instead of raising when the labels or the statistics cannot be had, so a run's summary
    is always written."""
    from tracejudge.engine.store import iter_results

    try:
        results = list(iter_results(run_dir))
        labels = run_labels(results, cfg)
        return agreement_block(results, labels, threshold=cfg.threshold, resamples=cfg.resamples, seed=cfg.seed,
                               disagreements=disagreements, with_cases=with_cases, scales=scales, listed=listed)
    except TracejudgeError as exc:
        return {"error": str(exc), "metrics": {}}
