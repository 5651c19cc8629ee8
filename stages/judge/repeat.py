"""Several verdicts for one item: repeated samples (`judge.samples`) and panels of models (`judge.models`).

**Samples.** With `judge.samples` N, every request of a case is asked N
times; sample 0 is the request a single-sample run sends (same cache key),
sample s > 0 enters the cache key as trial `"<trial>/s<s>"`, so each sample
is cached on its own and the key stays a function of the content. The score
kept (`combine_samples`) has the **mean** of the N values as its value
(`passed` from the metric's threshold on that mean), and
`details.samples`: `n`, `values`, `mean`, the answers of each question
across samples, their `majority` (the most common answer; a tie goes to the
earliest sample's), `flip_rate` — the share of (question, sample) answers
that differ from their question's majority — and `flaky`: whether any two
samples disagree.

**Panels.** With `judge.models` [A, B, …] each model judges every item
(after its samples are combined); `combine_panel` keeps each model's value,
pass and answers in `details.panel.models` and combines them by
`judge.aggregate`: `majority` (per question the majority answer of the
models, a tie going to the first model's, then scored by the metric; for a
graded metric the median grade; a sampled model votes its samples' majority), `mean` (mean value), `all` (the lowest
value: passes only when every model passes), `any` (the highest value).

A sample or model that failed makes the item fail the same way (the first
failure is kept), so a resumed run asks again rather than keeping a verdict
with fewer voices than configured.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from tracejudge.core.records import JudgeInfo
from tracejudge.stages.judge.calibration import answer_of
from tracejudge.stages.judge.calls.stats import sum_usd
from tracejudge.stages.judge.client import Outcome

__all__ = ["combine_panel", "combine_samples", "sample_trial"]


def sample_trial(trial: int, sample: int) -> int | str:
    """The trial value sample `sample` of `trial` puts in its cache key: `trial` itself for sample 0, else `"<trial>/s<sample>"`."""
    return trial if sample == 0 else f"{trial}/s{sample}"


def _answers(o: Outcome) -> dict[str, Any]:
    return (o.score.details or {}).get("answers") or {}


def _votes(o: Outcome) -> dict[str, Any]:
    """A model's answer per question: the majority over its samples when it was sampled, else its one verdict's."""
    samples = (o.score.details or {}).get("samples")
    if samples:
        return dict(samples["majority"])
    return {q: answer_of(a) for q, a in _answers(o).items()}


def _majority(votes: list[Any]) -> Any:
    counts = Counter(votes)
    top = max(counts.values())
    return next(v for v in votes if counts[v] == top)  # a tie goes to the earliest vote


def _sum_info(outs: list[Outcome], model: str | None = None) -> JudgeInfo | None:
    infos = [o.score.judge for o in outs if o.score.judge is not None]
    if not infos:
        return None
    first = infos[0]
    return first.model_copy(update={
        "model": model or first.model, "cached": all(i.cached for i in infos),
        "input_tokens": sum(i.input_tokens for i in infos), "output_tokens": sum(i.output_tokens for i in infos),
        "requests": sum(i.requests for i in infos), "cached_requests": sum(i.cached_requests for i in infos),
        "cached_input_tokens": sum(i.cached_input_tokens for i in infos), "cost_usd": sum_usd(i.cost_usd for i in infos),
        "latency_s": max((i.latency_s or 0.0) for i in infos)})


def _failed(outs: list[Outcome]) -> Outcome | None:
    return next((o for o in outs if o.status != "ok" or o.score.value is None), None)


def combine_samples(metric: Any, outs: list[Outcome]) -> Outcome:
    """One item's N sample outcomes (in sample order) as one outcome (see the module doc)."""
    if len(outs) == 1:
        return outs[0]
    bad = _failed(outs)
    if bad is not None:
        bad.score.judge = _sum_info(outs)
        return bad
    values = [float(o.score.value) for o in outs]  # type: ignore[arg-type]
    qids = list(dict.fromkeys(q for o in outs for q in _answers(o)))
    votes = {q: [answer_of(_answers(o).get(q)) for o in outs] for q in qids}
    majority = {q: _majority(v) for q, v in votes.items()}
    total = sum(len(v) for v in votes.values())
    flips = sum(1 for q, v in votes.items() for x in v if x != majority[q])
    mean = sum(values) / len(values)
    first = outs[0].score
    samples = {"n": len(outs), "values": values, "mean": round(mean, 6), "answers": votes, "majority": majority,
               "flip_rate": round(flips / total, 6) if total else 0.0, "flaky": any(len(set(map(str, v))) > 1 for v in votes.values())}
    reason = f"mean of {len(outs)} samples {mean:.3f} (values {', '.join(f'{v:.3f}' for v in values)}; flip rate {samples['flip_rate']:.3f}); " \
             f"first sample: {first.reason}"
    score = metric.verdict(mean, reason, {**(first.details or {}), "samples": samples})
    score.judge = _sum_info(outs)
    return Outcome(score)


def combine_panel(metric: Any, plan: Any, outs: dict[str, Outcome], how: str) -> Outcome:
    """One item's outcome from each panel model (`{model: outcome}`, in panel order), combined by `how` (see the module doc)."""
    names = list(outs)
    items = list(outs.values())
    bad = _failed(items)
    if bad is not None:
        bad.score.judge = _sum_info(items, "panel:" + "+".join(names))
        return bad
    votes = {n: _votes(o) for n, o in outs.items()}
    per_model = {n: {"value": o.score.value, "passed": o.score.passed, "answers": votes[n]} for n, o in outs.items()}
    values = [float(o.score.value) for o in items]  # type: ignore[arg-type]
    first = items[0].score
    if how == "majority":
        qids = list(dict.fromkeys(q for v in votes.values() for q in v))
        if plan.kind == "scale":
            median = statistics.median_low([v[qids[0]] for v in votes.values()])
            answers = {qids[0]: {"score": median, "reason": f"median grade of {len(items)} judges"}}
        else:
            answers = {q: {"answer": _majority([v.get(q) for v in votes.values()]), "reason": "majority of the panel"} for q in qids}
        score = metric.finalize(plan, answers)
        value = score.value
    else:
        value = {"mean": sum(values) / len(values), "all": min(values), "any": max(values)}[how]
        score = metric.verdict(value, "", dict(first.details or {}))
    qids = list(dict.fromkeys(q for m in per_model.values() for q in m["answers"]))
    unanimous = sum(1 for q in qids if len({str(m["answers"].get(q)) for m in per_model.values()}) == 1)
    panel = {"aggregate": how, "models": per_model, "unanimous_questions": unanimous, "questions": len(qids)}
    listed = ", ".join(f"{n} {v:.3f}" for n, v in zip(names, values, strict=True))
    score = metric.verdict(float(value), f"panel {how} {value:.3f} ({listed}); {names[0]}: {first.reason}",
                           {**(score.details or {}), "panel": panel})
    score.judge = _sum_info(items, "panel:" + "+".join(names))
    return Outcome(score)
