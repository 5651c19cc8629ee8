"""`tracejudge estimate CONFIG`: what the judge will cost, before any call.

For every case (and trial) and judge metric, the requests are built exactly
as the run would build them — grouped per case with `judge.group: case`
(one row per set of metrics asked together, e.g.
`TaskCompletion+ToolCallNecessity`), one per metric otherwise; input tokens
are counted with tiktoken (the same counter admission uses), output tokens
are estimated as `expected_output_tokens` per question, never below what the
reply's verdict format needs (`estimate_range.least_reply`) nor above
`max_tokens`; the cache is looked up, and requests it already answers are
counted as hits and cost nothing (a self-hosted server's requests keyed by
the weights the last run found it serving, `DiskJudgeCache.last_served`).
A request whose content address (the judge cache's key) an earlier request
of the same run already has — a case that appears twice in the dataset, the
same prompt asked again — is not sent by the run (its cache, or single flight
while the first is out) and is counted as a hit too (`repeats`). No network
call is made.

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

With `judge.calibration`, the requests it adds are counted in rows of their own
(`TaskCompletion (calibration)`), the total and both ends of the range: the
items its sample holds (a fixed hash of the slot, `Calibration.sampled`, per
trial, sample and panel member as the stage names them) are asked alone too
when their verdict comes from a shared request (a group, a multi-item request),
and rendered in full (`calibrated.full_plan`) unless that renders the same.

With `items_per_request` N > 1, items are grouped N at a time in dataset
order (the run groups them as they arrive, so real groups may differ a
little) and each group is priced as one multi-item request; an item the
cache already holds, or that an earlier item of the run asks too (the same
item id), is left out of its group. An item left alone in its group (the last
one, or items that do not fit together) is priced as the run asks it, a
request of its own looked up in the cache under its own address; for an
item the calibration sample holds that is the very request its calibration
asks alone, so it is counted once (the other a hit, `repeats`). With `mode: batch` dollars are
at the batch price (cached tokens at the batch share of the cached rate).
Repair requests and re-asks (a reply that does not parse gets one repair
request; a grouped one then asks each metric alone) cannot be foreseen, and
with a weak model they dominate; nor can a reply's length. So the estimate is
a range (`range`). `low` counts no repair or re-ask, each request repeated in
the run answered once, and each reply as short as its verdict format allows
(`estimate_range.least_reply`: the JSON the schema asks for, reasons empty),
with a cold judge cache but for the hits it already holds; for a multi-item
request, the items packed as tightly as they can be. `high` is a bound: each
reply as long as `max_tokens` allows, no provider prefix-cache discount
(Anthropic: every cacheable prefix written again), each repeat sent again (the
run does when the first reply was unusable, or with the cache off once the
first has landed), each item of a multi-item request priced as a request of
its own (the run groups items as they come, and an item adds at most a
one-item request's prompt to any group; a group cut short by `item_wait_s`
asks it alone), and repairs and re-asks at the rate the last run in the same
run directory measured (`summary.json`: repairs and re-asks per first
request; each priced like its request carrying a whole reply), or, with no
earlier run, as if every reply needed them (the worst case: a repair, and for
a grouped request each metric alone once, for a multi-item request each item
alone with its repair).

One judge's requests are built, keyed and priced in `estimate_judge`; the
range's two ends are made in `estimate_range`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracejudge.core import registry
from tracejudge.core.config import JudgeConfig, RunConfig
from tracejudge.core.records import Case
from tracejudge.llm.cache import DiskJudgeCache
from tracejudge.llm.prices import price_for
from tracejudge.llm.providers import DEFAULT_BASE_URLS
from tracejudge.stages.judge.base import JudgeMetric
from tracejudge.stages.judge.estimate_judge import CALIBRATION, JudgeEstimate, add_fields
from tracejudge.stages.judge.estimate_range import MetricEstimate, cost_range, finished_keys, last_run_rate, spent_so_far
from tracejudge.stages.judge.requests import case_requests, trace_reused

__all__ = ["CALIBRATION", "MetricEstimate", "estimate", "judge_metrics"]


def judge_metrics(config: RunConfig) -> list[JudgeMetric]:
    """The LLM-judge metrics among `config.metrics`, built (empty: nothing would be sent to a judge)."""
    return [m for m in (registry.build_metric(s) for s in config.metrics) if isinstance(m, JudgeMetric)]


def _judges(config: RunConfig, cache: DiskJudgeCache | None) -> list[JudgeEstimate]:
    """The run's judges (`panel.panel_members`: each panel member, or the section's model), keyed as the run keys them."""
    from tracejudge.stages.judge.panel import panel_members, simulator_cache_name

    section = config.judge or JudgeConfig()
    out = []
    for m in panel_members(config):
        c = m.cfg
        base = simulator_cache_name(section.simulator) if c.provider == "simulator" else (c.base_url or DEFAULT_BASE_URLS[c.provider]).rstrip("/")
        out.append(JudgeEstimate(m.name, c, cache, base, section.calibration is not None))
    return out


def estimate(config: RunConfig, fresh: bool = False) -> dict[str, Any]:
    """Per-metric (and per-group) estimates and totals: `{"metrics": {key: MetricEstimate}, "total": MetricEstimate, "priced": bool, ...}`.

    What the run of `config` will do: the (case, trial) pairs with a final result in its run directory are left out, as
    its resume skips them (`finished` of `of`); when every one has, a resume sends nothing, and the run priced is a
    fresh one (`run --fresh`, `all_finished`). `fresh`: price every case, whatever the directory holds.

    Every judge of the run is counted: each panel member (`judge.models`) with its own model, prices, tokenizer and
    structured output, and each request `judge.samples` times (sample s > 0 keyed as the run keys it,
    `repeat.sample_trial`). The metric rows and the total add up every judge's; `models` holds each judge's total,
    `priced` (its own price known) and `model`; `priced` is False and `unpriced` names the judges without a price
    when any has none (their dollars are unknown, and so are the total's).

    `calibration` (None without `judge.calibration`) counts the items sampled, those whose full rendering is the compact
    one, and the requests and cache hits of the `… (calibration)` rows. `budget` holds the caps and `spent`, what the run
    in the directory spent so far (`estimate_range.spent_so_far`; None for nothing, or for a fresh run), which the
    caps count too.
    """
    from tracejudge.engine.keyset import result_key
    from tracejudge.stages.extract import extract_record
    from tracejudge.stages.judge.calibration import Calibration
    from tracejudge.stages.judge.repeat import sample_trial

    cfg = config.judge or JudgeConfig()
    metrics = judge_metrics(config)
    cache = DiskJudgeCache(config.cache.dir) if config.cache.enabled and config.cache.dir.exists() else None
    judges = _judges(config, cache)
    calibration = Calibration(cfg.calibration)
    cases = {m.key: MetricEstimate() for m in metrics}  # each metric's cases and no-request counts (once, whatever the judges)
    group_cases: dict[str, int] = {}
    # As the run marks a grouped trace for the prefix cache: asked again by another trial, calibration, sample or judge.
    reused = trace_reused(config, len(judges))
    fmt = registry.format_for(config.dataset.format)
    ctx = fmt.prepare(config.dataset)
    invalid = 0
    valid = 0
    # The (case, trial) pairs with a final result in the run directory: the run (a resume) skips them, so they are not priced.
    done = None if fresh else finished_keys(Path(config.run.dir))
    finished = 0
    try:
        for raw in fmt.read(config.dataset):
            case = extract_record(raw, fmt, ctx)
            if not isinstance(case, Case):
                invalid += 1
                continue
            valid += 1
            trials = list(range(config.run.trials))
            if done is not None:
                trials = [t for t in trials if not done(result_key(case.id, t))]
                finished += config.run.trials - len(trials)
                if not trials:
                    continue
            for i, j in enumerate(judges):
                asked, no_request = case_requests(case, metrics, j.cfg, reused)  # (plans of its own: fitting notes on them)
                if i == 0:
                    for metric in metrics:
                        cases[metric.key].cases += len(trials)
                        if metric.key in no_request:
                            cases[metric.key].no_request += len(trials)
                    for a in asked:
                        if a.metrics > 1:  # a group's own row: the cases it asks about (the total counts its metrics' rows)
                            group_cases[a.key] = group_cases.get(a.key, 0) + len(trials)
                for trial in trials:
                    for sample in range(cfg.samples):
                        # (each pass's calibration slots as the stage names them: `case|metric|trial/sN@member`)
                        tail = f"|{trial}" + (f"/s{sample}" if sample else "") + (f"@{j.name}" if i else "")
                        for a in asked:
                            j.ask(case.id, a, sample_trial(trial, sample), calibration.sampled(f"{case.id}|{a.key}{tail}"))
                        if calibration.cfg is not None:
                            for a in asked:
                                j.calibrate(case, a, sample_trial(trial, sample), calibration.sampled, tail)
        for j in judges:
            j.finish()
    finally:
        if cache is not None:
            cache.close()
    if done is not None and finished and finished == valid * config.run.trials:
        return {**estimate(config, fresh=True), "finished": finished, "all_finished": True}
    out: dict[str, MetricEstimate] = dict(cases)
    for j in judges:
        for k, e in j.out.items():
            add_fields(out.setdefault(k, MetricEstimate()), e, ("cases", "no_request"))
    for k, n in group_cases.items():
        out.setdefault(k, MetricEstimate()).cases = n
    # `judge.calibration`'s rows last, each counting the items sampled (per trial, sample and panel member).
    sampled: dict[str, int] = {}
    identical = 0
    for j in judges:
        for k, n in j.sampled.items():
            sampled[k] = sampled.get(k, 0) + n
        identical += sum(j.identical.values())
    for k in sorted(sampled):
        row = out.pop(k, None) or MetricEstimate()
        row.cases = sampled[k]
        out[k] = row
    total = MetricEstimate()
    for k, e in out.items():
        # A group's row counts requests, not cases: its metrics' rows count the cases.
        add_fields(total, e, ("cases",) if k in cases else ("cases", "no_request"))
    # The cases judged, each once (and per trial): the metric rows' sum counted a case once per metric.
    total.cases = valid * config.run.trials - finished
    models: dict[str, dict[str, Any]] = {}
    for j in judges:
        mine = MetricEstimate()
        for e in j.out.values():
            add_fields(mine, e, ("cases", "no_request"))
        models[j.name] = {"model": j.cfg.model, "priced": j.price is not None, "total": mine}
    panel = bool(cfg.models)
    unpriced = [j.name if panel else j.cfg.model for j in judges if j.price is None]  # (named as the run's judge line names them)
    rate = last_run_rate(Path(config.run.dir))
    calib = None
    if cfg.calibration is not None:
        rows = [out[k] for k in sampled]
        calib = {"fraction": cfg.calibration.fraction, "seed": cfg.calibration.seed, "items": sum(sampled.values()), "identical_render": identical,
                 "requests": sum(e.requests for e in rows), "cache_hits": sum(e.cache_hits for e in rows)}
    # The caps are for the whole run in the directory, what its earlier segments spent included (`spent_so_far`); a fresh
    # run (`run --fresh`: a new directory) starts from nothing.
    spent = None if fresh else spent_so_far(Path(config.run.dir), price_for(cfg.model, cfg.prices))
    return {"metrics": out, "total": total, "priced": not unpriced, "unpriced": unpriced, "reask_rate": rate, "run_dir": str(config.run.dir),
            "range": cost_range(total, rate), "model": f"panel of {len(judges)}: {', '.join(models)}" if panel else cfg.model,
            "models": models, "panel": panel, "samples": cfg.samples, "invalid_cases": invalid,
            "finished": finished, "of": valid * config.run.trials, "trials": config.run.trials, "all_finished": False,
            "items_per_request": cfg.items_per_request, "mode": cfg.mode, "group": cfg.group,
            "calibration": calib,
            "budget": {"max_judge_tokens": config.budget.max_judge_tokens, "max_cost_usd": config.budget.max_cost_usd, "spent": spent}}
