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

Every judge the run asks is counted as the run asks it: with a panel
(`judge.models`) each member's requests are built with its own config (model,
structured output, tokenizer), keyed for the cache as its requests are and
priced at its own prices (a member without a price makes the dollars unknown,
named in `unpriced`, never $0); with `judge.samples` N each request is counted
N times, sample s > 0 keyed as the run keys it (`repeat.sample_trial`).

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
from tracejudge.stages.judge.requests import Asked, case_requests, fitted_requests

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


class _Judge:
    """One judge's part of the estimate (the section's model, or a panel member: `panel.Member`): its requests built with
    its own config (model, structured output, tokenizer, context), keyed for the cache as its requests are, priced at
    its own prices, fed to a prefix cache of its own; rows by metric key in `out`."""

    def __init__(self, name: str, cfg: JudgeConfig, cache: DiskJudgeCache | None, cache_base: str) -> None:
        self.name, self.cfg, self.cache, self.base = name, cfg, cache, cache_base
        self.price = price_for(cfg.model, cfg.prices)
        self.batch = cfg.mode == "batch"
        self.protocol, self.structured = protocol_of(cfg)
        self.tokenizer = spec_of(cfg)
        self.prefix = PrefixCache()
        self.out: dict[str, MetricEstimate] = {}
        self.pending: dict[tuple[str, Any], list[Item]] = {}
        # A self-hosted server's weights, as the last run learnt them (the estimate asks no server anything).
        self.served = (cache.last_served(cfg.provider, cache_base, cfg.model)
                       if cache is not None and cfg.provider != "simulator" and served_model.self_hosted(cache_base) else None)

    def row(self, key: str) -> MetricEstimate:
        return self.out.setdefault(key, MetricEstimate())

    def charge(self, est: MetricEstimate, req: JudgeRequest, questions: int, items: int = 1, reasks: int = 0) -> None:
        cfg = self.cfg
        tin = request_tokens(req, self.tokenizer)
        tout = min(cfg.max_tokens * items, cfg.expected_output_tokens * questions)
        payload = build_payload(self.protocol, req, self.structured)
        read, write = self.prefix.anthropic(req.model, payload) if self.protocol == "anthropic" else (self.prefix.openai(req.model, payload), 0)
        read = min(read, tin)
        write = min(write, tin - read)
        est.requests += 1
        est.questions += questions
        est.input_tokens += tin
        est.output_tokens += tout
        est.cached_input_tokens += read
        est.cache_write_input_tokens += write
        price = self.price
        cost = (price.batch_cost(tin, tout, read, write) if self.batch else price.cost(tin, tout, read, write)) if price else 0.0
        est.cost_usd += cost
        # Worst case: a repair (the prompt again, plus the reply), then the re-asks, each about as dear as this request.
        n = 2 + reasks
        est.worst_requests += n
        est.worst_input_tokens += n * tin + tout
        est.worst_output_tokens += n * tout
        est.worst_cost_usd += n * cost

    def cached(self, req: JudgeRequest, version: str, rubric: Any, trial: int | str) -> bool:
        if self.cache is None:
            return False
        comps = key_components(self.cfg.provider, self.base, req, version, rubric, trial, self.structured, self.served)  # type: ignore[arg-type]
        return self.cache.get(cache_key(comps)) is not None

    def alone(self, key: str, item: Item) -> None:
        # As the run asks an item alone: fitted to the context window, or nothing sent when it cannot fit.
        est = self.row(key)
        fitted = fit_request(item.plan, item.questions, self.cfg)
        if not fitted.fits:
            est.too_long += 1
            return
        est.truncated += fitted.truncated
        self.charge(est, fitted.req, len(item.questions), max(1, len(item.plan.parts)))

    def flush(self, key: str, items: list[Item]) -> None:
        if not items:
            return
        if len(items) == 1:
            self.alone(key, items[0])
            return
        cfg = self.cfg
        for it in items:
            it.id = item_id(it, cfg)
        req = build_multi_request(items, cfg)
        if request_tokens(req, self.tokenizer) > cfg.context_tokens - req.max_tokens:
            for it in items:  # the run asks each item alone when the group does not fit (`multi`)
                self.alone(key, it)
            return
        self.charge(self.row(key), req, sum(len(it.questions) for it in items), sum(max(1, len(it.plan.parts)) for it in items), reasks=len(items))

    def ask_item(self, key: str, item: Item) -> None:
        # `items_per_request` > 1: gathered N at a time per trial (a sample's its own), as each judge's batcher gathers
        # them; a cached item is left out of its group.
        if self.cache is not None:
            item.id = item_id(item, self.cfg)
            if self.cached(build_multi_request([item], self.cfg), item.plan.prompt_version, item.plan.metric.rubric, item.trial):
                self.row(key).cache_hits += 1
                return
        group = self.pending.setdefault((key, item.trial), [])
        group.append(item)
        if len(group) >= self.cfg.items_per_request:
            self.flush(key, group)
            self.pending[(key, item.trial)] = []

    def ask(self, case_id: str, a: Asked, trial: int | str) -> None:
        """What the run sends for `a` about case `case_id` as `trial` (`repeat.sample_trial`: a sample's own trial)."""
        cfg = self.cfg
        est = self.row(a.key)
        if cfg.items_per_request > 1 and a.batchable:
            slot = f"{case_id}|group|{trial}" if a.metrics > 1 else f"{case_id}|{a.key}|{trial}"
            self.ask_item(a.key, Item(a.plan, trial, slot))  # type: ignore[arg-type]
            return
        # What the run sends (and caches under): a long trace is fitted, a group that cannot fit asked metric by metric.
        for key, plan, qs, fitted in fitted_requests(a, cfg):
            by_itself = key != a.key  # (a metric of a group that cannot fit, asked alone)
            mest = self.row(key) if by_itself else est
            if not fitted.fits:
                mest.too_long += 1  # the run sends nothing for it
                continue
            mest.truncated += fitted.truncated
            req = fitted.req
            if self.cached(req, plan.prompt_version, plan.metric.rubric if a.metrics == 1 or by_itself else None, trial):
                mest.cache_hits += 1
                continue
            self.charge(mest, req, len(qs), 1 if by_itself else a.metrics, reasks=a.metrics if a.metrics > 1 and not by_itself else 0)

    def finish(self) -> None:
        for (key, _), items in self.pending.items():
            self.flush(key, items)
        self.pending = {}


def _add(into: MetricEstimate, e: MetricEstimate, skip: tuple[str, ...] = ()) -> None:
    for f in _FIELDS:
        if f not in skip:
            setattr(into, f, getattr(into, f) + getattr(e, f))


def _judges(config: RunConfig, cache: DiskJudgeCache | None) -> list[_Judge]:
    """The run's judges (`panel.panel_members`: each panel member, or the section's model), keyed as the run keys them."""
    from tracejudge.stages.judge.panel import panel_members, simulator_cache_name

    section = config.judge or JudgeConfig()
    out = []
    for m in panel_members(config):
        c = m.cfg
        base = simulator_cache_name(section.simulator) if c.provider == "simulator" else (c.base_url or DEFAULT_BASE_URLS[c.provider]).rstrip("/")
        out.append(_Judge(m.name, c, cache, base))
    return out


def estimate(config: RunConfig) -> dict[str, Any]:
    """Per-metric (and per-group) estimates and totals: `{"metrics": {key: MetricEstimate}, "total": MetricEstimate, "priced": bool, ...}`.

    Every judge of the run is counted: each panel member (`judge.models`) with its own model, prices, tokenizer and
    structured output, and each request `judge.samples` times (sample s > 0 keyed as the run keys it,
    `repeat.sample_trial`). The metric rows and the total add up every judge's; `models` holds each judge's total,
    `priced` (its own price known) and `model`; `priced` is False and `unpriced` names the judges without a price
    when any has none (their dollars are unknown, and so are the total's).
    """
    from tracejudge.stages.extract import extract_record
    from tracejudge.stages.judge.repeat import sample_trial

    cfg = config.judge or JudgeConfig()
    metrics = judge_metrics(config)
    cache = DiskJudgeCache(config.cache.dir) if config.cache.enabled and config.cache.dir.exists() else None
    judges = _judges(config, cache)
    cases = {m.key: MetricEstimate() for m in metrics}  # each metric's cases and no-request counts (once, whatever the judges)
    group_cases: dict[str, int] = {}
    # As the run marks a grouped trace for the prefix cache: asked again by another trial, calibration, sample or judge.
    reused = config.run.trials > 1 or cfg.calibration is not None or len(judges) * cfg.samples > 1
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
            for i, j in enumerate(judges):
                asked, no_request = case_requests(case, metrics, j.cfg, reused)  # (plans of its own: fitting notes on them)
                if i == 0:
                    for metric in metrics:
                        cases[metric.key].cases += config.run.trials
                        if metric.key in no_request:
                            cases[metric.key].no_request += config.run.trials
                    for a in asked:
                        if a.metrics > 1:  # a group's own row: the cases it asks about (the total counts its metrics' rows)
                            group_cases[a.key] = group_cases.get(a.key, 0) + config.run.trials
                for trial in range(config.run.trials):
                    for sample in range(cfg.samples):
                        for a in asked:
                            j.ask(case.id, a, sample_trial(trial, sample))
        for j in judges:
            j.finish()
    finally:
        if cache is not None:
            cache.close()
    out: dict[str, MetricEstimate] = dict(cases)
    for j in judges:
        for k, e in j.out.items():
            _add(out.setdefault(k, MetricEstimate()), e, ("cases", "no_request"))
    for k, n in group_cases.items():
        out.setdefault(k, MetricEstimate()).cases = n
    total = MetricEstimate()
    for k, e in out.items():
        # A group's row counts requests, not cases: its metrics' rows count the cases.
        _add(total, e, ("cases",) if k in cases else ("cases", "no_request"))
    # The cases judged, each once (and per trial): the metric rows' sum counted a case once per metric.
    total.cases = valid * config.run.trials
    models: dict[str, dict[str, Any]] = {}
    for j in judges:
        mine = MetricEstimate()
        for e in j.out.values():
            _add(mine, e, ("cases", "no_request"))
        models[j.name] = {"model": j.cfg.model, "priced": j.price is not None, "total": mine}
    panel = bool(cfg.models)
    unpriced = [j.name if panel else j.cfg.model for j in judges if j.price is None]  # (named as the run's judge line names them)
    rate = last_run_rate(Path(config.run.dir))
    return {"metrics": out, "total": total, "priced": not unpriced, "unpriced": unpriced, "reask_rate": rate, "run_dir": str(config.run.dir),
            "range": cost_range(total, rate), "model": f"panel of {len(judges)}: {', '.join(models)}" if panel else cfg.model,
            "models": models, "panel": panel, "samples": cfg.samples, "invalid_cases": invalid,
            "items_per_request": cfg.items_per_request, "mode": cfg.mode, "group": cfg.group,
            "budget": {"max_judge_tokens": config.budget.max_judge_tokens, "max_cost_usd": config.budget.max_cost_usd}}
