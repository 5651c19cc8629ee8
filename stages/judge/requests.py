"""The judge requests one case gives, as the run asks them: `case_requests`.

`tracejudge estimate` and `tracejudge bench` build exactly what the run's judge
stage sends (`tracejudge.stages.judge.stage`): with `judge.group: case` the
yes/no metrics that render the same fenced data share one grouped request
(`group_plans`, `grouped_plan`); a metric asked one question per request, and a
Rubric, keep their own; everything else one request per metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracejudge.core.records import Case, Score
from tracejudge.stages.judge.base import JudgeMetric, Plan, Question, group_plans, grouped_plan

__all__ = ["Asked", "case_requests", "group_keys", "per_question", "trace_reused"]


@dataclass
class Asked:
    """One metric's (or one group's) requests about a case.

    `key` is the metric's key, or the group's metric names joined by `+`
    (`TaskCompletion+ToolCallNecessity`); `questions` one list per request;
    `batchable`: may share a multi-item request (`judge.items_per_request`);
    `metrics` how many metrics the request answers for (its `max_tokens` is that many times the config's).
    """

    key: str
    plan: Plan
    questions: list[list[Question]]
    batchable: bool
    metrics: int = 1


def trace_reused(config: Any, judges: int) -> bool:
    """Whether a case's grouped trace is asked more than once, so the run marks it for the provider's prefix cache
    (`grouped_plan`): by another trial, the calibration sample, another sample or another of the run's `judges`."""
    cfg = config.judge
    return config.run.trials > 1 or (cfg is not None and (cfg.calibration is not None or judges * cfg.samples > 1))


def per_question(metric: JudgeMetric, cfg: Any) -> bool:
    """Whether `metric` asks each question in a request of its own (its option, else `judge.one_question_per_request`)."""
    return cfg.one_question_per_request if metric.one_question_per_request is None else metric.one_question_per_request


def group_keys(plans: dict[str, Plan], metrics: dict[str, JudgeMetric], cfg: Any) -> list[list[str]]:
    """The keys of the metrics asked together in one request (groups of two or more, in order), `[]` unless `judge.group: case`.

    `plans` by metric key (those that need a request), `metrics` by key. Renders each plan's fenced text: CPU work.
    """
    if cfg.group != "case":
        return []
    candidates = [p for k, p in plans.items() if not per_question(metrics[k], cfg)]
    key_of = {id(p): k for k, p in plans.items()}
    return [[key_of[id(p)] for p in g] for g in group_plans(candidates) if len(g) > 1] if len(candidates) > 1 else []


def case_requests(case: Case, metrics: list[JudgeMetric], cfg: Any, reused: bool) -> tuple[list[Asked], dict[str, Score]]:
    """What the run asks about `case`: the requests (grouped ones first) and, by metric key, the scores given without a request.

    `reused`: the case is asked again (more trials, calibration), so its trace is marked for the provider's prompt cache.
    A metric whose `plan` raises is left out (the run scores it as a metric error, without a request).
    """
    plans: dict[str, Plan] = {}
    no_request: dict[str, Score] = {}
    for metric in metrics:
        try:
            plan = metric.plan(case)
        except Exception:
            continue
        if isinstance(plan, Score):
            no_request[metric.key] = plan
        else:
            plans[metric.key] = plan
    by_key = {m.key: m for m in metrics}
    groups = [[plans[k] for k in g] for g in group_keys(plans, by_key, cfg)]
    in_group = {id(p) for g in groups for p in g}
    out = []
    for g in groups:
        gp = grouped_plan(g, reused=reused)
        out.append(Asked("+".join(type(p.metric).__name__ for p in g), gp, [gp.questions], True, len(g)))
    for key, plan in plans.items():
        if id(plan) in in_group:
            continue
        per_q = per_question(by_key[key], cfg)
        qs = [[q] for q in plan.questions] if per_q and plan.kind == "yes_no" else [plan.questions]
        out.append(Asked(key, plan, qs, not per_q))
    return out, no_request


def fitted_requests(asked: Asked, cfg: Any) -> list[tuple[str, Plan, list[Question], Any]]:
    """What the run sends for `asked`: `(metric key, plan, questions, fit_request's Fitted)` per request, in order.

    Each question list fitted to the context window (`fit_request`). A grouped request that cannot fit is
    not sent: the run asks each of its metrics alone, all its questions in one request (`grouped.split`),
    and so the list holds those, under each metric's own key. CPU work (renders and counts every prompt).
    """
    from tracejudge.stages.judge.fit import fit_request

    out = []
    for qs in asked.questions:
        fitted = fit_request(asked.plan, qs, cfg)
        if fitted.fits or asked.metrics == 1 or not asked.plan.parts:
            out.append((asked.key, asked.plan, qs, fitted))
            continue
        for part in asked.plan.parts:
            out.append((part.metric.key, part, part.questions, fit_request(part, part.questions, cfg)))
    return out
