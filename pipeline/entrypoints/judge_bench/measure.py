"""The held level's figures: sustained rates over its steady part, latency percentiles, errors by kind."""

from __future__ import annotations

from typing import Any

from tracejudge.entrypoints.judge_bench.ramp import pct
from tracejudge.entrypoints.judge_bench.sender import Attempt

__all__ = ["headers_seen", "measured", "usability"]

# The steady part must be at least this share of the measured phase to stand for it.
MEASURED_SHARE = 0.3
# A limit whose remaining allowance is under this share of it (or one request) binds.
LOW = 0.01


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


def measured(attempts: list[Attempt], limits: dict[str, Any]) -> dict[str, Any]:
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
        elif a.reply_problem:  # answered, but nothing the run could use: an error for the judge, whatever the transport did
            kinds[f"{a.reply_problem} reply"] = kinds.get(f"{a.reply_problem} reply", 0) + 1
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
        "latency_p50_s": pct(lat, 0.5), "latency_p95_s": pct(lat, 0.95), "latency_p99_s": pct(lat, 0.99),
        "rate_limited_share": sum(a.outcome in ("rate_limited", "quota") for a in attempts) / len(attempts),
        "errors": kinds,
        "cached_token_share": sum(a.cached_tokens for a in ok) / tin if tin else 0.0,
        "output_tokens_per_request": tout / len(ok) if ok else None,
        "usage_estimated": sum(a.usage_estimated for a in ok),
    }


def headers_seen(attempts: list[Attempt]) -> dict[str, Any]:
    """The limits the provider's rate-limit headers last reported: `{"present": False}` when none did."""
    rates = [a.rate for a in attempts if a.rate is not None and (a.rate.limit_requests or a.rate.limit_tokens)]
    if not rates:
        return {"present": False}
    last = rates[-1]
    return {"present": True, "limit_requests": last.limit_requests, "limit_tokens": last.limit_tokens}


def usability(attempts: list[Attempt]) -> dict[str, Any]:
    """The bench's answered replies by whether the run could use them, over every phase (ramp and hold, unlike
    `measured`'s figures, which are the held level's): `answered`, `usable`, `truncated`, `unparseable`, of those
    `in_reasoning` (unparseable because the content was empty and the server put the text in a reasoning field),
    `window_full` (of the truncated, those cut at the model's context window rather than at max_tokens), `cut_short`
    (of the truncated, those the server cut before max_tokens itself: `sender.Attempt.cut_short`),
    `refused` (answered with the model's refusal: billed, never a verdict), and the first message of each problem
    (`messages`, the reasoning case under `in_reasoning`).
    `usable` is None when nothing was answered (no evidence either way)."""
    ok = [a for a in attempts if a.outcome == "ok"]
    counts = {k: sum(a.reply_problem == k for a in ok) for k in ("truncated", "unparseable", "refused")}
    in_reasoning = sum(a.reply_problem == "unparseable" and bool(a.reasoning_field) for a in ok)
    window_full = sum(a.reply_problem == "truncated" and a.window_full for a in ok)
    cut_short = sum(a.reply_problem == "truncated" and a.cut_short for a in ok)
    messages: dict[str, str] = {}
    for a in ok:
        if a.reply_problem and a.message:
            messages.setdefault("in_reasoning" if a.reply_problem == "unparseable" and a.reasoning_field else a.reply_problem, a.message)
    return {"answered": len(ok), "usable": len(ok) - sum(counts.values()) if ok else None, **counts, "in_reasoning": in_reasoning,
            "window_full": window_full, "cut_short": cut_short, "messages": messages}
