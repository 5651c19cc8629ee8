"""Stage `judge`: run the LLM-judge metrics of each case.

One `Judge` per run — one aiohttp session, one limiter, one budget, one
cache — shared by `judge.workers` concurrent tasks (default twice the
in-flight cap, so the admission gate always has work queued). With
`provider: simulator` the stage starts the judge simulator on 127.0.0.1
itself and stops it at the end.

How a case ends: every metric's score is stored; the case's status is
`skipped_budget` when some request was not sent for the budget (a resumed
run with a larger budget finishes it), else `judge_error` when some metric
got no usable verdict (the error's `kind` is `judge_error` or
`rate_limited`), else unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from pipeline.budget import InProcessBudget
from pipeline.config import RunConfig
from pipeline.errors import ConfigError
from pipeline.judge_cache import DiskJudgeCache
from pipeline.prices import price_for
from pipeline.providers import DEFAULT_BASE_URLS, endpoint, open_session
from pipeline.ratelimit import AdaptiveLimiter
from pipeline.records import ErrorInfo, Score, Status
from pipeline.simulator import SimConfig, start_simulator
from pipeline.work import Stage, Work
from stages.judge.base import JudgeMetric
from stages.judge.client import Judge, Outcome

__all__ = ["api_key", "judge_stage"]

_ADDITIVE = ("requests", "answered", "cache_hits", "retries", "rate_limited", "server_errors", "timeouts", "repairs", "judge_errors",
             "skipped_budget", "too_long", "truncated_prompts", "input_tokens", "output_tokens", "cost_usd", "saved_usd", "saved_tokens",
             "queued_s", "slept_s", "judged_results", "judge_error_results")


def api_key(config: RunConfig) -> str | None:
    """The judge API key from the environment variable the config names.

    Raises `ConfigError` naming the variable (never its value) when it is
    named but unset.
    """
    judge = config.judge
    if judge is None or judge.provider == "simulator" or not judge.api_key_env:
        return None
    value = os.environ.get(judge.api_key_env)
    if not value:
        raise ConfigError(f"judge.api_key_env: the environment variable {judge.api_key_env} is not set")
    return value


def judge_stage(config: RunConfig, metrics: Sequence[JudgeMetric], merge: Callable[[Sequence[Any], list[dict[str, Any]]], Sequence[Any]],
                prior: dict[str, Any] | None = None) -> Stage:
    """The `judge` stage for `metrics` (the run's judge metrics; cases may add their own through `merge`).

    `prior` is the `judge` block of an earlier segment of the same run: its
    spending counts against the budget and its counters are carried on.
    Raises `ConfigError` when the API key variable is unset.
    """
    from pipeline.config import JudgeConfig

    cfg = config.judge or JudgeConfig()
    key = api_key(config)
    prior = prior or {}
    state: dict[str, Any] = {"judge": None, "sim": None, "session": None, "cache": None, "results": 0, "errors": 0}
    lock = anyio.Lock()
    price = price_for(cfg.model, cfg.prices)
    one_per_default = cfg.one_question_per_request

    async def start() -> Judge:
        async with lock:
            if state["judge"] is not None:
                return state["judge"]
            if cfg.provider == "simulator":
                s = cfg.simulator
                runner, url = await start_simulator(SimConfig(latency_ms=s.latency_ms, rpm=s.rpm, tpm=s.tpm, error_rate=s.error_rate, seed=s.seed))
                state["sim"] = runner
                base, cache_base = url + "/v1", "simulator"
            else:
                base = cfg.base_url or DEFAULT_BASE_URLS[cfg.provider]
                cache_base = base.rstrip("/")
            state["session"] = open_session(config.limits.max_in_flight)
            cache = DiskJudgeCache(config.cache.dir) if config.cache.enabled else None
            state["cache"] = cache
            budget = InProcessBudget(config.budget.max_judge_tokens, config.budget.max_cost_usd,
                                     int(prior.get("input_tokens", 0)) + int(prior.get("output_tokens", 0)), float(prior.get("cost_usd", 0.0)))
            limiter = AdaptiveLimiter(config.limits.rpm, config.limits.tpm, config.limits.max_in_flight)
            state["judge"] = Judge(cfg, session=state["session"], url=endpoint(cfg.provider, base), api_key=key, limiter=limiter,
                                   budget=budget, cache=cache, price=price, cache_base_url=cache_base, explain=config.cache.explain)
            return state["judge"]

    async def process(work: Work) -> None:
        case = work.case
        use = list(metrics)
        if case.metrics:
            use = [m for m in merge(metrics, case.metrics) if isinstance(m, JudgeMetric)]
        if not use:
            return
        judge = state["judge"] or await start()
        outcomes: dict[str, Outcome] = {}

        async def one(metric: JudgeMetric) -> None:
            try:
                plan = metric.plan(case)
            except Exception as exc:  # a metric bug costs one score, not the run
                outcomes[metric.key] = Outcome(Score(value=None, passed=None, reason=f"metric raised {type(exc).__name__}: {exc}"))
                return
            if isinstance(plan, Score):
                outcomes[metric.key] = Outcome(plan)
                return
            per_q = one_per_default if metric.one_question_per_request is None else metric.one_question_per_request
            outcomes[metric.key] = await judge.judge(plan, work.trial, f"{case.id}|{metric.key}|{work.trial}", per_q)

        if len(use) == 1:
            await one(use[0])
        else:
            async with anyio.create_task_group() as tg:
                for metric in use:
                    tg.start_soon(one, metric)
        for metric in use:
            work.result.scores[metric.key] = outcomes[metric.key].score
        bad = [o for o in outcomes.values() if o.status != "ok"]
        state["results"] += 1
        skipped = [o for o in bad if o.status == "skipped_budget"]
        if skipped:
            work.result.status = Status.skipped_budget
            work.result.error = ErrorInfo(kind="skipped_budget", message=skipped[0].message)
        elif bad:
            state["errors"] += 1
            work.result.status = Status.judge_error
            work.result.error = ErrorInfo(kind=bad[0].status, message=bad[0].message)

    async def aclose() -> None:
        if state["session"] is not None:
            await state["session"].close()
        if state["sim"] is not None:
            await state["sim"].cleanup()
        if state["cache"] is not None:
            state["cache"].close()

    def summary() -> dict[str, Any]:
        judge: Judge | None = state["judge"]
        block = judge.stats.summary() if judge else {}
        block["judged_results"] = state["results"]
        block["judge_error_results"] = state["errors"]
        for k in _ADDITIVE:
            if k in prior or k in block:
                block[k] = round(block.get(k, 0) + prior.get(k, 0), 6) if isinstance(prior.get(k, 0), float) or isinstance(block.get(k, 0), float) else block.get(k, 0) + prior.get(k, 0)
        block.update(model=cfg.model, provider=cfg.provider, priced=price is not None)
        judged = block.get("judged_results", 0)
        block["error_share"] = round(block.get("judge_error_results", 0) / judged, 6) if judged else 0.0
        block["max_error_share"] = cfg.max_error_share
        block["gate_failed"] = block["error_share"] > cfg.max_error_share
        return block

    workers = cfg.workers or max(4, 2 * config.limits.max_in_flight)
    return Stage("judge", process, workers=workers, aclose=aclose, summary=summary)
