"""From the measured rates to the config's full sweep (wall time, dollars, per mode) and the `limits:` block to paste."""

from __future__ import annotations

import math
from typing import Any

from tracejudge.core.config import JudgeConfig, RunConfig
from tracejudge.entrypoints.judge_bench.ramp import MIN_SAMPLES
from tracejudge.entrypoints.judge_bench.sender import Attempt
from tracejudge.llm.prices import Price

__all__ = ["BATCH_WINDOW", "GROUP", "project", "recommend"]

# Items per request of the grouped-requests projection.
GROUP = 10
BATCH_WINDOW = "≤ 24 h (the batch API's completion window)"


def project(config: RunConfig, attempts: list[Attempt], measured: dict[str, Any], price: Price | None, provider: str) -> dict[str, Any] | None:
    """The full sweep of the config's dataset: requests, tokens, wall time and dollars per mode."""
    from tracejudge.stages.judge.estimate import estimate

    ok = [a for a in attempts if a.outcome == "ok"]
    if not ok:
        return None
    ratio = sum(a.input_tokens for a in ok) / max(1, sum(a.estimate for a in ok))
    # The bench sends its sample's prompts again and again, so the provider's prefix cache serves
    # repeats a sweep (each prompt once) never sends: its cached share would understate the cost.
    # The projection prices every input token at the input rate — an upper bound.
    cached_share = 0.0
    # Reply length grows with the questions asked: project output tokens per question, per metric.
    overall = sum(a.output_tokens for a in ok) / max(1, sum(a.questions for a in ok))

    def sweep(est: dict[str, Any]) -> tuple[int, int, int]:
        requests = tin = tout = 0
        for key, e in est["metrics"].items():
            mine = [a for a in ok if a.metric == key]
            per_question = sum(a.output_tokens for a in mine) / max(1, sum(a.questions for a in mine)) if mine else overall
            requests += e.requests  # cache hits are not in it, grouped or not
            tin += round(e.input_tokens * ratio)
            tout += round(e.questions * per_question)
        return requests, tin, tout

    def mode(requests: int, tin: int, tout: int) -> dict[str, Any]:
        minutes = max(requests / measured["rpm"] if measured.get("rpm") else math.inf,
                      (tin + tout) / measured["tpm"] if measured.get("tpm") else math.inf)
        return {"requests": requests, "wall_s": round(minutes * 60, 1),
                "usd": round(price.cost(tin, tout, round(tin * cached_share)), 6) if price else None}

    if config.judge is not None and config.judge.models:
        # The bench measures the section's judge alone: the sweep is what the run sends it (each request `judge.samples`
        # times), not every panel member's requests, which `estimate` adds up and other endpoints answer.
        config = config.model_copy(update={"judge": config.judge.model_copy(update={"models": None})})
    est = estimate(config)
    requests, tin, tout = sweep(est)
    modes: dict[str, Any] = {"sync": mode(requests, tin, tout)}
    hits = est["total"].cache_hits
    # What the judge cache covers: its answers are free and not in the requests projected; a cold cache's sweep, for scale.
    cold = sweep(estimate(config.model_copy(update={"cache": config.cache.model_copy(update={"enabled": False})})))[0] if hits else requests
    cfg = config.judge or JudgeConfig()
    if cfg.items_per_request == 1:
        # Grouped requests (`judge.items_per_request`), at the measured rate: fewer requests, the fixed prompt paid once per group.
        grouped = config.model_copy(update={"judge": cfg.model_copy(update={"items_per_request": GROUP})})
        g_est = estimate(grouped)
        modes[f"grouped ({GROUP} per request)"] = {**mode(*sweep(g_est)), "cache_hits": g_est["total"].cache_hits}
    if provider in ("openai", "anthropic", "simulator"):
        modes["batch"] = {"requests": requests, "wall_s": None, "wall": BATCH_WINDOW,
                          "usd": round(price.batch_cost(tin, tout, round(tin * cached_share)), 6) if price else None}
    return {"cases": est["total"].cases, "requests": requests, "cache_hits": hits, "cold_cache_requests": cold, "input_tokens": tin, "output_tokens": tout,
            "provider_prompt_ratio": round(ratio, 4), "priced": price is not None, "modes": modes}


def recommend(best: int, measured: dict[str, Any], headers: dict[str, Any], window: str) -> dict[str, Any] | None:
    """The `limits:` block: the provider's own limits when its headers gave them, else the sustained rates; the knee as in-flight cap.

    `None` when fewer than `MIN_SAMPLES` requests were answered at the level: too few to recommend anything.
    """
    if (measured.get("answered") or 0) < MIN_SAMPLES:
        return None
    rpm = headers.get("limit_requests") or max(1, int(measured.get("rpm") or 1))
    tpm = headers.get("limit_tokens") or max(1, int(measured.get("tpm") or 1))
    return {"rpm": int(rpm), "tpm": int(tpm), "max_in_flight": best, "window": window}
