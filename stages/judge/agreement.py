"""Agreement of judge verdicts with reference labels: accuracy, Cohen's κ, confusion matrix, bootstrap CIs.

Definitions (computed by scikit-learn and scipy, not here):

- yes/no comparison — when every label of a metric is `true`/`false` or 0/1:
  the label (a number counts as a pass when >= `threshold`) against the
  verdict's `passed`; Cohen's κ (`sklearn.metrics.cohen_kappa_score`),
  accuracy, and the confusion matrix (`sklearn.metrics.confusion_matrix`,
  rows the label `[fail, pass]`, columns the verdict);
- graded comparison — other numeric labels: the label against the verdict's
  grade (below); Spearman's ρ (`scipy.stats.spearmanr`), and, when labels and
  grades are all integers, the quadratic-weighted κ and the confusion matrix
  over the grades seen; `accuracy` is the share of exact matches.

A verdict's grade is the grade its score stands for. A single verdict of a
graded metric (a Rubric) has its judge's grade; a panel aggregated by
`majority` has its lower median grade (`tracejudge.stages.judge.repeat`). A
verdict whose value combines several — the mean of `judge.samples`, a panel's
`mean`, `all` (lowest) or `any` (highest) — has the grade its value maps to on
the metric's scale, `lowest + value × (highest − lowest)` (JUDGE-METRICS.md:
a Rubric's score is its scale normalized to [0, 1]), rounded to the nearest
whole grade, a half going to the lower grade, as a tie does among samples and
panel members. So samples' grades [1, 2, 2] on 0..3 give 2 (mean 1.67), a
panel's [1, 2] gives 1 (mean 1.5), whatever their order. The scale is read
off the run's own verdicts (each single verdict's value beside its grade,
`_grade_scale`); when they do not determine it, such a verdict's grade is its
value (then only ρ is computed). A metric without grades compares its value.

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
import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tracejudge.core.errors import TracejudgeError
from tracejudge.stages.judge.label_checks import take_out_of_range, unknown_cases, unknown_metrics
from tracejudge.stages.judge.labels import Label, LabelSet

__all__ = ["Pair", "agreement_block", "metric_agreement", "need_stats", "pair_up"]

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


def metric_scales(specs: Iterable[Any]) -> dict[str, tuple[float, float]]:
    """`{metric key: (lowest, span)}` of the graded metrics among a config's metric `specs` (a `scale: [lowest, highest]`,
    a Rubric's, default 1..5), so a combined value maps to its grade by the metric's own scale, not one guessed from the
    run's verdicts. Specs without a scale are left out."""
    out: dict[str, tuple[float, float]] = {}
    for spec in specs:
        if not isinstance(spec, dict):
            continue
        scale = spec.get("scale", [1, 5] if spec.get("type") == "Rubric" else None)
        if isinstance(scale, (list, tuple)) and len(scale) == 2 and all(_num(x) for x in scale) and scale[1] > scale[0]:
            out[str(spec.get("name") or spec.get("type"))] = (float(scale[0]), float(scale[1]) - float(scale[0]))
    return out


def pair_up(results: Iterable[dict[str, Any]], labels: LabelSet,
            scales: dict[str, tuple[float, float]] | None = None) -> tuple[dict[str, list[Pair]], dict[str, Any]]:
    """`(pairs by metric, counts)`: each labelled verdict, and the label counts, which add up to `total_labels`:
    `matched` (paired with a scored verdict), `not_judged` (the case has the metric, but no scored verdict for the
    label) and `unmatched` (no result of that case, or no result of the run has that metric); `unknown_metrics`
    maps each labelled metric no result has to its label count. A `Pair.grade` follows the module doc; `scales`
    (`metric_scales`) gives a metric's scale, else it is read from the run's single verdicts (`_grade_scale`)."""
    results = list(results)
    index = labels.lookup()
    by_metric: dict[str, list[Pair]] = defaultdict(list)
    used: set[tuple[str, str, int | None]] = set()  # labels some result of their case answers (scored or not)
    paired: set[tuple[str, str, int | None]] = set()  # labels paired with at least one scored verdict
    metrics = {lab.metric for lab in labels.labels}
    scales = {m: (scales or {}).get(m) or _grade_scale(results, m) for m in metrics}
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
            grade = _grade(s, scales[metric])
            by_metric[metric].append(Pair(cid, trial, lab.value, s.get("passed"), float(s["value"]), float(grade),
                                          list(res.get("tags") or []), str(s.get("reason", ""))[:300]))
    for pairs in by_metric.values():
        pairs.sort(key=lambda p: (p.case_id, p.trial))  # results come in completion order: the bootstrap must not depend on it
    unknown = {m: sum(1 for key in index if key[1] == m) for m in sorted(metrics - seen)}
    # (A label without a trial answers every trial of its case: it counts once, as matched when any trial was scored.)
    counts = {"total_labels": len(index), "matched": len(paired), "not_judged": len(used - paired), "unmatched": len(index) - len(used),
              "unknown_metrics": unknown}
    return dict(by_metric), counts


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _own_grade(score: dict[str, Any]) -> tuple[str, float] | None:
    """`(question id, grade)` of a graded score's one answer (`details.answers`), or `None` for a metric without grades."""
    answers = (score.get("details") or {}).get("answers") or {}
    if len(answers) != 1:
        return None
    qid, a = next(iter(answers.items()))
    return (qid, float(a["score"])) if isinstance(a, dict) and _num(a.get("score")) else None


def _combined(score: dict[str, Any]) -> bool:
    """Whether the score's value combines several grades: a mean of samples, or a panel's mean, lowest or highest."""
    details = score.get("details") or {}
    return bool(details.get("samples")) or (details.get("panel") or {}).get("aggregate", "majority") != "majority"


def _exact_pairs(score: dict[str, Any]) -> list[tuple[float, float]]:
    """The `(grade, value)` pairs of single verdicts a graded score records: each sample's (a panel aggregated by mean/all/any
    keeps its first model's samples), else each panel member's (not sampled, so its vote is its one grade), else its own."""
    own = _own_grade(score)
    if own is None or not _num(score.get("value")):
        return []
    qid, grade = own
    details = score.get("details") or {}
    got: list[tuple[Any, Any]]
    if details.get("samples"):
        got = list(zip((details["samples"].get("answers") or {}).get(qid) or [], details["samples"].get("values") or []))
    elif _combined(score):
        got = [((m.get("answers") or {}).get(qid), m.get("value")) for m in (details["panel"].get("models") or {}).values()]
    else:
        got = [(grade, score["value"])]
    return [(float(g), float(v)) for g, v in got if _num(g) and _num(v)]


def _grade_scale(results: list[dict[str, Any]], metric: str) -> tuple[float, float] | None:
    """`(lowest, span)` with grade = lowest + value × span, as the run's single verdicts of `metric` show it (a Rubric's value is
    (grade − lowest) / (highest − lowest), JUDGE-METRICS.md); `None` when they show none, one grade only, or grades no one
    line fits."""
    pairs = [p for res in results if isinstance(s := (res.get("scores") or {}).get(metric), dict) for p in _exact_pairs(s)]
    if not pairs:
        return None
    (g0, v0), (g1, v1) = min(pairs), max(pairs)
    if g0 == g1:  # one grade seen: the scale is not known (every combined value would map to that grade)
        return None
    if v1 == v0:
        return None
    span = (g1 - g0) / (v1 - v0)
    low = g0 - v0 * span
    return (low, span) if all(abs(low + v * span - g) < 1e-6 for g, v in pairs) else None


def _grade(score: dict[str, Any], scale: tuple[float, float] | None) -> float:
    """The grade a scored verdict stands for (see the module doc): its own grade, or for a combined value the whole grade the
    value maps to on `scale` (a half to the lower grade); the value when the metric has no grades or the scale is not known."""
    own = _own_grade(score)
    if own is None:
        return float(score["value"])
    if not _combined(score):
        return own[1]
    if scale is None:
        return float(score["value"])
    grade = round(scale[0] + float(score["value"]) * scale[1], 6)  # (a mean summed in another order differs in its last bits)
    return float(math.ceil(grade - 0.5))


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
                     disagreements: int | None = None) -> dict[str, Any]:
    """The agreement block of one metric (see the module doc): `n`, `kind`, `accuracy`(`_ci`), `kappa`(`_ci`, `_kind`),
    `spearman`(`_ci`) for graded labels, `confusion`, `by_tag`, `disagreements` (at most `disagreements`, all when `None`).

    Raises `TracejudgeError` when scikit-learn or scipy is missing.
    """
    need_stats()
    import numpy as np
    from sklearn.metrics import confusion_matrix

    if not pairs:
        return {"n": 0, "kind": None, "accuracy": None, "kappa": None, "kappa_ci": None,
                "note": "no labelled verdict: no label of this metric met a scored verdict (see the label counts and problems)"}
    binary = _binary(pairs)
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
    out["disagreements"] = [{"case_id": pairs[i].case_id, "trial": pairs[i].trial, "label": pairs[i].label,
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
                                                             disagreements=disagreements) for m in metrics}}
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
