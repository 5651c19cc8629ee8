"""`tracejudge estimate CONFIG`: what the judge will cost, before any call.

For every case (and trial) and judge metric, the requests are built exactly
as the run would build them; input tokens are counted with tiktoken (the
same counter admission uses), output tokens are estimated as
`expected_output_tokens` per question, capped at `max_tokens`; the cache is
looked up, and requests it already answers are counted as hits and cost
nothing. No network call is made.

With `items_per_request` N > 1, each metric's items are grouped N at a time
in dataset order (the run groups them as they arrive, so real groups may
differ a little) and each group is priced as one multi-item request; an
item the cache already holds is left out of its group. With `mode: batch`
dollars are at the batch price.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracejudge.core import registry
from tracejudge.core.config import JudgeConfig, RunConfig
from tracejudge.core.records import Case, Score
from tracejudge.llm.cache import DiskJudgeCache, cache_key
from tracejudge.llm.prices import price_for
from tracejudge.llm.providers import DEFAULT_BASE_URLS
from tracejudge.stages.judge.base import JudgeMetric
from tracejudge.stages.judge.client import build_request, key_components, request_tokens
from tracejudge.stages.judge.multi import Item, build_multi_request, item_id

__all__ = ["MetricEstimate", "estimate"]


@dataclass
class MetricEstimate:
    """Expected judge work of one metric: counts, tokens, US dollars.

    `requests` are the requests that will be sent, `cache_hits` the requests
    (or, grouped, the items) the cache already answers: hits are never in
    `requests`, grouped or not.
    """

    cases: int = 0
    requests: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    no_request: int = 0
    questions: int = 0  # questions asked by the requests charged (not the cache hits)


def estimate(config: RunConfig) -> dict[str, Any]:
    """Per-metric estimates and totals: `{"metrics": {key: MetricEstimate}, "total": MetricEstimate, "priced": bool, ...}`."""
    from tracejudge.stages.extract import extract_record

    cfg = config.judge or JudgeConfig()
    metrics = [m for m in (registry.build_metric(s) for s in config.metrics) if isinstance(m, JudgeMetric)]
    price = price_for(cfg.model, cfg.prices)
    base = "simulator" if cfg.provider == "simulator" else (cfg.base_url or DEFAULT_BASE_URLS[cfg.provider]).rstrip("/")
    cache = DiskJudgeCache(config.cache.dir) if config.cache.enabled and config.cache.dir.exists() else None
    out = {m.key: MetricEstimate() for m in metrics}
    batch = cfg.mode == "batch"
    pending: dict[tuple[str, int], list[Item]] = {}

    def charge(est: MetricEstimate, tin: int, tout: int, questions: int) -> None:
        est.questions += questions
        est.input_tokens += tin
        est.output_tokens += tout
        if price:
            est.cost_usd += price.batch_cost(tin, tout) if batch else price.cost(tin, tout)

    def flush(key: str, items: list[Item]) -> None:
        if not items:
            return
        est = out[key]
        est.requests += 1
        if len(items) == 1:
            req = build_request(items[0].plan, items[0].questions, cfg)
        else:
            for it in items:
                it.id = item_id(it, cfg)
            req = build_multi_request(items, cfg)
        asked = sum(len(it.questions) for it in items)
        charge(est, request_tokens(req), min(cfg.max_tokens * len(items), cfg.expected_output_tokens * asked), asked)
    fmt = registry.format_for(config.dataset.format)
    ctx = fmt.prepare(config.dataset)
    invalid = 0
    try:
        for raw in fmt.read(config.dataset):
            case = extract_record(raw, fmt, ctx)
            if not isinstance(case, Case):
                invalid += 1
                continue
            for metric in metrics:
                plan = metric.plan(case)
                est = out[metric.key]
                for trial in range(config.run.trials):
                    est.cases += 1
                    if isinstance(plan, Score):
                        est.no_request += 1
                        continue
                    per_q = cfg.one_question_per_request if metric.one_question_per_request is None else metric.one_question_per_request
                    if cfg.items_per_request > 1 and not per_q:
                        item = Item(plan, trial, f"{case.id}|{metric.key}|{trial}")
                        if cache is not None:
                            item.id = item_id(item, cfg)
                            comps = key_components(cfg.provider, base, build_multi_request([item], cfg), metric.prompt_version, metric.rubric, trial)
                            if cache.get(cache_key(comps)) is not None:
                                est.cache_hits += 1
                                continue
                        group = pending.setdefault((metric.key, trial), [])
                        group.append(item)
                        if len(group) >= cfg.items_per_request:
                            flush(metric.key, group)
                            pending[(metric.key, trial)] = []
                        continue
                    groups = [[q] for q in plan.questions] if per_q and plan.kind == "yes_no" else [plan.questions]
                    for group in groups:
                        req = build_request(plan, group, cfg)
                        if cache is not None:
                            comps = key_components(cfg.provider, base, req, metric.prompt_version, metric.rubric, trial)
                            if cache.get(cache_key(comps)) is not None:
                                est.cache_hits += 1
                                continue
                        est.requests += 1
                        charge(est, request_tokens(req), min(cfg.max_tokens, cfg.expected_output_tokens * len(group)), len(group))
        for (key, _), items in pending.items():
            flush(key, items)
    finally:
        if cache is not None:
            cache.close()
    total = MetricEstimate()
    for e in out.values():
        for f in ("cases", "requests", "cache_hits", "input_tokens", "output_tokens", "cost_usd", "no_request", "questions"):
            setattr(total, f, getattr(total, f) + getattr(e, f))
    return {"metrics": out, "total": total, "priced": price is not None, "model": cfg.model, "invalid_cases": invalid,
            "items_per_request": cfg.items_per_request, "mode": cfg.mode,
            "budget": {"max_judge_tokens": config.budget.max_judge_tokens, "max_cost_usd": config.budget.max_cost_usd}}
