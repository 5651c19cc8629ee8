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

A refusal (HTTP 200 whose reply is the model's refusal: OpenAI `message.refusal`
or `finish_reason: content_filter`, Anthropic `stop_reason: refusal`) is an
answered request: billed at its usage as `tracejudge run` bills it (so it
counts toward `--max-cost-usd` and `bench spent`), counted in the rates,
latency and reply lengths like any answer (the provider served it and counts
it against its limits; a sweep of the same content gets the same refusals),
and counted among the unusable replies as `refused`, never as unanswered.

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
import re
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.markup import escape
from tracejudge.core.console import stdout_console
from tracejudge.core.config import JudgeConfig, LimitsConfig, RunConfig, load_config
from tracejudge.core.errors import ConfigError
from tracejudge.entrypoints.bench_args import add_parser
from tracejudge.entrypoints.judge_bench.measure import headers_seen, usability
from tracejudge.entrypoints.judge_bench.measure import measured as measure
from tracejudge.entrypoints.judge_bench.project import GROUP, project, recommend
from tracejudge.entrypoints.judge_bench.ramp import GROWTH, MIN_SAMPLES, STEP_S, ramp
from tracejudge.entrypoints.judge_bench.requests import BenchRequest, build_sample, synthetic_requests
from tracejudge.llm.judge_tokenizer import prompt_counter, spec_of
from tracejudge.entrypoints.judge_bench.sender import PROMPT_MARGIN, Attempt, Bench
from tracejudge.entrypoints.judge_bench.table import print_report, unusable_counts
from tracejudge.llm.budget import InProcessBudget
from tracejudge.llm.prices import Price, price_for
from tracejudge.llm.providers import DEFAULT_BASE_URLS, auth_headers, endpoint, open_session, protocol_of, public_url
from tracejudge.llm.ratelimit import AdaptiveLimiter

__all__ = ["BenchRequest", "add_parser", "build_sample", "command", "synthetic_requests"]

# The figures the docstring names (GROWTH, STEP_S, MIN_SAMPLES, GROUP) live with the step that uses them, imported above.

MAX_LEVEL = 1024
DEFAULT_MAX_COST_USD = 1.0  # --max-cost-usd when not given (a model without a price then has no cap, and says so)
UNLIMITED_RPM, UNLIMITED_TPM = 10**9, 10**12


def _config(args: argparse.Namespace) -> RunConfig:
    # The bench spends under its own cap (`--max-cost-usd`), never under the config's `budget`: a run's dollar cap refused
    # a bench of a model without a price (its cost cannot be enforced) though the bench would not enforce it at all.
    overrides = ["budget.max_cost_usd=null", *args.overrides]
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
    config = load_config(args.config, overrides)
    if config.judge is None or not config.judge.models:
        return config
    # A panel's members judge, not the section's own model: benched as it was, the bench measured and priced that model,
    # which the run never asks, and projected the sweep from its cache entries. One endpoint is measured at a time.
    members = ", ".join(m.model for m in config.judge.models)
    if not args.model:
        raise ConfigError(f"bench: judge.models is a panel ({members}), and the bench measures one judge endpoint: bench each member "
                          "on its own with --model (and --provider, --base-url when they differ from the judge section's), e.g. "
                          f"`--model {config.judge.models[0].model}`; the panel is then left out")
    return load_config(args.config, [*overrides, "judge.models=null"])


def command(args: argparse.Namespace, err: Console) -> int:
    """Run `tracejudge bench`; returns the exit status: 0, 1 when no request was answered, 2 for a bad config or flags."""
    from tracejudge.entrypoints.cli import EXIT_ASSERTION, EXIT_BAD_INPUT, EXIT_OK

    try:
        config = _config(args)
        cfg = config.judge or JudgeConfig()
        if args.synthetic:
            requests = synthetic_requests(cfg.model, args.prompt_tokens, args.max_tokens or cfg.max_tokens, extra_body=cfg.extra_body)
        else:
            requests = build_sample(config, args.sample)
        from tracejudge.stages.judge.stage import api_key

        # A dry run sends nothing, so it needs no key.
        key = api_key(config) if config.judge is not None and not args.dry_run else None
    except ConfigError as exc:
        err.print(f"[bold red]config error[/]\n{escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
        return EXIT_BAD_INPUT
    # (`not x >= 0`: a NaN is no cap and no duration, and compares False either way)
    if args.requests < 1 or (args.max_cost_usd is not None and not 0 <= args.max_cost_usd < math.inf) or not 0 < args.duration < math.inf:
        err.print("--requests must be ≥ 1, --duration > 0 and --max-cost-usd ≥ 0 (finite numbers)", highlight=False)
        return EXIT_BAD_INPUT
    price = price_for(cfg.model, cfg.prices)
    if price is None and args.max_cost_usd is not None:
        # As `run` refuses budget.max_cost_usd for an unpriced model: every request would count $0, so the cap
        # would let all of them through while the bench said it kept to it.
        err.print(f"[bold red]config error[/]\n{escape(_unpriced_cap(cfg.model, args.max_cost_usd, args.requests))}", highlight=False, markup=True,
                  soft_wrap=True)
        return EXIT_BAD_INPUT
    args.max_cost_usd = DEFAULT_MAX_COST_USD if args.max_cost_usd is None else args.max_cost_usd
    console = stdout_console()  # piped: COLUMNS or 100 wide, like every command's tables
    dearest = max(price.cost(math.ceil(r.prompt_tokens * PROMPT_MARGIN), r.request.max_tokens) for r in requests) if price else 0.0
    most = min(args.requests * dearest, args.max_cost_usd)
    sizes = sorted(r.prompt_tokens for r in requests)
    console.print(f"bench plan: {len(requests)} distinct requests (prompt tokens {sizes[0]:,}–{sizes[-1]:,}, median {sizes[len(sizes) // 2]:,}; "
                  f"max_tokens {requests[0].request.max_tokens}), at most {args.requests} requests, ramp 1, 2, 4, … ≤ {args.max_level} in flight, "
                  f"then {args.duration:g} s at the best level", highlight=False)
    if price is not None:
        console.print(f"the bench can cost at most ${most:.4f} (at ${price.input}/${price.output} per M tokens)", highlight=False)
    else:  # unknown, never $0: nothing bounds its dollars, only the number of requests
        console.print(f"the bench's cost is unknown: no price for {cfg.model!r} (give one under judge.prices); it stops at --requests "
                      f"({args.requests})", highlight=False)
    if args.dry_run:
        console.print("dry run: nothing sent", highlight=False)
        return EXIT_OK
    report = anyio.run(_run, config, cfg, requests, key, price, args)
    print_report(report, console)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    if not report["measured"].get("answered"):
        err.print(f"bench failed: no request was answered ({report['ramp_stopped']})", highlight=False)
        return EXIT_ASSERTION
    replies = report["replies"]
    if replies["usable"] == 0:
        # As a run whose every judged result failed fails its gate (exit 1): the endpoint answers, the judge does not work.
        err.print(f"bench failed: none of the {replies['answered']} replies was usable ({unusable_counts(replies)}); the judge is not "
                  "usable as configured", highlight=False)
        return EXIT_ASSERTION
    return EXIT_OK


async def _run(config: RunConfig, cfg: JudgeConfig, requests: list[BenchRequest], key: str | None, price: Price | None,
               args: argparse.Namespace) -> dict[str, Any]:
    runner = None
    base = cfg.base_url
    if cfg.provider == "simulator" and not base:
        from tracejudge.simulator.server import SimConfig, start_simulator

        s = cfg.simulator
        runner, url = await start_simulator(SimConfig(latency_ms=s.latency_ms, rpm=s.rpm, tpm=s.tpm, error_rate=s.error_rate, hang_s=s.hang_s, seed=s.seed,
                                                      json_object_only=s.json_object_only, tokenizer_factor=s.tokenizer_factor))
        base = url + "/v1"
    protocol, structured = protocol_of(cfg)
    # The limits are what the bench finds out; how they are counted may be known already.
    limiter = AdaptiveLimiter(UNLIMITED_RPM, UNLIMITED_TPM, 1, config.limits.window)
    budget = InProcessBudget(None, args.max_cost_usd if price is not None else None)  # (an unpriced model: `command` refused a cap)
    try:
        async with open_session(args.max_level) as session:
            bench = Bench(session=session, url=endpoint(cfg.provider, base), protocol=protocol, headers=auth_headers(protocol, key),
                           requests=requests, limiter=limiter, budget=budget, price=price, max_requests=args.requests, timeout_s=cfg.timeout_s,
                           structured=structured, max_bytes=cfg.max_response_bytes,
                           secrets=(key,), counter=prompt_counter(cfg.model, spec_of(cfg)))
            best, steps, why = await ramp(bench, 1, args.max_level)
            hold_start = time.monotonic() - bench.t0
            held = await bench.level("hold", best, None, hold_start + args.duration) if not bench.state.stop else []
    finally:
        if runner is not None:
            await runner.cleanup()
    attempts = bench.state.attempts
    headers = headers_seen(attempts)
    measured = measure(held or [a for a in attempts if a.level == best], headers)
    # Without headers nothing tells a bucket from a window: keep what the config says.
    mode = limiter.mode if headers["present"] else config.limits.window
    report: dict[str, Any] = {
        "model": cfg.model, "provider": cfg.provider, "endpoint": public_url(base or DEFAULT_BASE_URLS.get(cfg.provider, "")),
        "ramp": steps, "ramp_stopped": why, "best_level": best, "headers": headers, "window": mode,
        # None (unknown, never $0) for a model without a price that was sent anything.
        "measured": measured, "requests_sent": bench.state.sent,
        "spent_usd": round(budget.spent_usd, 6) if price is not None or not bench.state.sent else None,
        "stopped_by": bench.state.stop or "duration",
        "recommended_limits": recommend(best, measured, headers, mode),
    }
    report["projection"] = project(config, attempts, measured, price, cfg.provider) if config.dataset is not None and measured else None
    report["replies"] = usability(attempts)
    report["error_messages"], report["hints"] = _errors(attempts, cfg)
    report["hints"] += _unusable_hints(report["replies"], cfg)
    if report["replies"]["usable"] == 0:
        # Rates of replies no run could use (cut at max_tokens, or prose) are not the rates of a working judge.
        report["recommended_limits"] = None
    report["attempts"] = [{k: v for k, v in asdict(a).items() if k != "rate"} for a in attempts]
    return report


def _unpriced_cap(model: str, cap: float, requests: int) -> str:
    """The config error for `--max-cost-usd` with a model the price table does not know (worded as `run`'s)."""
    # `--set` splits its key at dots: a model named with one (`llama3.1:8b`) is shown in the config's own form.
    example = (f"`--set judge.prices.{model}.input=0.15 --set judge.prices.{model}.output=0.6`" if re.fullmatch(r"[\w-]+", model)
               else f"`judge.prices: {{{model!r}: {{input: 0.15, output: 0.6}}}}` in the config")
    return (f"--max-cost-usd ${cap:g} cannot be enforced: judge model {model!r} has no price in the price table, so its requests would count "
            f"$0 and every one would be sent; give its prices (US dollars per million tokens) under judge.prices, e.g. "
            f"{example}, or leave --max-cost-usd out: the bench then "
            f"stops at --requests ({requests}) and reports its cost as unknown")


def _unusable_hints(replies: dict[str, Any], cfg: JudgeConfig) -> list[str]:
    """What to change when answered replies could not be used: `judge.max_tokens` for replies cut at it
    (`judge.context_tokens` for those cut at the model's context window),
    `judge.structured_output` for replies without a readable verdict, the model or the content for refusals. None when
    every reply was usable."""
    n = replies["answered"]
    if not n or replies["usable"] == n:
        return []
    head = ("the judge is not usable as configured: no reply held a verdict the run could use" if replies["usable"] == 0
            else f"{n - replies['usable']} of {n} replies held no verdict the run could use (a run repairs or re-asks them, at extra requests)")
    fixes = []
    window, short = replies.get("window_full") or 0, replies.get("cut_short") or 0
    if replies["truncated"] > window + short:
        fixes.append(f"{replies['truncated'] - window - short} stopped at max_tokens: raise judge.max_tokens (now {cfg.max_tokens} a metric; a grouped request asks that times its metrics)")
    if short:  # (no setting of the judge's lengthens them: a run re-asks them, as it does any reply it cannot read)
        fixes.append(f"{short} were cut short by the server itself, under max_tokens (finish_reason length on a reply the server counted "
                     "under it, or without usage under half of it): raising judge.max_tokens does not help; it is the server's own output cap or a fault it injects "
                     "(`tracejudge simulate --error-rate` cuts replies so), and a run re-asks such a reply at an extra request")
    if window:  # (a bigger max_tokens only fills the window sooner)
        fixes.append(f"{window} stopped where the prompt and the reply filled the model's context window: set judge.context_tokens "
                     f"(now {cfg.context_tokens:,}) to the model's window, and judge.tokenizer to its tokenizer")
    in_reasoning = replies.get("in_reasoning") or 0
    if in_reasoning:  # (said as the run says it: the server moved the text, so judge.structured_output is not the fix)
        fixes.append(f"{in_reasoning} had no answer outside the model's reasoning: {replies['messages'].get('in_reasoning', '')}")
    if replies["unparseable"] > in_reasoning:
        fixes.append(f"{replies['unparseable'] - in_reasoning} held no readable verdict ({replies['messages'].get('unparseable', '')[:160]}): set "
                     f"judge.structured_output (now {cfg.structured_output}) to what the server supports (README: Local and self-hosted judges)")
    if replies.get("refused"):
        # (the refusal's own words are in the report's `refused` row)
        fixes.append(f"{replies['refused']} were refused by the model: billed, as a run bills them, but no setting or retry turns a "
                     "refusal into a verdict; the content judged causes it: judge it with another judge.model, or leave those items out")
    return [f"{head}; " + "; ".join(fixes)]


def _hung(attempts: list[Attempt], timeout_s: float) -> str | None:
    """What timed-out requests were when the others were answered far within `judge.timeout_s` (their slowest under a
    quarter of it): requests the server left hanging, which a longer timeout only waits longer for; None otherwise (a
    slow server, whose timeouts a longer `judge.timeout_s` may turn into answers)."""
    answered = [a.latency_s for a in attempts if a.outcome == "ok"]
    timed_out = sum(a.outcome == "timeout" for a in attempts)
    if not answered or not timed_out or max(answered) * 4 > timeout_s:
        return None
    # (The judge simulator's `--error-rate` holds a request `--hang-s` seconds: "raise it for a slow server" sent users
    # after a server that answered every other request in milliseconds.)
    return (f"{timed_out} request(s) got no reply within judge.timeout_s {timeout_s:g} s while the {len(answered)} answered took at most "
            f"{max(answered) * 1000:,.0f} ms: the server left them hanging (a stalled request, or a fault it injects: `tracejudge "
            "simulate --error-rate` holds one for --hang-s), not a slow server, so raising judge.timeout_s only waits longer for "
            "them; a run retries a timed-out request (judge.max_attempts)")


def _errors(attempts: list[Attempt], cfg: JudgeConfig) -> tuple[dict[str, str], list[str]]:
    """The server's message per failure kind (the first seen; redacted), and what to change."""
    from tracejudge.llm.replies import request_fix

    messages: dict[str, str] = {}
    for a in attempts:
        if a.outcome != "ok" and a.message:
            messages.setdefault(a.outcome, a.message)
    hints = []
    if "timeout" in messages and (hung := _hung(attempts, cfg.timeout_s)) is not None:
        messages["timeout"] = hung
        hints.append(f"requests hung: {hung}")
    elif "timeout" in messages:
        hints.append(f"requests timed out: raise judge.timeout_s (now {cfg.timeout_s:g} s) for a slow server")
    if "server" in messages:  # (its own message names the cause: no setting of the judge's is it)
        hints.append(f"the server failed requests itself ({messages['server'][:160]}): no judge setting causes that; a run retries "
                     f"such a request (judge.max_attempts {cfg.max_attempts})")
    if "request" in messages:
        hints.append(f"the server refused the requests themselves: {request_fix(messages['request'])}")
    if "unreachable" in messages:
        hints.append("the judge could not be reached: is the server running and judge.base_url right?")
    return messages, hints
