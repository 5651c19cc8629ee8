"""Summary figures of repeated and panel judging: per-metric flakiness and inter-judge agreement.

`judge.samples` > 1 — per metric, in the summary's `judge.samples` block:
`items` (items with every sample usable), `flaky` (items whose samples did
not all agree), `flakiness` = flaky / items, and `flip_rate` = answers that
differ from their question's majority / all answers (`tracejudge.stages.judge.repeat`).

`judge.models` (a panel) — per metric, in `judge.panel`:
`fleiss_kappa`, Fleiss' κ (`statsmodels.stats.inter_rater.fleiss_kappa`) with
each question of each item a subject, each model a rater and the answers
(`yes`/`no`, or grades) the categories; `agreement_with_panel` per model, **leave-one-out**: the share of that
model's answers equal to the majority answer of the *other* models (an answer given by more than half of them), over
the questions where the others have one. A model is never part of the majority it is compared with, which would
credit it with agreeing with itself (with three models, its own vote could make the majority it then "agrees" with;
with two, every disagreement became a tie and each model agreed 100%) — as a corrected item-total correlation
leaves the item out of the total it is compared with (Nunnally & Bernstein 1994, *Psychometric Theory*). A question on which the others tie
(with three models: the other two disagree) says nothing about this model and is left out of its agreement, counted
in `others_tied` per model; with two models the other model is the whole "majority", so the figure is the two
models' plain agreement. `tied`: the questions without a majority of the whole panel (a panel of two models ties
whenever they disagree; how a tie is scored: `repeat`). Counters `loo_agree` and `loo_rated` per model carry the
agreement over a resumed run (a summary written before this definition has none: its segment is not in the
agreement); and
per model `cost_usd` (null when the model has no price), `input_tokens`, `output_tokens`, `requests` (from each
model's own counters). Rows are kept as counts of distinct rating patterns,
so memory does not grow with the run. Counts carry over from an earlier
segment of the run (`prior`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tracejudge.stages.judge.calibration import answer_of
from tracejudge.stages.judge.calls.stats import add_counts

__all__ = ["JudgeTally", "fleiss"]


def fleiss(rows: list[list[int]]) -> float | None:
    """Fleiss' κ of `rows` (one per subject: how many raters chose each category; every row the same total), by statsmodels;
    `None` without statsmodels, with fewer than two subjects or raters, or when κ is undefined (one category only)."""
    from tracejudge.core.lazy_numpy import numpy

    try:
        np = numpy()  # (BLAS threads as `lazy_numpy` says)
        from statsmodels.stats.inter_rater import fleiss_kappa
    except ImportError:
        return None
    table = np.asarray(rows, dtype=float)
    if table.ndim != 2 or table.shape[0] < 2 or table.sum(axis=1).min() < 2 or (table.sum(axis=0) > 0).sum() < 2:
        return None
    with np.errstate(all="ignore"):
        k = float(fleiss_kappa(table, method="fleiss"))
    return k if np.isfinite(k) else None


@dataclass
class _Metric:
    items: int = 0
    flaky: int = 0
    flips: int = 0
    answers: int = 0
    patterns: Counter[str] = field(default_factory=Counter)  # canonical {category: count} of one subject → subjects
    agree: Counter[str] = field(default_factory=Counter)  # model → answers equal to the other models' majority
    rated: Counter[str] = field(default_factory=Counter)  # model → answers given to questions where the others have a majority
    others_tied: Counter[str] = field(default_factory=Counter)  # model → questions where the other models tie
    tied: int = 0  # questions with no answer given by more than half of the models


class JudgeTally:
    """Counts of one run segment for the `judge.samples` and `judge.panel` summary blocks."""

    def __init__(self) -> None:
        self.metrics: dict[str, _Metric] = {}

    def add_samples(self, metric: str, details: dict[str, Any] | None) -> None:
        """Count an item's `details.samples` (`combine_samples`)."""
        s = (details or {}).get("samples")
        if not s:
            return
        t = self.metrics.setdefault(metric, _Metric())
        t.items += 1
        t.flaky += int(bool(s.get("flaky")))
        n = sum(len(v) for v in (s.get("answers") or {}).values())
        t.answers += n
        t.flips += round(float(s.get("flip_rate", 0.0)) * n)

    def add_panel(self, metric: str, details: dict[str, Any] | None) -> None:
        """Count an item's `details.panel` (`combine_panel`): one subject per question."""
        p = (details or {}).get("panel")
        if not p:
            return
        t = self.metrics.setdefault(metric, _Metric())
        models = p.get("models") or {}
        qids = list(dict.fromkeys(q for m in models.values() for q in (m.get("answers") or {})))
        for q in qids:
            votes = {name: answer_of((m.get("answers") or {}).get(q)) for name, m in models.items()}
            counts = Counter(str(v) for v in votes.values())
            t.patterns[json.dumps(sorted(counts.items()))] += 1
            _, top = counts.most_common(1)[0]
            t.tied += int(2 * top <= len(votes))  # no majority of the whole panel
            for name, v in votes.items():  # leave-one-out: each model against the majority of the others
                others = Counter(str(o) for n, o in votes.items() if n != name)
                if not others:
                    continue
                winner, top = others.most_common(1)[0]
                if 2 * top <= sum(others.values()):  # the others tie: nothing to agree with
                    t.others_tied[name] += 1
                    continue
                t.rated[name] += 1
                t.agree[name] += int(str(v) == winner)

    def summary(self, prior: dict[str, Any] | None, per_model: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
        """`{"samples": {metric: …}, "panel": {"metrics": {metric: …}, "models": {model: spending}}}` (empty parts left out),
        adding `prior` (an earlier segment's blocks)."""
        prior = prior or {}
        ps, pp = prior.get("samples") or {}, (prior.get("panel") or {}).get("metrics") or {}
        samples: dict[str, Any] = {}
        panel: dict[str, Any] = {}
        for name in sorted(set(self.metrics) | set(ps) | set(pp)):
            t = self.metrics.get(name, _Metric())
            p = ps.get(name) or {}
            items, flaky = t.items + int(p.get("items", 0)), t.flaky + int(p.get("flaky", 0))
            flips, answers = t.flips + int(p.get("flips", 0)), t.answers + int(p.get("answers", 0))
            if items:
                samples[name] = {"items": items, "flaky": flaky, "flakiness": round(flaky / items, 6), "flips": flips, "answers": answers,
                                 "flip_rate": round(flips / answers, 6) if answers else 0.0}
            q = pp.get(name) or {}
            patterns = Counter(t.patterns)
            for pat, n in (q.get("patterns") or {}).items():
                patterns[pat] += int(n)
            if not patterns:
                continue
            agree, rated, others_tied = Counter(t.agree), Counter(t.rated), Counter(t.others_tied)
            for into, key in ((agree, "loo_agree"), (rated, "loo_rated"), (others_tied, "others_tied")):
                for m, n in (q.get(key) or {}).items():
                    into[m] += int(n)
            cats = sorted({c for pat in patterns for c, _ in json.loads(pat)})
            rows: list[list[int]] = []
            for pat, n in patterns.items():
                got = dict(json.loads(pat))
                rows.extend([[int(got.get(c, 0)) for c in cats]] * n)
            k = fleiss(rows)
            panel[name] = {"subjects": len(rows), "categories": cats, "fleiss_kappa": None if k is None else round(k, 6),
                           "tied": t.tied + int(q.get("tied", 0)),
                           "agreement_with_panel": {m: round(agree[m] / rated[m], 6) for m in rated if rated[m]},
                           "others_tied": dict(others_tied),
                           "patterns": dict(sorted(patterns.items())), "loo_agree": dict(agree), "loo_rated": dict(rated)}
        out: dict[str, Any] = {}
        if samples:
            out["samples"] = samples
        if panel or per_model:
            models = dict((prior.get("panel") or {}).get("models") or {})
            for m, spend in (per_model or {}).items():
                old = models.get(m) or {}
                models[m] = {k: add_counts(old.get(k, 0), v) for k, v in spend.items()}
            out["panel"] = {"metrics": panel, "models": models}
        return out
