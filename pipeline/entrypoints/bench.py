"""`tracejudge bench CONFIG`: measure a judge endpoint's throughput, latency and cost before a sweep.

What it sends: exactly the judge requests the run would send
(`tracejudge.stages.judge.requests.case_requests`: grouped per case with
`judge.group: case`, multi-item requests when `judge.items_per_request` > 1,
the schema as `judge.structured_output` says), built from an evenly spaced sample of the
config's dataset (`--sample N` cases), so prompt sizes and reply lengths are
the real ones; or, with `--synthetic`, requests of `--prompt-tokens` T
prompt tokens and `--max-tokens` M. Replies are read for usage only and are
never cached as verdicts (a bench must reach the endpoint).

How it measures:

1. **Ramp.** Concurrency 1, 2, 4, … ; each level sends max(12, 3 × level)
   requests or for `STEP_S` seconds, whichever ends first. The ramp stops at the first level where throughput (answered
   requests per second) grows less than `GROWTH` × the previous level's,
   a 429 came back, or p95 latency exceeds twice level 1's; the best level
   is then the previous one (the knee). A level cut short by `--requests` or
   the cost cap with fewer than `MIN_SAMPLES` answers is not measured and
   never recommended (the last level measured in full is). All requests go through one
   `AdaptiveLimiter` that follows the provider's rate-limit headers
   (`x-ratelimit-*`, `anthropic-ratelimit-*`), so a drained bucket or a
   full window shows up as a plateau, not a 429 storm. A server without
   headers (vLLM, llama.cpp, Ollama) is measured by its knee alone.
2. **Hold.** The best level for `--duration` seconds: the measured phase.
   Sustained requests/min and input/output tokens/min are what was
   answered per minute over it — over its steady part once a limit's
   remaining allowance ran low (a bucket that starts full lets a burst
   through first), or capped at the limits the headers report when the
   bench never reached them; latency percentiles are the provider's
   latency of the same requests (admission wait excluded).

Safe with money: before the first request it prints the most the bench can
cost (requests × the dearest request's worst case, capped by
`--max-cost-usd`); every request reserves its worst case first and none is
sent once `--max-cost-usd` (default $1) or `--requests` (default 200)
would be crossed. `--dry-run` prints the plan and sends nothing.

Failures are shown by kind with the server's own message (redacted, cut);
when requests time out, the report says to raise `judge.timeout_s` (naming
its value). `--dry-run` needs no API key.

The report (terminal table; `--json FILE` writes the same as JSON) projects
the full sweep of the config's dataset from `tracejudge.stages.judge.estimate`
(every request built and tiktoken-counted) scaled by the provider's own
count of the sample's prompts, with output tokens per question as measured
per metric: wall time at the sustained rate and dollars, synchronously and
through the batch API at batch prices, and grouped `GROUP` items per request
(`judge.items_per_request`) when the config asks one item per request; and
the `limits:` block to paste.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tracejudge.core import registry
from tracejudge.core.console import cell, stdout_console
from tracejudge.core.config import JudgeConfig, LimitsConfig, RunConfig, load_config
from tracejudge.core.errors import ConfigError
from tracejudge.core.records import Case, Score
from tracejudge.entrypoints.bench_args import add_parser
from tracejudge.llm.budget import InProcessBudget
from tracejudge.llm.prices import Price, price_for
from tracejudge.llm.providers import (
    DEFAULT_BASE_URLS,
    JudgeRequest,
    ProviderError,
    RateInfo,
    auth_headers,
    build_payload,
    endpoint,
    open_session,
    public_url,
    rate_info,
    read_reply,
    send,
)
from tracejudge.llm.redact import redact
from tracejudge.llm.ratelimit import AdaptiveLimiter

__all__ = ["BenchRequest", "add_parser", "build_sample", "command", "synthetic_requests"]

GROWTH = 1.25
# The steady part must be at least this share of the measured phase to stand for it.
MEASURED_SHARE = 0.3
# Items per request of the grouped-requests projection.
GROUP = 10
# The provider counts a prompt its own way (its tokenizer, its framing): the worst case held
# against the cost cap allows it 10 % more than tiktoken says.
PROMPT_MARGIN = 1.1
# A limit whose remaining allowance is under this share of it (or one request) binds.
LOW = 0.01
# A ramp level ends after its requests or this many seconds (a paced level is a plateau).
STEP_S = 2.0
# Fewest answers that measure a ramp level: a level cut short with fewer is never recommended.
MIN_SAMPLES = 8
MAX_LEVEL = 1024
UNLIMITED_RPM, UNLIMITED_TPM = 10**9, 10**12
BATCH_WINDOW = "≤ 24 h (the batch API's completion window)"


@dataclass(frozen=True)
class BenchRequest:
    """One request to send: what it asks, which metric built it, our tiktoken count of its prompt, how many questions it asks."""

    request: JudgeRequest
    metric: str
    prompt_tokens: int
    questions: int = 1


@dataclass
class Attempt:
    """One request sent: when (seconds since the bench started), how it ended, usage, the provider's rate headers."""

    phase: str
    level: int
    metric: str
    start_s: float
    latency_s: float
    outcome: str
    estimate: int
    questions: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    rate: RateInfo | None = None
    message: str = ""


@dataclass
class _State:
    attempts: list[Attempt] = field(default_factory=list)
    sent: int = 0
    stop: str | None = None


# ---------------------------------------------------------------------- requests


def build_sample(config: RunConfig, sample: int) -> list[BenchRequest]:
    """The judge requests of the config's judge metrics for `sample` cases spread evenly over the dataset.

    Built as the run builds them (one request per question group, or
    multi-item requests of `judge.items_per_request` items). Raises
    `ConfigError` when the config has no judge metric or the dataset no
    valid case.
    """
    from tracejudge.llm.judge_tokenizer import spec_of
    from tracejudge.stages.extract import extract_record
    from tracejudge.stages.judge.base import JudgeMetric
    from tracejudge.stages.judge.client import build_request, request_tokens
    from tracejudge.stages.judge.multi import Item, build_multi_request, item_id
    from tracejudge.stages.judge.requests import case_requests

    cfg = config.judge or JudgeConfig()
    metrics = [m for m in (registry.build_metric(s) for s in config.metrics) if isinstance(m, JudgeMetric)]
    if not metrics:
        raise ConfigError("bench: the config has no judge metric (add one, or use --synthetic)")
    fmt = registry.format_for(config.dataset.format)
    ctx = fmt.prepare(config.dataset)
    cases = [c for c in (extract_record(raw, fmt, ctx) for raw in fmt.read(config.dataset)) if isinstance(c, Case)]
    if not cases:
        raise ConfigError(f"bench: {config.dataset.path} holds no valid case")
    step = max(1, len(cases) // max(1, sample))
    chosen = cases[::step][:sample]
    out: list[BenchRequest] = []
    tok = spec_of(cfg)
    items: dict[str, list[Item]] = {}
    for case in chosen:
        asked, _ = case_requests(case, metrics, cfg, reused=config.run.trials > 1 or cfg.calibration is not None)
        for a in asked:
            if cfg.items_per_request > 1 and a.batchable:
                items.setdefault(a.key, []).append(Item(a.plan, 0, f"{case.id}|{a.key}|0"))
                continue
            for group in a.questions:
                req = build_request(a.plan, group, cfg)
                out.append(BenchRequest(req, a.key, request_tokens(req, tok), len(group)))
    for key, mine in items.items():
        for i in range(0, len(mine), cfg.items_per_request):
            group_items = mine[i:i + cfg.items_per_request]
            for it in group_items:
                it.id = item_id(it, cfg)
            req = build_multi_request(group_items, cfg)
            out.append(BenchRequest(req, key, request_tokens(req, tok), sum(len(it.questions) for it in group_items)))
    if not out:
        raise ConfigError("bench: the sampled cases give the judge metrics nothing to ask")
    return out


def synthetic_requests(model: str, prompt_tokens: int, max_tokens: int, count: int = 16) -> list[BenchRequest]:
    """`count` distinct requests of about `prompt_tokens` prompt tokens (tiktoken) asking for a one-field verdict."""
    from tracejudge.stages.judge.client import request_tokens

    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}, "reason": {"type": "string"}},
              "required": ["answer", "reason"], "additionalProperties": False}
    out = []
    for i in range(count):
        def make(words: int) -> JudgeRequest:
            text = f"Case {i}. Did the agent complete the task?" + " step" * words
            return JudgeRequest(model, ({"role": "system", "content": "You are a strict judge."}, {"role": "user", "content": text}),
                                schema, "verdict", max_tokens)
        words = max(0, prompt_tokens - request_tokens(make(0)))
        req = make(words)
        # One correction: a few words merge into fewer tokens.
        req = make(max(0, words + prompt_tokens - request_tokens(req)))
        out.append(BenchRequest(req, "synthetic", request_tokens(req)))
    return out


# ---------------------------------------------------------------------- sending


class _Bench:
    def __init__(self, *, session: Any, url: str, protocol: str, headers: dict[str, str], requests: list[BenchRequest],
                 limiter: AdaptiveLimiter, budget: InProcessBudget, price: Price | None, max_requests: int, timeout_s: float,
                 structured: str = "json_schema", max_bytes: int = 8 << 20, secrets: tuple[str | None, ...] = ()) -> None:
        self.session, self.url, self.protocol, self.headers = session, url, protocol, headers
        self.structured, self.max_bytes, self.secrets = structured, max_bytes, secrets
        self.requests = requests
        self.limiter, self.budget, self.price = limiter, budget, price
        self.max_requests, self.timeout_s = max_requests, timeout_s
        self.state = _State()
        self.t0 = time.monotonic()
        self._next = 0

    def _cost(self, tin: int, tout: int, cached: int = 0) -> float:
        return self.price.cost(tin, tout, cached) if self.price else 0.0

    async def one(self, phase: str, level: int, until_s: float | None = None) -> bool:
        """Send the next request; False once a cap stops the bench or `until_s` (bench clock) passed in the admission queue."""
        st = self.state
        if st.stop:
            return False
        if st.sent >= self.max_requests:
            st.stop = "requests"
            return False
        br = self.requests[self._next % len(self.requests)]
        self._next += 1
        prompt = math.ceil(br.prompt_tokens * PROMPT_MARGIN)
        worst = prompt + br.request.max_tokens
        held = self.budget.reserve(worst, self._cost(prompt, br.request.max_tokens))
        if held is None:
            st.stop = "cost cap"
            return False
        st.sent += 1
        permit = None
        with anyio.move_on_after(math.inf if until_s is None else until_s - (time.monotonic() - self.t0)):
            permit = await self.limiter.acquire(worst)
        if permit is None:  # the phase ended while this request waited for admission: never sent
            st.sent -= 1
            self.budget.settle(held, 0, 0.0)
            return False
        start = time.monotonic()
        att = Attempt(phase, level, br.metric, start - self.t0, 0.0, "ok", br.prompt_tokens, br.questions)
        try:
            http = await send(self.session, self.url, self.headers, build_payload(self.protocol, br.request, self.structured), self.timeout_s,
                              self.max_bytes)
            att.latency_s = http.latency_s
            att.rate = rate_info(http.headers)
            reply = read_reply(self.protocol, http, 3600.0, self.secrets)
        except ProviderError as exc:
            att.latency_s = att.latency_s or time.monotonic() - start
            att.outcome = exc.kind
            att.message = " ".join(redact(str(exc), self.secrets).split())[:300]
            att.rate = exc.rate or att.rate
            self.limiter.settle(permit, exc.kind, None, exc.rate)
            billed = br.prompt_tokens if exc.kind in ("timeout", "connection") else 0
            self.budget.settle(held, billed, self._cost(billed, 0))
            st.attempts.append(att)
            return True
        except BaseException:
            self.limiter.settle(permit, "timeout")
            self.budget.settle(held, worst, self._cost(prompt, br.request.max_tokens))
            raise
        att.input_tokens, att.output_tokens, att.cached_tokens = reply.input_tokens, reply.output_tokens, reply.cached_input_tokens
        self.limiter.settle(permit, "ok", reply.input_tokens + reply.output_tokens, att.rate)
        self.budget.settle(held, reply.input_tokens + reply.output_tokens, self._cost(reply.input_tokens, reply.output_tokens, reply.cached_input_tokens))
        st.attempts.append(att)
        return True

    async def level(self, phase: str, level: int, count: int | None, until_s: float | None) -> list[Attempt]:
        """`level` workers sending one request after another, `count` in all or until `until_s` (bench clock)."""
        first = len(self.state.attempts)
        self.limiter.max_in_flight = level
        self.limiter.cap = float(level)
        budget = [count if count is not None else math.inf]

        async def worker() -> None:
            while budget[0] > 0 and (until_s is None or time.monotonic() - self.t0 < until_s):
                budget[0] -= 1
                if not await self.one(phase, level, until_s):
                    return

        async with anyio.create_task_group() as tg:
            for _ in range(level):
                tg.start_soon(worker)
        return self.state.attempts[first:]


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))]


def _step(level: int, attempts: list[Attempt]) -> dict[str, Any]:
    ok = [a for a in attempts if a.outcome == "ok"]
    span = (max(a.start_s + a.latency_s for a in attempts) - min(a.start_s for a in attempts)) if attempts else 0.0
    return {"level": level, "requests": len(attempts), "answered": len(ok), "rate_limited": sum(a.outcome in ("rate_limited", "quota") for a in attempts),
            "throughput_rps": len(ok) / span if span > 0 else 0.0, "p95_s": _pct([a.latency_s for a in ok], 0.95)}


async def _ramp(bench: _Bench, start_level: int, max_level: int) -> tuple[int, list[dict[str, Any]], str]:
    """Levels 1, 2, 4, …: (best level, per-level figures, why the ramp stopped).

    A level recommended has at least `MIN_SAMPLES` answers: one cut short by `--requests` or the cost cap is
    reported but never chosen over the last level measured in full (its one or two requests say nothing of its
    throughput), and the reason says the bench ran out.
    """
    steps: list[dict[str, Any]] = []
    level = start_level
    while True:
        until = time.monotonic() - bench.t0 + STEP_S
        got = _step(level, await bench.level("ramp", level, max(12, 3 * level), until))
        steps.append(got)
        prev = steps[-2] if len(steps) > 1 else None
        if bench.state.stop and got["answered"] < MIN_SAMPLES and bench.state.stop in ("requests", "cost cap"):
            cap = "--requests" if bench.state.stop == "requests" else "--max-cost-usd"
            best = prev["level"] if prev is not None else level
            return best, steps, (f"ran out of requests ({cap}) at {level} in flight after {got['answered']} answers, too few to measure it "
                                 f"(at least {MIN_SAMPLES}); {best} is the last level measured in full: raise {cap} to measure further")
        if got["answered"] == 0 and bench.state.stop:
            return (prev or got)["level"], steps, f"{bench.state.stop} reached during the ramp"
        if got["answered"] == 0:
            kinds = sorted({a.outcome for a in bench.state.attempts[-got["requests"]:]})
            bench.state.stop = bench.state.stop or "errors"
            return (prev or got)["level"], steps, f"no answer at {level} in flight ({', '.join(kinds)})"
        if got["rate_limited"]:
            return (prev or got)["level"], steps, f"429s at {level} in flight"
        base_p95 = steps[0]["p95_s"]
        if prev is not None and base_p95 and got["p95_s"] and got["p95_s"] > 2 * base_p95:
            return prev["level"], steps, f"p95 latency doubled at {level} in flight"
        if prev is not None and got["throughput_rps"] < GROWTH * prev["throughput_rps"]:
            return prev["level"], steps, f"throughput stopped growing at {level} in flight"
        if bench.state.stop:  # measured in full before the cap: it still grew, so it is the best seen
            return level, steps, f"{bench.state.stop} reached during the ramp"
        if level * 2 > max_level:
            return level, steps, f"reached the ramp's ceiling of {max_level} in flight"
        level *= 2


# ---------------------------------------------------------------------- report


def _binding(attempts: list[Attempt]) -> tuple[list[Attempt], str | None, float]:
    """Where the provider's allowance ran low (its headers' remaining under `LOW` of the limit).

    Returns the attempts answered after that point, which limit it was, and
    how much of that limit the provider still had there and no longer had
    at the end (the allowance left to spend, not sustained capacity). Before
    that point a bucket that started full (or a fresh window) lets a burst
    through that no client can sustain. `(attempts, None, 0)` when no limit
    ran low with at least `MEASURED_SHARE` of the phase left to measure.
    """
    if not attempts:
        return attempts, None, 0.0
    end = max(a.start_s for a in attempts)
    last = next((a.rate for a in reversed(attempts) if a.rate is not None), None)
    for i, a in enumerate(attempts):
        r = a.rate
        if r is None:
            continue
        low = [(kind, rem, end_rem) for kind, rem, lim, end_rem in (
            ("requests", r.remaining_requests, r.limit_requests, last.remaining_requests if last else None),
            ("tokens", r.remaining_tokens, r.limit_tokens, last.remaining_tokens if last else None)) if rem is not None and lim and rem <= max(LOW * lim, 1 if kind == "requests" else 0)]
        if low:
            start = a.start_s + a.latency_s
            if end - start < MEASURED_SHARE * (end - attempts[0].start_s):
                return attempts, None, 0.0
            kind, rem, end_rem = low[0]
            return [b for b in attempts[i + 1:] if b.start_s >= start], kind, float(max(0, rem - (end_rem or 0)))
    return attempts, None, 0.0


def _measured(attempts: list[Attempt], limits: dict[str, Any]) -> dict[str, Any]:
    """Sustained rates and latency of the measured phase.

    When a limit ran low during the phase, the figures are those of the
    steady state after it (`_binding`); otherwise the rates are what was
    answered, scaled down to the provider's reported limits when they are
    higher than those (a short bench cannot wait out a full bucket).
    """
    attempts = sorted(attempts, key=lambda a: a.start_s + a.latency_s)
    attempts, binding, drawn = _binding(attempts)
    ok = [a for a in attempts if a.outcome == "ok"]
    if not attempts:
        return {}
    t_start = min(a.start_s for a in attempts)
    t_end = max(a.start_s + a.latency_s for a in attempts)
    # The phase lasts as long as it sent; the last replies' latency is not idle capacity.
    span = max(1e-9, (max(a.start_s for a in attempts) - t_start) * len(attempts) / max(1, len(attempts) - 1)) if len(attempts) > 1 else t_end - t_start
    minutes = span / 60
    lat = [a.latency_s for a in ok]
    tin = sum(a.input_tokens for a in ok)
    tout = sum(a.output_tokens for a in ok)
    kinds: dict[str, int] = {}
    for a in attempts:
        if a.outcome != "ok":
            kinds[a.outcome] = kinds.get(a.outcome, 0) + 1
    rpm, tpm = len(ok) / minutes, (tin + tout) / minutes
    scale = 1.0
    if binding is not None and (rpm if binding == "requests" else tpm) > 0:
        # What the provider refilled is what was used, less the leftover allowance that was spent.
        used = len(ok) if binding == "requests" else tin + tout
        scale = max(0.0, used - drawn) / used
    else:
        if limits.get("limit_requests") and rpm > limits["limit_requests"]:
            scale, binding = limits["limit_requests"] / rpm, "requests"
        if limits.get("limit_tokens") and tpm * scale > limits["limit_tokens"]:
            scale, binding = limits["limit_tokens"] / tpm, "tokens"
    return {
        "seconds": round(span, 3),
        "requests": len(attempts), "answered": len(ok), "binds": binding or "concurrency",
        "rpm": rpm * scale, "input_tpm": tin / minutes * scale, "output_tpm": tout / minutes * scale, "tpm": tpm * scale,
        "latency_p50_s": _pct(lat, 0.5), "latency_p95_s": _pct(lat, 0.95), "latency_p99_s": _pct(lat, 0.99),
        "rate_limited_share": sum(a.outcome in ("rate_limited", "quota") for a in attempts) / len(attempts),
        "errors": kinds,
        "cached_token_share": sum(a.cached_tokens for a in ok) / tin if tin else 0.0,
        "output_tokens_per_request": tout / len(ok) if ok else None,
    }


def _headers_seen(attempts: list[Attempt]) -> dict[str, Any]:
    rates = [a.rate for a in attempts if a.rate is not None and (a.rate.limit_requests or a.rate.limit_tokens)]
    if not rates:
        return {"present": False}
    last = rates[-1]
    return {"present": True, "limit_requests": last.limit_requests, "limit_tokens": last.limit_tokens}


def _project(config: RunConfig, attempts: list[Attempt], measured: dict[str, Any], price: Price | None, provider: str) -> dict[str, Any] | None:
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


def _recommend(best: int, measured: dict[str, Any], headers: dict[str, Any], window: str) -> dict[str, Any] | None:
    """The `limits:` block: the provider's own limits when its headers gave them, else the sustained rates; the knee as in-flight cap.

    `None` when fewer than `MIN_SAMPLES` requests were answered at the level: too few to recommend anything.
    """
    if (measured.get("answered") or 0) < MIN_SAMPLES:
        return None
    rpm = headers.get("limit_requests") or max(1, int(measured.get("rpm") or 1))
    tpm = headers.get("limit_tokens") or max(1, int(measured.get("tpm") or 1))
    return {"rpm": int(rpm), "tpm": int(tpm), "max_in_flight": best, "window": window}


def _print(report: dict[str, Any], console: Console) -> None:
    m, p = report["measured"], report.get("projection")
    table = Table(title=f"judge bench: {report['model']} at {report['endpoint']}", title_justify="left")
    table.add_column("figure")
    table.add_column("value")

    def ms(v: float | None) -> str:
        return f"{v * 1000:,.0f} ms" if v is not None else "n/a"

    ramp = ", ".join(f"{s['level']}: {s['throughput_rps'] * 60:,.0f}/min" for s in report["ramp"])
    rows = [
        ("ramp (in flight: answered/min)", ramp),
        ("ramp stopped", report["ramp_stopped"]),
        ("held level (in flight)", str(report["best_level"])),
        ("rate-limit headers", (f"{_num(report['headers'].get('limit_requests'))} RPM, {_num(report['headers'].get('limit_tokens'))} TPM "
                                f"({report['window']} limits)") if report["headers"]["present"] else "none (measured by the knee)"),
        ("measured phase", f"{m.get('seconds', 0):.1f} s, {m.get('requests', 0)} requests"),
        ("sustained requests/min", f"{m.get('rpm', 0):,.0f} (bound by {m.get('binds', 'n/a')})"),
        ("sustained input / output tokens/min", f"{m.get('input_tpm', 0):,.0f} / {m.get('output_tpm', 0):,.0f}"),
        ("latency p50 / p95 / p99", f"{ms(m.get('latency_p50_s'))} / {ms(m.get('latency_p95_s'))} / {ms(m.get('latency_p99_s'))}"),
        ("429 share", f"{m.get('rate_limited_share', 0):.1%}"),
        ("errors", ", ".join(f"{k} {v}" for k, v in m.get("errors", {}).items()) or "none"),
        *((f"  {kind}", msg) for kind, msg in report.get("error_messages", {}).items()),
        ("cached-token share", f"{m.get('cached_token_share', 0):.1%}"),
        ("output tokens per request", f"{m['output_tokens_per_request']:.1f}" if m.get("output_tokens_per_request") is not None else "n/a"),
        ("bench spent", f"${report['spent_usd']:.4f} ({report['requests_sent']} requests; stopped by {report['stopped_by']})"),
    ]
    if p:
        rows += _sweep_rows(p)
    for k, v in rows:
        table.add_row(cell(k), cell(v))
    console.print(table)
    for hint in report.get("hints", []):
        console.print(hint, highlight=False, soft_wrap=True)
    lim = report["recommended_limits"]
    if lim is None:
        n = m.get("answered") or 0
        console.print("limits: none to recommend (" + ("no request was answered)" if not n else
                      f"only {n} answers at level {report['best_level']}, at least {MIN_SAMPLES} measure a level: raise --requests)"), highlight=False)
        return
    console.print(f"limits: {{rpm: {lim['rpm']}, tpm: {lim['tpm']}, max_in_flight: {lim['max_in_flight']}, window: {lim['window']}}}", highlight=False)


def _sweep_rows(p: dict[str, Any]) -> list[tuple[str, str]]:
    """The projection's rows: what the judge cache answers, then each mode's paid requests, wall time and dollars."""
    hits = p.get("cache_hits", 0)
    cached = (f"the judge cache answers {hits:,} of their requests (free; a cold cache would need {p.get('cold_cache_requests', 0):,}), "
              if hits else "")
    rows = [("full sweep", f"{p['cases']:,} judged cases: {cached}{p['requests']:,} requests to send, "
                           f"{p['input_tokens']:,} in + {p['output_tokens']:,} out tokens")]
    for mode, v in p["modes"].items():
        wall = v.get("wall") or _duration(v["wall_s"])
        usd = f"${v['usd']:,.2f}" if v["usd"] is not None else "no price"
        note = ""
        if hits and v.get("cache_hits") is not None and v["cache_hits"] < hits:
            note = f" (grouped prompts are cached apart: the cache answers {v['cache_hits']:,} of them)"
        rows.append((f"  {mode}", f"{v['requests']:,} requests, {wall}, {usd}{note}"))
    return rows


def _num(v: int | None) -> str:
    return f"{v:,}" if v else "-"


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "n/a"
    h, rest = divmod(int(round(seconds)), 3600)
    return f"{h} h {rest // 60} min" if h else f"{rest // 60} min {rest % 60} s"


# ---------------------------------------------------------------------- command


def _config(args: argparse.Namespace) -> RunConfig:
    overrides = list(args.overrides)
    for flag, key in (("provider", "judge.provider"), ("base_url", "judge.base_url"), ("model", "judge.model")):
        if getattr(args, flag):
            overrides.append(f"{key}={getattr(args, flag)}")
    if args.config is None:
        if not args.synthetic:
            raise ConfigError("bench: give a CONFIG, or --synthetic")
        from tracejudge.core.config import apply_overrides

        data: dict[str, Any] = {}
        apply_overrides(data, overrides, Path.cwd())
        try:
            judge = JudgeConfig.model_validate(data.get("judge", {}))
        except ValueError as exc:
            raise ConfigError(f"bench flags: {exc}") from None
        # No dataset: nothing to project, the limits are what the bench finds.
        return RunConfig.model_construct(judge=judge, dataset=None, metrics=[], limits=LimitsConfig())
    return load_config(args.config, overrides)


def command(args: argparse.Namespace, err: Console) -> int:
    """Run `tracejudge bench`; returns the exit status: 0, 1 when no request was answered, 2 for a bad config or flags."""
    from tracejudge.entrypoints.cli import EXIT_ASSERTION, EXIT_BAD_INPUT, EXIT_OK

    try:
        config = _config(args)
        cfg = config.judge or JudgeConfig()
        if args.synthetic:
            requests = synthetic_requests(cfg.model, args.prompt_tokens, args.max_tokens or cfg.max_tokens)
        else:
            requests = build_sample(config, args.sample)
        from tracejudge.stages.judge.stage import api_key

        # A dry run sends nothing, so it needs no key.
        key = api_key(config) if config.judge is not None and not args.dry_run else None
    except ConfigError as exc:
        err.print(f"[bold red]config error[/]\n{escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
        return EXIT_BAD_INPUT
    if args.requests < 1 or args.max_cost_usd < 0 or args.duration <= 0:
        err.print("--requests must be ≥ 1, --duration > 0 and --max-cost-usd ≥ 0", highlight=False)
        return EXIT_BAD_INPUT
    price = price_for(cfg.model, cfg.prices)
    console = stdout_console()  # piped: COLUMNS or 100 wide, like every command's tables
    dearest = max(price.cost(math.ceil(r.prompt_tokens * PROMPT_MARGIN), r.request.max_tokens) for r in requests) if price else 0.0
    most = min(args.requests * dearest, args.max_cost_usd)
    sizes = sorted(r.prompt_tokens for r in requests)
    console.print(f"bench plan: {len(requests)} distinct requests (prompt tokens {sizes[0]:,}–{sizes[-1]:,}, median {sizes[len(sizes) // 2]:,}; "
                  f"max_tokens {requests[0].request.max_tokens}), at most {args.requests} requests, ramp 1, 2, 4, … ≤ {args.max_level} in flight, "
                  f"then {args.duration:g} s at the best level", highlight=False)
    console.print(f"the bench can cost at most ${most:.4f}" + (f" (at ${price.input}/${price.output} per M tokens)" if price else " (no price for this model)"),
                  highlight=False)
    if args.dry_run:
        console.print("dry run: nothing sent", highlight=False)
        return EXIT_OK
    report = anyio.run(_run, config, cfg, requests, key, price, args)
    _print(report, console)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    if not report["measured"].get("answered"):
        err.print(f"bench failed: no request was answered ({report['ramp_stopped']})", highlight=False)
        return EXIT_ASSERTION
    return EXIT_OK


async def _run(config: RunConfig, cfg: JudgeConfig, requests: list[BenchRequest], key: str | None, price: Price | None,
               args: argparse.Namespace) -> dict[str, Any]:
    runner = None
    base = cfg.base_url
    if cfg.provider == "simulator" and not base:
        from tracejudge.simulator.server import SimConfig, start_simulator

        s = cfg.simulator
        runner, url = await start_simulator(SimConfig(latency_ms=s.latency_ms, rpm=s.rpm, tpm=s.tpm, error_rate=s.error_rate, seed=s.seed,
                                                      json_object_only=s.json_object_only, tokenizer_factor=s.tokenizer_factor))
        base = url + "/v1"
    protocol = "anthropic" if cfg.provider == "anthropic" else "openai"
    # The limits are what the bench finds out; how they are counted may be known already.
    limiter = AdaptiveLimiter(UNLIMITED_RPM, UNLIMITED_TPM, 1, config.limits.window)
    budget = InProcessBudget(None, args.max_cost_usd)
    try:
        async with open_session(args.max_level) as session:
            bench = _Bench(session=session, url=endpoint(cfg.provider, base), protocol=protocol, headers=auth_headers(protocol, key),
                           requests=requests, limiter=limiter, budget=budget, price=price, max_requests=args.requests, timeout_s=cfg.timeout_s,
                           structured=cfg.structured_output if protocol == "openai" else "json_schema", max_bytes=cfg.max_response_bytes,
                           secrets=(key,))
            best, steps, why = await _ramp(bench, 1, args.max_level)
            hold_start = time.monotonic() - bench.t0
            held = await bench.level("hold", best, None, hold_start + args.duration) if not bench.state.stop else []
    finally:
        if runner is not None:
            await runner.cleanup()
    attempts = bench.state.attempts
    headers = _headers_seen(attempts)
    measured = _measured(held or [a for a in attempts if a.level == best], headers)
    # Without headers nothing tells a bucket from a window: keep what the config says.
    mode = limiter.mode if headers["present"] else config.limits.window
    report: dict[str, Any] = {
        "model": cfg.model, "provider": cfg.provider, "endpoint": public_url(base or DEFAULT_BASE_URLS.get(cfg.provider, "")),
        "ramp": steps, "ramp_stopped": why, "best_level": best, "headers": headers, "window": mode,
        "measured": measured, "requests_sent": bench.state.sent, "spent_usd": round(budget.spent_usd, 6),
        "stopped_by": bench.state.stop or "duration",
        "recommended_limits": _recommend(best, measured, headers, mode),
    }
    report["projection"] = _project(config, attempts, measured, price, cfg.provider) if config.dataset is not None and measured else None
    report["error_messages"], report["hints"] = _errors(attempts, cfg)
    report["attempts"] = [{k: v for k, v in asdict(a).items() if k != "rate"} for a in attempts]
    return report


def _errors(attempts: list[Attempt], cfg: JudgeConfig) -> tuple[dict[str, str], list[str]]:
    """The server's message per failure kind (the first seen; redacted), and what to change."""
    from tracejudge.llm.replies import request_fix

    messages: dict[str, str] = {}
    for a in attempts:
        if a.outcome != "ok" and a.message:
            messages.setdefault(a.outcome, a.message)
    hints = []
    if "timeout" in messages:
        hints.append(f"requests timed out: raise judge.timeout_s (now {cfg.timeout_s:g} s) for a slow server")
    if "request" in messages:
        hints.append(f"the server refused the requests themselves: {request_fix(messages['request'])}")
    if "unreachable" in messages:
        hints.append("the judge could not be reached: is the server running and judge.base_url right?")
    return messages, hints
