"""`tracejudge estimate CONFIG`: what the judge will cost, before any call.

For every case (and trial) and judge metric, the requests are built exactly
as the run would build them — grouped per case with `judge.group: case`
(one row per set of metrics asked together, e.g.
`TaskCompletion+ToolCallNecessity`), one per metric otherwise; input tokens
are counted with tiktoken (the same counter admission uses), output tokens
are estimated as `expected_output_tokens` per question, capped at
`max_tokens`; the cache is looked up, and requests it already answers are
counted as hits and cost nothing (a self-hosted server's requests keyed by
the weights the last run found it serving, `DiskJudgeCache.last_served`). No
network call is made.

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
Repair requests and re-asks (a reply that does not parse gets one repair
request; a grouped one then asks each metric alone) cannot be foreseen, and
with a weak model they dominate. So the estimate is a range (`range`): `low`
counts none; `high` counts them at the rate the last run in the same run
directory measured (`summary.json`: repairs and re-asks per first request),
or, with no earlier run, as if every reply needed them (the worst case: a
repair, and for a grouped request each metric alone once; a re-asked request
is priced like the first).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracejudge.core import registry
from tracejudge.core.config import JudgeConfig, RunConfig
from tracejudge.core.records import Case, Score
from tracejudge.llm import served_model
from tracejudge.llm.cache import DiskJudgeCache, cache_key
from tracejudge.llm.prices import price_for
from tracejudge.llm.prefix_cache import PrefixCache
from tracejudge.llm.providers import DEFAULT_BASE_URLS, JudgeRequest, build_payload, protocol_of
from tracejudge.llm.judge_tokenizer import spec_of
from tracejudge.stages.judge.base import JudgeMetric
from tracejudge.stages.judge.client import build_request, key_components, request_tokens
from tracejudge.stages.judge.fit import fit_request
from tracejudge.stages.judge.multi import Item, build_multi_request, item_id
from tracejudge.stages.judge.requests import case_requests, fitted_requests

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
    worst_requests: int = 0  # if every reply needed its repair and re-asks
    worst_input_tokens: int = 0
    worst_output_tokens: int = 0
    worst_cost_usd: float = 0.0
    truncated: int = 0  # requests fitted to the judge's context (priced as fitted, as the run sends them)
    too_long: int = 0  # requests that cannot fit: the run sends nothing for them


_FIELDS = ("cases", "requests", "cache_hits", "input_tokens", "output_tokens", "cost_usd", "no_request", "questions",
           "cached_input_tokens", "cache_write_input_tokens", "worst_requests", "worst_input_tokens", "worst_output_tokens", "worst_cost_usd",
           "truncated", "too_long")


def last_run_rate(run_dir: Path) -> float | None:
    """Repair and re-ask requests per first request in the last run of `run_dir` (its `summary.json`), or None without one,
    or when that run got no reply at all (a server that was not there measured no rate: 0 re-asks would be a guess)."""
    try:
        judge = json.loads((run_dir / "summary.json").read_text(encoding="utf-8")).get("judge") or {}
        extra = sum(int(judge.get(k) or 0) for k in ("repairs", "parts_reasked_alone", "items_reasked_alone"))
        first = int(judge.get("requests") or 0) - extra
        answered = judge.get("answered")
        if answered is not None and int(answered) <= 0:
            return None
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return extra / first if first > 0 else None


def cost_range(total: MetricEstimate, rate: float | None) -> dict[str, dict[str, Any]]:
    """`{"low": …, "high": …}` requests, tokens and dollars: none re-asked, and re-asked at `rate` (None: the worst case)."""
    low = {"requests": total.requests, "input_tokens": total.input_tokens, "output_tokens": total.output_tokens, "cost_usd": round(total.cost_usd, 6)}
    if rate is None:
        high = {"requests": total.worst_requests, "input_tokens": total.worst_input_tokens, "output_tokens": total.worst_output_tokens,
                "cost_usd": round(total.worst_cost_usd, 6)}
    else:
        high = {k: (round(v * (1 + rate), 6) if k == "cost_usd" else math.ceil(v * (1 + rate))) for k, v in low.items()}
    return {"low": low, "high": high}


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
    protocol, structured = protocol_of(cfg)
    provider_cache = PrefixCache()
    pending: dict[tuple[str, int], list[Item]] = {}
    reused = config.run.trials > 1 or cfg.calibration is not None
    tokenizer = spec_of(cfg)

    def charge(est: MetricEstimate, req: JudgeRequest, questions: int, items: int = 1, reasks: int = 0) -> None:
        tin = request_tokens(req, tokenizer)
        tout = min(cfg.max_tokens * items, cfg.expected_output_tokens * questions)
        payload = build_payload(protocol, req, structured)
        read, write = provider_cache.anthropic(req.model, payload) if protocol == "anthropic" else (provider_cache.openai(req.model, payload), 0)
        read = min(read, tin)
        write = min(write, tin - read)
        est.requests += 1
        est.questions += questions
        est.input_tokens += tin
        est.output_tokens += tout
        est.cached_input_tokens += read
        est.cache_write_input_tokens += write
        cost = (price.batch_cost(tin, tout, read, write) if batch else price.cost(tin, tout, read, write)) if price else 0.0
        est.cost_usd += cost
        # Worst case: a repair (the prompt again, plus the reply), then the re-asks, each about as dear as this request.
        n = 2 + reasks
        est.worst_requests += n
        est.worst_input_tokens += n * tin + tout
        est.worst_output_tokens += n * tout
        est.worst_cost_usd += n * cost

    # A self-hosted server's weights, as the last run learnt them (the estimate asks no server anything).
    served = cache.last_served(cfg.provider, base, cfg.model) if cache is not None and served_model.self_hosted(base) else None

    def cached(req: JudgeRequest, version: str, rubric: Any, trial: int) -> bool:
        return cache is not None and cache.get(cache_key(key_components(cfg.provider, base, req, version, rubric, trial, structured, served))) is not None

    def alone(est: MetricEstimate, item: Item) -> None:
        # As the run asks an item alone: fitted to the context window, or nothing sent when it cannot fit.
        fitted = fit_request(item.plan, item.questions, cfg)
        if not fitted.fits:
            est.too_long += 1
            return
        est.truncated += fitted.truncated
        charge(est, fitted.req, len(item.questions), max(1, len(item.plan.parts)))

    def flush(key: str, items: list[Item]) -> None:
        if not items:
            return
        if len(items) == 1:
            alone(out[key], items[0])
            return
        for it in items:
            it.id = item_id(it, cfg)
        req = build_multi_request(items, cfg)
        if request_tokens(req, tokenizer) > cfg.context_tokens - req.max_tokens:
            for it in items:  # the run asks each item alone when the group does not fit (`multi`)
                alone(out[key], it)
            return
        charge(out[key], req, sum(len(it.questions) for it in items), sum(max(1, len(it.plan.parts)) for it in items), reasks=len(items))

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
    valid = 0
    try:
        for raw in fmt.read(config.dataset):
            case = extract_record(raw, fmt, ctx)
            if not isinstance(case, Case):
                invalid += 1
                continue
            valid += 1
            asked, no_request = case_requests(case, metrics, cfg, reused)
            for metric in metrics:
                out[metric.key].cases += config.run.trials
                if metric.key in no_request:
                    out[metric.key].no_request += config.run.trials
            for trial in range(config.run.trials):
                for a in asked:
                    est = out.setdefault(a.key, MetricEstimate())
                    if a.metrics > 1:
                        est.cases += 1  # a group's own row: the cases it asks about (the total counts its metrics' rows)
                    if cfg.items_per_request > 1 and a.batchable:
                        slot = f"{case.id}|group|{trial}" if a.metrics > 1 else f"{case.id}|{a.key}|{trial}"
                        ask_items(a.key, Item(a.plan, trial, slot), trial)
                        continue
                    # What the run sends (and caches under): a long trace is fitted, a group that cannot fit asked metric by metric.
                    for key, plan, qs, fitted in fitted_requests(a, cfg):
                        by_itself = key != a.key  # (a metric of a group that cannot fit, asked alone)
                        mest = out.setdefault(key, MetricEstimate()) if by_itself else est
                        if not fitted.fits:
                            mest.too_long += 1  # the run sends nothing for it
                            continue
                        mest.truncated += fitted.truncated
                        req = fitted.req
                        if cached(req, plan.prompt_version, plan.metric.rubric if a.metrics == 1 or by_itself else None, trial):
                            mest.cache_hits += 1
                            continue
                        charge(mest, req, len(qs), 1 if by_itself else a.metrics, reasks=a.metrics if a.metrics > 1 and not by_itself else 0)
        for (key, _), items in pending.items():
            flush(key, items)
    finally:
        if cache is not None:
            cache.close()
    total = MetricEstimate()
    for k, e in out.items():
        for f in _FIELDS:
            if f == "cases" or (f == "no_request" and k not in {m.key for m in metrics}):
                continue  # a group's row counts requests, not cases: its metrics' rows count the cases
            setattr(total, f, getattr(total, f) + getattr(e, f))
    # The cases judged, each once (and per trial): the metric rows' sum counted a case once per metric.
    total.cases = valid * config.run.trials
    rate = last_run_rate(Path(config.run.dir))
    return {"metrics": out, "total": total, "priced": price is not None, "reask_rate": rate, "run_dir": str(config.run.dir),
            "range": cost_range(total, rate), "model": cfg.model, "invalid_cases": invalid,
            "items_per_request": cfg.items_per_request, "mode": cfg.mode, "group": cfg.group,
            "budget": {"max_judge_tokens": config.budget.max_judge_tokens, "max_cost_usd": config.budget.max_cost_usd}}
