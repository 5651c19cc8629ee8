"""Several verdicts for one item: repeated samples (`judge.samples`) and panels of models (`judge.models`).

**Samples.** With `judge.samples` N, every request of a case is asked N
times; sample 0 is the request a single-sample run sends (same cache key),
sample s > 0 enters the cache key as trial `"<trial>/s<s>"`, so each sample
is cached on its own and the key stays a function of the content. The score
kept (`combine_samples`) has the **mean** of the N values as its value
(`passed` from the metric's threshold on that mean), and
`details.samples`: `n`, `values`, `mean`, the answers of each question
across samples, their `majority` (by the tie rule below), `flip_rate` — the share of (question, sample) answers
that differ from their question's majority — and `flaky`: whether any two
samples disagree.

**Panels.** With `judge.models` [A, B, …] each model judges every item
(after its samples are combined); `combine_panel` keeps each model's value,
pass and answers in `details.panel.models` and combines them by
`judge.aggregate` (a sampled member's flakiness kept too, in its `samples`): `majority` (per question the majority answer of the
models, then scored by the metric; for a graded metric the lower median grade; a sampled model votes its samples'
majority), `mean` (mean value), `all` (the lowest value: passes only when every model passes), `any` (the highest value).
A metric whose value is a side (a pairwise comparison: the run shown first, the second, or equal) is combined by
rules that favour no position instead (`_sides`).

**Ties.** A question's answer in the score's favour (its `good`, `yes` for most) wins only with more than half
of the votes: a strict majority, as a tied vote carries no motion (the bar inspect-ai's `majority_score` reducer sets
for a grader panel). A tie, which a panel of two models meets whenever they disagree, goes to the other answer; among
grades, to the lower. There tracejudge differs from inspect-ai, whose reducer leaves a value without a strict
majority unscored (NaN): a score here is made of every question's answer, and an unscored item would drop from the
figures exactly the items the panel disagrees on, so a tie is decided, against the score. So the verdict is the same
in whatever order the panel (or the samples) are listed.
`details.panel` keeps the decided `answers` and the `tied_questions`.

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


def _goods(plan: Any) -> dict[str, str]:
    """Each yes/no question's answer in the score's favour (`Question.good`); empty for a graded plan (`scale`)."""
    if plan is None or getattr(plan, "kind", "yes_no") != "yes_no":
        return {}
    return {q.id: q.good for q in plan.questions}


def _majority(votes: list[Any], good: str | None = None) -> Any:
    """The votes' majority answer, the same in any order of `votes`.

    With `good` (a yes/no question), `good` when more than half of the votes are it, else the other answer: a tie,
    or votes missing, do not credit the score. Without it (grades), the most common vote; a tie goes to the lowest.
    """
    if good is not None:
        return good if 2 * sum(v == good for v in votes) > len(votes) else ("no" if good == "yes" else "yes")
    counts = Counter(votes)
    top = max(counts.values())
    leaders = [v for v in counts if counts[v] == top]
    grades = [v for v in leaders if isinstance(v, (int, float))]
    return min(grades) if grades else min(leaders, key=str)


def _tied(votes: list[Any]) -> bool:
    """No answer has more than half of `votes`."""
    return 2 * max(Counter(votes).values()) <= len(votes)


def _count(votes: list[Any]) -> str:
    """`yes 1, no 1`: the votes per answer, in a fixed order."""
    return ", ".join(f"{a} {n}" for a, n in sorted(Counter(map(str, votes)).items(), reverse=True))


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
        # (none when no member's request was sent: an unsent request has no latency)
        "latency_s": max((i.latency_s for i in infos if i.latency_s is not None), default=None)})


def _sides(values: list[float], how: str, qid: str) -> tuple[float, dict[str, Any], list[str]]:
    """A panel's `(value, decided answers, tied questions)` for a metric whose value is a side: 1 the run shown
    first, 0 the second, 0.5 equal (`PairwiseComparison`), each member's side the sign of its value − 0.5 (a sampled
    member's: of its samples' mean, as one order's preference is read).

    The rules for scores lean when sides are tied (`majority`'s lower median of grades 1 and 3 is 1, the first shown;
    `all`'s lowest value the second, `any`'s highest the first), and the both-orders rule then counts the lean as a
    flip, in `position_bias_rate`. Here no rule favours a position: `majority` is the side more members prefer, "equal"
    pulling neither way, and equal (0.5) when as many prefer each; `all` a side only every member prefers (its weakest
    value), else equal; `any` a side some member prefers and none opposes (its strongest value), else equal.
    """
    from tracejudge.stages.comparison.pairwise_rule import order_preference

    sides = [order_preference(v) for v in values]
    first, second = sides.count(1), sides.count(-1)
    if how == "majority":
        value = 1.0 if first > second else 0.0 if second > first else 0.5
    elif how == "all":
        value = min(values) if first == len(values) else max(values) if second == len(values) else 0.5
    elif how == "any":
        value = max(values) if first and not second else min(values) if second and not first else 0.5
    else:
        value = sum(values) / len(values)
    grade = 1 if value > 0.5 else 3 if value < 0.5 else 2  # the grade its side stands for, as the answers record it
    return value, {qid: grade}, [qid] if first == second > 0 else []


def _failed(outs: list[Outcome]) -> Outcome | None:
    return next((o for o in outs if o.status != "ok" or o.score.value is None), None)


def combine_samples(metric: Any, outs: list[Outcome], plan: Any = None) -> Outcome:
    """One item's N sample outcomes (in sample order) as one outcome (see the module doc); `plan` gives its questions' good answers."""
    if len(outs) == 1:
        return outs[0]
    bad = _failed(outs)
    if bad is not None:
        bad.score.judge = _sum_info(outs)
        return bad
    values = [float(o.score.value) for o in outs]  # type: ignore[arg-type]
    qids = list(dict.fromkeys(q for o in outs for q in _answers(o)))
    votes = {q: [answer_of(_answers(o).get(q)) for o in outs] for q in qids}
    goods = _goods(plan)
    majority = {q: _majority(v, goods.get(q)) for q, v in votes.items()}
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


def _name_member(text: str, kind: str, label: str) -> str:
    """`text` (a failure's message or reason, `kind: …`) with the panel member put right after its kind, so the kind
    still leads (`parse_error: panel member openai:m at http://h/v1: …`)."""
    if kind and text.startswith(f"{kind}: "):
        return f"{kind}: {label}: {text[len(kind) + 2:]}"
    return f"{label}: {text}"


def _member_samples(o: Outcome) -> dict[str, Any]:
    """`{"samples": {"n", "flaky", "flip_rate"}}` of a sampled panel member (`{}` for a member asked once): what the run's
    flakiness counts (`judge_stats`) of each member, its answers being `n` per question of its `answers`, so that its
    result line holds them. (Not its samples' own answers, whose order is the order the requests were answered in.)"""
    samples = (o.score.details or {}).get("samples")
    return {"samples": {k: samples[k] for k in ("n", "flaky", "flip_rate")}} if samples else {}


def combine_panel(metric: Any, plan: Any, outs: dict[str, Outcome], how: str, urls: dict[str, str] | None = None) -> Outcome:
    """One item's outcome from each panel model (`{model: outcome}`, in panel order), combined by `how` (see the module doc).

    A failed member's outcome stands for the item, its message and reason naming that member and its base URL
    (`urls`: model → URL; "" or missing for the simulator), and `details.panel_member` holding both: the score's
    `judge.model` names the whole panel, which does not say which server to fix.
    """
    names = list(outs)
    items = list(outs.values())
    bad = _failed(items)
    if bad is not None:
        name = next(n for n, o in outs.items() if o is bad)
        url = (urls or {}).get(name) or ""
        label = f"panel member {name}" + (f" at {url}" if url else "")
        bad.message = _name_member(bad.message, bad.kind, label)
        bad.score.reason = _name_member(bad.score.reason, str((bad.score.details or {}).get("error_kind") or bad.kind), label)
        bad.score.details = {**(bad.score.details or {}), "panel_member": {"model": name, "base_url": url or None}}
        bad.score.judge = _sum_info(items, "panel:" + "+".join(names))
        return bad
    votes = {n: _votes(o) for n, o in outs.items()}
    per_model = {n: {"value": o.score.value, "passed": o.score.passed, "answers": votes[n], **_member_samples(o)} for n, o in outs.items()}
    values = [float(o.score.value) for o in items]  # type: ignore[arg-type]
    first = items[0].score
    qids = list(dict.fromkeys(q for v in votes.values() for q in v))
    goods = _goods(plan)
    cast = {q: [v.get(q) for v in votes.values()] for q in qids}
    tied = [q for q in qids if _tied(cast[q])]
    decided = {q: _majority(cast[q], goods.get(q)) for q in qids}
    if getattr(metric, "sides", False):  # grades that are sides (a pairwise comparison): no rule may lean to one
        value, decided, tied = _sides(values, how, qids[0])
        score = metric.verdict(value, "", dict(first.details or {}))
    elif how == "majority":
        if plan.kind == "scale":
            median = statistics.median_low([v[qids[0]] for v in votes.values()])
            decided[qids[0]] = median
            answers = {qids[0]: {"score": median, "reason": f"lower median grade of {len(items)} judges"}}
        else:
            answers = {q: {"answer": decided[q], "reason": f"no majority of the panel ({_count(cast[q])}): a tie does not credit the score"
                           if q in tied else f"majority of the panel ({_count(cast[q])})"} for q in qids}
        score = metric.finalize(plan, answers)
        value = score.value
    else:
        # (A metric whose value is another's inverse, `dual`, takes the other rule: its `all` is the inverse's `any`.)
        rule = {"all": "any", "any": "all"}.get(how, how) if getattr(metric, "dual", False) else how
        value = {"mean": sum(values) / len(values), "all": min(values), "any": max(values)}[rule]
        score = metric.verdict(value, "", dict(first.details or {}))
    unanimous = sum(1 for q in qids if len({str(m["answers"].get(q)) for m in per_model.values()}) == 1)
    panel = {"aggregate": how, "models": per_model, "answers": decided, "unanimous_questions": unanimous, "tied_questions": len(tied),
             "questions": len(qids)}
    listed = ", ".join(f"{n} {v:.3f}" for n, v in zip(names, values, strict=True))
    score = metric.verdict(float(value), f"panel {how} {value:.3f} ({listed}); {names[0]}: {first.reason}",
                           {**(score.details or {}), "panel": panel})
    score.judge = _sum_info(items, "panel:" + "+".join(names))
    return Outcome(score)
