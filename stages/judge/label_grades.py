"""The grade a labelled verdict stands for, and whether its metric is yes/no or graded (`tracejudge.stages.judge.agreement`).

A single verdict of a graded metric (a Rubric) has its judge's grade; a panel aggregated by `majority` has its lower
median grade (`tracejudge.stages.judge.repeat`). A verdict whose value combines several — the mean of `judge.samples`,
a panel's `mean`, `all` (lowest) or `any` (highest) — has the grade its value maps to on the metric's scale,
`lowest + value × (highest − lowest)` (JUDGE-METRICS.md: a Rubric's score is its scale normalized to [0, 1]), rounded
to the nearest whole grade, a half going to the lower grade, as a tie does among samples and panel members: samples'
grades [1, 2, 2] on 0..3 give 2 (mean 1.67), a panel's [1, 2] gives 1 (mean 1.5), whatever their order. The scale
is the config's (`metric_scales`), else read off the run's own verdicts (`grade_scale`); when neither determines it,
such a verdict's grade is its value. A metric without grades has its value as its grade: it is a yes/no metric
(`yes_no_metric`), whose labels are true/false or numbers from 0 to 1.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    from tracejudge.stages.judge.agreement import Pair

__all__ = ["grade_scale", "metric_keys", "metric_scales", "verdict_grade", "yes_no_metric", "yes_no_metrics"]


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


def metric_keys(specs: Iterable[Any]) -> set[str]:
    """The keys of a config's metric `specs` (`registry.build_metric(spec).key`, the names a result's scores go by): the
    metrics a label may name. A spec that does not build is left out (its config error says why)."""
    from tracejudge.core import registry

    out: set[str] = set()
    for spec in specs:
        try:
            out.add(str(registry.build_metric(spec).key))
        except registry.SpecError:
            continue
    return out


def yes_no_metrics(specs: Iterable[Any]) -> set[str]:
    """The keys of a config's metric `specs` known to be yes/no before any verdict: tracejudge's own metrics without a
    scale (only a Rubric, or a spec with `scale`, grades). A custom metric may grade its verdicts, so it is never known
    here; neither is a spec that does not build (its config error says why)."""
    from tracejudge.core import registry

    out: set[str] = set()
    for spec in specs:
        if not isinstance(spec, dict) or "scale" in spec or spec.get("type") == "Rubric":
            continue
        cls = registry.metric_types().get(str(spec.get("type")))
        if cls is None or not cls.__module__.startswith("tracejudge."):
            continue
        try:
            out.add(str(registry.build_metric(spec).key))  # (a key may derive from the parameters: PassAtK's)
        except registry.SpecError:
            continue
    return out


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


def grade_scale(results: list[dict[str, Any]], metric: str) -> tuple[float, float] | None:
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


def verdict_grade(score: dict[str, Any], scale: tuple[float, float] | None) -> float:
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


def yes_no_metric(pairs: list[Pair], scale: tuple[float, float] | None) -> bool:
    """Whether the metric of `pairs` is yes/no: no scale of its own (`metric_scales`) and no verdict graded apart from its
    value. Its numeric labels are then passes from `threshold` up, whatever their spread: 0.75 on a yes/no metric once
    made the whole metric a graded comparison, where `--threshold` changed nothing."""
    return scale is None and all(p.grade == p.value for p in pairs)
