"""`tracejudge estimate CONFIG`: what the judge will cost, before any call.

For every case (and trial) and judge metric, the requests are built exactly
as the run would build them — grouped per case with `judge.group: case`
(one row per set of metrics asked together, e.g.
`TaskCompletion+ToolCallNecessity`), one per metric otherwise; input tokens
are counted with tiktoken (the same counter admission uses), output tokens
are estimated as `expected_output_tokens` per question, capped at
`max_tokens`; the cache is looked up, and requests it already answers are
counted as hits and cost nothing. No network call is made.

Provider prefix caching is priced too: the requests are fed, in dataset
order, to a model of the provider's prompt cache
(`tracejudge.llm.prefix_cache`, the one the simulator reports with): OpenAI's
automatic cache, or Anthropic's `cache_control` breakpoints (`judge.cache_hints`),
whose writes cost the model's cache-write rate. It assumes a request about
a trace is sent after an earlier one with the same prefix has been
answered; concurrent requests may miss a cache the estimate counts.

With `items_per_request` N > 1, items are grouped N at a time in dataset
order (the run groups them as they arrive, so real groups may differ a
little) and each group is priced as one multi-item request; an item the
cache already holds is left out of its group. With `mode: batch` dollars are
at the batch price (cached tokens at the batch share of the cached rate).
Repair requests and re-asks of a malformed part cannot be foreseen and are
not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracejudge.core import registry
from tracejudge.core.config import JudgeConfig, RunConfig
from tracejudge.core.records import Case, Score
from tracejudge.llm.cache import DiskJudgeCache, cache_key
from tracejudge.llm.prices import price_for
from tracejudge.llm.prefix_cache import PrefixCache
from tracejudge.llm.providers import DEFAULT_BASE_URLS, JudgeRequest, build_payload
from tracejudge.stages.judge.base import JudgeMetric, Plan, group_plans, grouped_plan
from tracejudge.stages.judge.client import build_request, key_components, request_tokens
from tracejudge.stages.judge.fit import fit_request
from tracejudge.stages.judge.multi import Item, build_multi_request, item_id

__all__ = ["MetricEstimate", "estimate", "judge_metrics"]


@dataclass
class MetricEstimate:
    """Expected judge work of one metric (or one group of metrics asked together): counts, tokens, US dollars.

    `requests` are the requests that will be sent, `cache_hits` the requests
    (or, grouped, the items) the cache already answers: hits are never in
    `requests`, grouped or not. `cached_input_tokens` /
    `cache_write_input_tokens` are the parts of `input_tokens` a provider's
    prompt cache would serve / store.
    """

    cases: int = 0
    requests: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    no_request: int = 0
    questions: int = 0  # questions asked by the requests charged (not the cache hits)
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0


_FIELDS = ("cases", "requests", "cache_hits", "input_tokens", "output_tokens", "cost_usd", "no_request", "questions",
           "cached_input_tokens", "cache_write_input_tokens")


def judge_metrics(config: RunConfig) -> list[JudgeMetric]:
    """The LLM-judge metrics among `config.metrics`, built (empty: nothing would be sent to a judge)."""
    return [m for m in (registry.build_metric(s) for s in config.metrics) if isinstance(m, JudgeMetric)]


def estimate(config: RunConfig) -> dict[str, Any]:
    """Per-metric (and per-group) estimates and totals: `{"metrics": {key: MetricEstimate}, "total": MetricEstimate, "priced": bool, ...}`."""
    from tracejudge.stages.extract import extract_record

    cfg = config.judge or JudgeConfig()
    metrics = judge_metrics(config)
    price = price_for(cfg.model, cfg.prices)
    base = "simulator" if cfg.provider == "simulator" else (cfg.base_url or DEFAULT_BASE_URLS[cfg.provider]).rstrip("/")
    cache = DiskJudgeCache(config.cache.dir) if config.cache.enabled and config.cache.dir.exists() else None
    out = {m.key: MetricEstimate() for m in metrics}
    batch = cfg.mode == "batch"
    protocol = "anthropic" if cfg.provider == "anthropic" else "openai"
    provider_cache = PrefixCache()
    pending: dict[tuple[str, int], list[Item]] = {}

    def charge(est: MetricEstimate, req: JudgeRequest, questions: int, items: int = 1) -> None:
        tin = request_tokens(req)
        tout = min(cfg.max_tokens * items, cfg.expected_output_tokens * questions)
        payload = build_payload(protocol, req)
        read, write = provider_cache.anthropic(req.model, payload) if protocol == "anthropic" else (provider_cache.openai(req.model, payload), 0)
        read = min(read, tin)
        write = min(write, tin - read)
        est.requests += 1
        est.questions += questions
        est.input_tokens += tin
        est.output_tokens += tout
        est.cached_input_tokens += read
        est.cache_write_input_tokens += write
        if price:
            est.cost_usd += price.batch_cost(tin, tout, read, write) if batch else price.cost(tin, tout, read, write)

    def cached(req: JudgeRequest, version: str, rubric: Any, trial: int) -> bool:
        return cache is not None and cache.get(cache_key(key_components(cfg.provider, base, req, version, rubric, trial))) is not None

    def flush(key: str, items: list[Item]) -> None:
        if not items:
            return
        if len(items) == 1:
            req = build_request(items[0].plan, items[0].questions, cfg)
        else:
            for it in items:
                it.id = item_id(it, cfg)
            req = build_multi_request(items, cfg)
        charge(out[key], req, sum(len(it.questions) for it in items), sum(max(1, len(it.plan.parts)) for it in items))

    def ask_items(key: str, item: Item, trial: int) -> None:
        # `items_per_request` > 1: gathered N at a time (a cached item is left out of its group).
        if cache is not None:
            item.id = item_id(item, cfg)
            if cached(build_multi_request([item], cfg), item.plan.prompt_version, item.plan.metric.rubric, trial):
                out[key].cache_hits += 1
                return
        group = pending.setdefault((key, trial), [])
        group.append(item)
        if len(group) >= cfg.items_per_request:
            flush(key, group)
            pending[(key, trial)] = []

    fmt = registry.format_for(config.dataset.format)
    ctx = fmt.prepare(config.dataset)
    invalid = 0
    try:
        for raw in fmt.read(config.dataset):
            case = extract_record(raw, fmt, ctx)
            if not isinstance(case, Case):
                invalid += 1
                continue
            plans: dict[str, Plan] = {}
            for metric in metrics:
                plan = metric.plan(case)
                out[metric.key].cases += config.run.trials
                if isinstance(plan, Score):
                    out[metric.key].no_request += config.run.trials
                else:
                    plans[metric.key] = plan
            per_q = {m.key: cfg.one_question_per_request if m.one_question_per_request is None else m.one_question_per_request for m in metrics}
            groups: list[list[Plan]] = []
            if cfg.group == "case":
                groups = [g for g in group_plans([p for k, p in plans.items() if not per_q[k]]) if len(g) > 1]
            in_group = {id(p) for g in groups for p in g}
            for trial in range(config.run.trials):
                for g in groups:
                    gp = grouped_plan(g, reused=config.run.trials > 1 or cfg.calibration is not None)
                    key = "+".join(type(p.metric).__name__ for p in g)
                    est = out.setdefault(key, MetricEstimate())
                    if cfg.items_per_request > 1:
                        ask_items(key, Item(gp, trial, f"{case.id}|group|{trial}"), trial)
                        continue
                    req = fit_request(gp, gp.questions, cfg).req  # what the run sends (and caches under): a long trace is fitted
                    if cached(req, gp.prompt_version, None, trial):
                        est.cache_hits += 1
                        continue
                    charge(est, req, len(gp.questions), len(g))
                for metric in metrics:
                    plan = plans.get(metric.key)
                    if plan is None or id(plan) in in_group:
                        continue
                    est = out[metric.key]
                    if cfg.items_per_request > 1 and not per_q[metric.key]:
                        ask_items(metric.key, Item(plan, trial, f"{case.id}|{metric.key}|{trial}"), trial)
                        continue
                    for qs in ([[q] for q in plan.questions] if per_q[metric.key] and plan.kind == "yes_no" else [plan.questions]):
                        req = fit_request(plan, qs, cfg).req
                        if cached(req, plan.prompt_version, plan.metric.rubric, trial):  # the keys the run uses
                            est.cache_hits += 1
                            continue
                        charge(est, req, len(qs))
        for (key, _), items in pending.items():
            flush(key, items)
    finally:
        if cache is not None:
            cache.close()
    total = MetricEstimate()
    for k, e in out.items():
        for f in _FIELDS:
            if f in ("cases", "no_request") and k not in {m.key for m in metrics}:
                continue  # a group's row counts requests, not cases: its metrics' rows count the cases
            setattr(total, f, getattr(total, f) + getattr(e, f))
    return {"metrics": out, "total": total, "priced": price is not None, "model": cfg.model, "invalid_cases": invalid,
            "items_per_request": cfg.items_per_request, "mode": cfg.mode, "group": cfg.group,
            "budget": {"max_judge_tokens": config.budget.max_judge_tokens, "max_cost_usd": config.budget.max_cost_usd}}
