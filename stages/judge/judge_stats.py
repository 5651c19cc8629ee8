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
whenever they disagree; how a tie is scored: `repeat`). Counters `loo_agree` and `loo_rated` per model (model names
in order, as in `agreement_with_panel` and `others_tied`: not the order results came in); and
per model `cost_usd` (null when the model has no price), `input_tokens`, `output_tokens`, `requests` (from each
model's own counters). Rows are kept as counts of distinct rating patterns,
so memory does not grow with the run. `JudgeTally.summary` adds an earlier segment's
blocks (`prior`) to the counts of one segment.

**A run's figures are counted from its result lines** (`JudgeTally.add_result`): each standing result's scores
hold their `details.samples` and `details.panel` (a sampled panel member's flakiness in `details.panel.models[m].samples`),
so the run journal folds them as it folds its aggregate (`engine.checkpoint.RunJournal`, kept in the checkpoint as
`dump`/`load` state, re-read from the lines a killed segment wrote after it) and `tracejudge report` in the pass
it reads the results with. A resumed run's `samples` and `panel.metrics` are then those of the same run
uninterrupted — a segment killed with SIGKILL writes no summary, so adding the last summary's counts (`prior`) lost
what it judged — and each (case, trial) counts once, a result a resume judged again (a judge error retried) only as
it stands (`standing_block`).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tracejudge.stages.judge.calibration import answer_of
from tracejudge.stages.judge.calls.stats import add_counts

__all__ = ["JudgeTally", "fleiss", "standing_block"]


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


def _count(v: Any) -> bool:
    return type(v) is int and v >= 0


def _pattern(text: str) -> bool:
    """Is `text` a rating pattern as `add_panel` writes it (`[[category, count], …]`)?"""
    try:
        got = json.loads(text)
    except ValueError:
        return False
    return isinstance(got, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and _count(p[1]) for p in got)


# The fields of one metric's counts in `JudgeTally.dump`, and their kinds.
_STATE = {"items": int, "flaky": int, "flips": int, "answers": int, "tied": int, "patterns": dict, "agree": dict, "rated": dict, "others_tied": dict}


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
        self._count(metric, bool(s.get("flaky")), float(s.get("flip_rate", 0.0)), sum(len(v) for v in (s.get("answers") or {}).values()))

    def _count(self, metric: str, flaky: bool, flip_rate: float, n: int) -> None:
        t = self.metrics.setdefault(metric, _Metric())
        t.items += 1
        t.flaky += int(flaky)
        t.answers += n
        t.flips += round(flip_rate * n)

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

    def add_result(self, result: Any) -> None:
        """Count one standing result (a `CaseResult`, as its line holds it): each score's `details.samples`, or, for a
        panel's score, its `details.panel` and each sampled member's flakiness (`details.panel.models[m].samples`, as
        the stage counts every member's). A score whose details do not read so is left out."""
        for metric, score in (result.scores or {}).items():
            details = score.details
            if not details or not isinstance(details, dict):
                continue
            panel = details.get("panel")
            try:
                if isinstance(panel, dict):
                    for member in (panel.get("models") or {}).values():  # (`repeat._member_samples`: n answers per question)
                        if isinstance(member, dict) and isinstance(s := member.get("samples"), dict):
                            self._count(metric, bool(s.get("flaky")), float(s.get("flip_rate", 0.0)), int(s["n"]) * len(member.get("answers") or {}))
                    self.add_panel(metric, details)
                elif details.get("samples"):
                    self.add_samples(metric, details)
            except (TypeError, ValueError, AttributeError, KeyError):  # (an edited line: not the judge's)
                continue

    def add(self, other: JudgeTally) -> None:
        """Add `other`'s counts to these."""
        for name, o in other.metrics.items():
            t = self.metrics.setdefault(name, _Metric())
            t.items, t.flaky, t.flips, t.answers, t.tied = t.items + o.items, t.flaky + o.flaky, t.flips + o.flips, t.answers + o.answers, t.tied + o.tied
            for mine, theirs in ((t.patterns, o.patterns), (t.agree, o.agree), (t.rated, o.rated), (t.others_tied, o.others_tied)):
                for k, n in theirs.items():
                    mine[k] += n

    def copy(self) -> JudgeTally:
        return copy.deepcopy(self)

    def dump(self) -> dict[str, Any]:
        """The counts as JSON (for the run's checkpoint); `load` reads them back."""
        return {name: {"items": t.items, "flaky": t.flaky, "flips": t.flips, "answers": t.answers, "tied": t.tied, "patterns": dict(t.patterns),
                       "agree": dict(t.agree), "rated": dict(t.rated), "others_tied": dict(t.others_tied)} for name, t in self.metrics.items()}

    @classmethod
    def load(cls, state: Any) -> JudgeTally:
        """The tally `dump` wrote. Raises `ValueError` when `state` is not such counts (a checkpoint is then not reused)."""
        tally = cls()
        if not isinstance(state, dict):
            raise ValueError("judge_tally: not an object")
        for name, m in state.items():
            if not isinstance(m, dict) or set(m) - set(_STATE):
                raise ValueError(f"judge_tally.{name}: not a metric's counts")
            t = _Metric()
            for key, kind in _STATE.items():
                v = m.get(key, 0 if kind is int else {})
                if kind is int:
                    if not _count(v):
                        raise ValueError(f"judge_tally.{name}.{key}: not a count")
                    setattr(t, key, v)
                    continue
                if not isinstance(v, dict) or not all(isinstance(k, str) and _count(n) for k, n in v.items()):
                    raise ValueError(f"judge_tally.{name}.{key}: not counts")
                if key == "patterns" and not all(_pattern(k) for k in v):
                    raise ValueError(f"judge_tally.{name}.patterns: not rating patterns")
                setattr(t, key, Counter(v))
            tally.metrics[name] = t
        return tally

    def figures(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """`({metric: samples figures}, {metric: panel figures})`: the summary's `samples` and `panel.metrics` of these counts."""
        samples: dict[str, Any] = {}
        panel: dict[str, Any] = {}
        for name in sorted(self.metrics):
            t = self.metrics[name]
            items, flaky, flips, answers = t.items, t.flaky, t.flips, t.answers
            if items:
                samples[name] = {"items": items, "flaky": flaky, "flakiness": round(flaky / items, 6), "flips": flips, "answers": answers,
                                 "flip_rate": round(flips / answers, 6) if answers else 0.0}
            patterns = +t.patterns
            if not patterns:
                continue
            # (by model name: the order results came in, which concurrency and a resume change, orders nothing)
            agree, rated, others_tied = (dict(sorted(c.items())) for c in (t.agree, t.rated, t.others_tied))
            cats = sorted({c for pat in patterns for c, _ in json.loads(pat)})
            rows: list[list[int]] = []
            for pat, n in patterns.items():
                got = dict(json.loads(pat))
                rows.extend([[int(got.get(c, 0)) for c in cats]] * n)
            k = fleiss(rows)
            panel[name] = {"subjects": len(rows), "categories": cats, "fleiss_kappa": None if k is None else round(k, 6),
                           "tied": t.tied,
                           "agreement_with_panel": {m: round(agree[m] / rated[m], 6) for m in rated if rated[m]},
                           "others_tied": dict(others_tied),
                           "patterns": dict(sorted(patterns.items())), "loo_agree": dict(agree), "loo_rated": dict(rated)}
        return samples, panel

    @classmethod
    def from_blocks(cls, block: dict[str, Any] | None) -> JudgeTally:
        """The counts a summary's judge `block` holds (its `samples` and `panel.metrics`)."""
        block = block or {}
        tally = cls()
        for name, p in (block.get("samples") or {}).items():
            t = tally.metrics.setdefault(name, _Metric())
            t.items, t.flaky, t.flips, t.answers = int(p.get("items", 0)), int(p.get("flaky", 0)), int(p.get("flips", 0)), int(p.get("answers", 0))
        for name, q in ((block.get("panel") or {}).get("metrics") or {}).items():
            t = tally.metrics.setdefault(name, _Metric())
            t.tied = int(q.get("tied", 0))
            for into, key in ((t.patterns, "patterns"), (t.agree, "loo_agree"), (t.rated, "loo_rated"), (t.others_tied, "others_tied")):
                for m, n in (q.get(key) or {}).items():
                    into[m] += int(n)
        return tally

    def summary(self, prior: dict[str, Any] | None, per_model: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
        """`{"samples": {metric: …}, "panel": {"metrics": {metric: …}, "models": {model: spending}}}` (empty parts left out),
        adding `prior` (an earlier segment's blocks). (A run's summary then takes `samples` and `panel.metrics` from its
        standing results instead: `standing_block`.)"""
        prior = prior or {}
        both = self.copy()
        both.add(JudgeTally.from_blocks(prior))
        samples, panel = both.figures()
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


def standing_block(block: dict[str, Any], tally: JudgeTally | None) -> dict[str, Any]:
    """The judge summary `block` with its `samples` and `panel.metrics` those of `tally`, the counts of the run's standing
    results (`JudgeTally.add_result`; None: none held any), its other keys (a panel's spending per model) as they were and
    in their order."""
    samples, panel = (tally or JudgeTally()).figures()
    out = dict(block)
    if samples:
        out["samples"] = samples
    else:
        out.pop("samples", None)
    old = out.get("panel")
    if panel or isinstance(old, dict):
        old = old if isinstance(old, dict) else {}
        out["panel"] = {**old, "metrics": panel} if "metrics" in old else {"metrics": panel, "models": {}, **old}
    return out
