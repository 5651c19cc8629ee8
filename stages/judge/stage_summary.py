"""The judge stage's block of the summary (`judge`), added up over a panel's judges and the run's segments."""

from __future__ import annotations

import contextlib
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.engine.result_writer import RESULTS
from tracejudge.stages.judge.calibration import Calibration
from tracejudge.stages.judge.calls.stats import add_counts
from tracejudge.stages.judge.judge_stats import JudgeTally

if TYPE_CHECKING:
    from tracejudge.stages.judge.client import Judge

__all__ = ["_ADDITIVE", "COUNTED_AT", "FROM_LINES", "PER_MODEL", "TELEMETRY", "UNPRICED", "judge_summary", "priced_prior", "segment_telemetry"]

_ADDITIVE = ("requests", "answered", "cache_hits", "retries", "rate_limited", "server_errors", "timeouts", "connection_errors", "repairs", "judge_errors",
             "skipped_budget", "too_long", "truncated_prompts", "input_tokens", "output_tokens", "cost_usd", "saved_usd", "saved_tokens",
             "queued_s", "slept_s", "judged_results", "judge_error_results", "sync_equivalent_usd", "multi_requests", "items_batched",
             "items_reasked_alone", "items_from_cache", "batches_submitted", "batches_reattached", "batch_requests", "batch_resubmits",
             "batch_request_errors", "batch_expired", "batch_unread_billed", "batch_nameless_billed", "batch_nameless_unbilled", "batch_polls", "cache_errors", "parse_failures", "truncated_replies",
             "repair_input_tokens", "repair_output_tokens", "repair_cost_usd", "cached_input_tokens", "cache_write_input_tokens",
             "single_flight_shared", "requests_split", "request_errors", "judged_items",
             "parse_failed_items", "usage_unknown_replies", "saved_usage_unknown", "server_truncated_prompts", "server_cut_replies",
             "hits_paid_by_this_run")

# The counters a SIGKILL would take with it but for the segment's record (`segment_telemetry`): those `_ADDITIVE` holds
# that the run does not rebuild from results.jsonl and the spend journal (the gate's counts, the tokens and dollars paid).
TELEMETRY = ("cache_hits", "retries", "rate_limited", "server_errors", "timeouts", "connection_errors", "repairs", "saved_usd",
             "saved_tokens", "queued_s", "slept_s", "items_from_cache", "cache_errors", "truncated_replies", "single_flight_shared",
             "requests_split", "request_errors", "usage_unknown_replies", "saved_usage_unknown", "server_truncated_prompts",
             "server_cut_replies", "hits_paid_by_this_run")

# Those of `TELEMETRY` each result line also holds (a score's `judge.cached_requests`): a segment killed with SIGKILL has
# them counted from the lines it wrote (`engine.run_summary`), none lost after its last checkpoint and none counted for a
# case it never wrote. The others hold only what the segment had counted at that checkpoint: a cached score's line says
# it cost 0 tokens, not what the answer cost when it was paid, so what the cache saved is not on the line either.
FROM_LINES = ("cache_hits",)

# A segment's record of results.jsonl's size when its counters were taken: the lines after it were written after them,
# so a resume can say how many results a killed segment's counters leave out (`engine.run_summary`).
COUNTED_AT = "results_bytes"

# The dollars of the tokens a judge billed: unknown (null), not $0, when its model has no price or a reply reported no usage.
UNPRICED = ("cost_usd", "sync_equivalent_usd", "repair_cost_usd")


def priced_prior(prior: dict[str, Any], cfg: Any, price: Any) -> dict[str, Any]:
    """A copy of the earlier segments' judge block (`run_summary._prior_judge`) with its dollars that are unknown there
    (None: spending recovered from the result lines or the spend journal) priced at `price` (the judge config `cfg`'s
    model's), in US dollars rounded to 6 places; without a price they stay unknown."""
    from tracejudge.llm.prices import cost_usd

    prior = dict(prior)
    for k in ("cost_usd", "sync_equivalent_usd"):
        if prior.get(k, 0.0) is None and price is not None:
            if k == "sync_equivalent_usd" and cfg.mode != "batch" and isinstance(prior.get("cost_usd"), (int, float)):
                prior[k] = prior["cost_usd"]  # no batch discount: what the work costs synchronously is what was paid
            else:
                prior[k] = round(cost_usd(price, int(prior.get("input_tokens", 0)), int(prior.get("output_tokens", 0))), 6)
    return prior


def _counters(judge: Judge) -> dict[str, Any]:
    """One judge's counters (`JudgeStats.summary`), its dollars None once it billed tokens of a model without a price or
    got a reply without usage (`usage_unknown_replies`: its tokens are estimates), and its `saved_usd` None once the cache
    saved it tokens of such a model or of such a reply (what they would have cost is not known either)."""
    block = judge.stats.summary()
    if (judge.price is None and block["input_tokens"] + block["output_tokens"] > 0) or block["usage_unknown_replies"]:
        block.update(dict.fromkeys(UNPRICED))
    if (judge.price is None and block["saved_tokens"] > 0) or block["saved_usage_unknown"]:
        block["saved_usd"] = None
    return block


def segment_telemetry(state: dict[str, Any], run_dir: Path | None = None) -> dict[str, float]:
    """This segment's `TELEMETRY` counters, every judge's added up, and `COUNTED_AT`, the size of `run_dir`'s results
    when they were taken: what the run records in the segment at each checkpoint (`Stage.usage`), so that a segment killed
    with SIGKILL, which never writes its summary, still counts what it had counted at its last checkpoint, and says which
    of its results that was before. Numbers only (an unknown figure is left out)."""
    out: dict[str, float] = {}
    for _, judge in state["judges"] or []:
        block = _counters(judge)
        for k in TELEMETRY:
            v = block.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v:
                out[k] = out.get(k, 0) + v
    if run_dir is not None and (out or state["results"] or state["quota_stopped"]):  # (a segment that did nothing stays unrecorded)
        with contextlib.suppress(OSError):
            out[COUNTED_AT] = (run_dir / RESULTS).stat().st_size
    return out


# A panel model's figures in `judge.panel.models` that each segment adds up (`JudgeTally.summary`); `priced` is set apart.
PER_MODEL = ("requests", "answered", "cache_hits", "input_tokens", "output_tokens", "cost_usd", "judge_errors", "parse_failures")


def _priced_models(block: dict[str, Any], prior: dict[str, Any], judges: list[tuple[str, Judge]]) -> None:
    """Say in a panel's `block` whether each model has a price (so its unknown dollars say why: no price, or no usage) and
    make the dollars of one without a price that billed tokens unknown, as the run's are then: the spend journal, which an
    earlier segment's figures may come from (`panel_spend`), counts them as 0. Each model's dollars rounded as the run's.

    A segment that made no judge (a finished run resumed with nothing to do) keeps the earlier segments' `priced`."""
    models = block["panel"]["models"]
    for name, j in judges:
        models[name]["priced"] = j.price is not None
    if judges:  # (in the panel's order, whatever order the earlier segments' figures came in)
        models = block["panel"]["models"] = {**{name: models[name] for name, _ in judges}, **models}
    for m in models.values():
        if m.get("priced") is False and int(m.get("input_tokens") or 0) + int(m.get("output_tokens") or 0) > 0:
            m["cost_usd"] = None
        elif isinstance(cost := m.get("cost_usd"), float):
            m["cost_usd"] = round(cost, 6)
    if not judges and "priced" in prior:
        block["priced"] = prior["priced"]
    if any(m.get("cost_usd", 0) is None for m in models.values()):
        block.update(dict.fromkeys(UNPRICED))  # a model's dollars unknown: the panel's are too


def judge_summary(state: dict[str, Any], prior: dict[str, Any], cfg: Any, price: Any, calibration: Calibration, tally: JudgeTally) -> dict[str, Any]:
    """The summary's `judge` block: this segment's counts of every judge (`state["judges"]`, a panel's added up) and of the
    batches (`state["batches"]`), plus those of the earlier segments (`prior`), with the gate's share and the settings it reports."""
    judges: list[tuple[str, Judge]] = state["judges"] or []
    block = _counters(judges[0][1]) if judges else {}
    for _, other in judges[1:]:  # a panel: every model's requests, tokens and dollars count
        more = _counters(other)
        for k in _ADDITIVE:
            if k in more:
                block[k] = add_counts(block.get(k, 0), more[k])
        if more.get("cache_misses_explained"):  # every model's misses explained too (a copy: the first judge's own stays)
            mine = block["cache_misses_explained"] = dict(block.get("cache_misses_explained") or {})
            for why, n in more["cache_misses_explained"].items():
                mine[why] = mine.get(why, 0) + n
        for k, n in more.get("error_kinds", {}).items():
            block.setdefault("error_kinds", {})[k] = block.get("error_kinds", {}).get(k, 0) + n
    if state["batches"] is not None:
        block.update(asdict(state["batches"].counters))
    kinds = dict(prior.get("error_kinds") or {})
    for k, n in block.get("error_kinds", {}).items():
        kinds[k] = kinds.get(k, 0) + n
    # This segment's requests the budget refused (the additive `skipped_budget` is made a count of standing results by `finish_run`).
    block["skipped_budget_requests"] = block.get("skipped_budget", 0)
    block["judged_results"] = state["results"]
    block["quota_stopped"] = state["quota_stopped"]  # this segment's: a resume judges them again
    block["judge_error_results"] = state["errors"]
    for k in _ADDITIVE:
        if k in prior or k in block:
            block[k] = add_counts(block.get(k, 0), prior.get(k, 0))
    # A segment that explained its misses and judged something says what it missed: none, when the cache answered all.
    explained = bool(judges) and judges[0][1].explain and state["results"] > 0
    for k in ("latency_p50_s", "latency_p95_s", "cache_misses_explained"):
        # Figures that do not add up: a segment that sent nothing keeps the earlier ones,
        # so resuming a finished run leaves its summary as it was.
        if block.get(k) in (None, {}) and k in prior and not (k == "cache_misses_explained" and explained):
            block[k] = prior[k]
    block["error_kinds"] = dict(sorted(kinds.items()))
    # A panel is priced when every member is: the section's own model judges nothing then.
    priced = all(j.price is not None for _, j in judges) if cfg.models and judges else price is not None
    block.update(model=cfg.model, provider=cfg.provider, priced=priced, timeout_s=cfg.timeout_s)
    judged = block.get("judged_results", 0)
    block["error_share"] = round(block.get("judge_error_results", 0) / judged, 6) if judged else 0.0
    block["max_error_share"] = cfg.max_error_share
    block["gate_failed"] = block["error_share"] > cfg.max_error_share
    block["mode"] = cfg.mode
    block["items_per_request"] = cfg.items_per_request
    if cfg.calibration is not None:
        block["calibration"] = calibration.summary(prior.get("calibration"))
    # (judge_errors, parse_failures: which member failed; the score's judge block names the whole panel)
    per_model = {name: {k: counters[k] for k in PER_MODEL} for name, counters in ((name, _counters(j)) for name, j in judges)} if cfg.models else None
    block.update(tally.summary(prior, per_model))
    if cfg.models and "panel" in block:
        _priced_models(block, prior, judges)
    if cfg.samples > 1:
        block["samples_per_request"] = cfg.samples
    _extra_bodies(block, cfg, judges)
    _served(block, prior, cfg, judges)
    return dict(sorted(block.items()))  # a stable order: an unchanged block is byte-identical


def _extra_bodies(block: dict[str, Any], cfg: Any, judges: list[tuple[str, Judge]]) -> None:
    """The request fields of `judge.extra_body` the verdicts were given with (a model thinking or not), a credential in
    them masked and a long value by its digest (`core.extra_body.recorded`): `extra_body`, the section's, and
    `extra_body_by_model` for a panel whose members send other fields than the section's."""
    from tracejudge.core.extra_body import recorded

    if cfg.extra_body:
        block["extra_body"] = recorded(cfg.extra_body)
    if cfg.models and any(j.cfg.extra_body != cfg.extra_body for _, j in judges):
        block["extra_body_by_model"] = {name: recorded(j.cfg.extra_body) for name, j in judges}


def _served(block: dict[str, Any], prior: dict[str, Any], cfg: Any, judges: list[tuple[str, Judge]]) -> None:
    """The weights a self-hosted judge server said it serves (`llm.served_model`'s `{server, name, sha256}`, the name a
    basename): `served_model`, or `served_model_by_model` for a panel, each member whose weights are known. A segment
    that learnt none (the cache answered all before asking, a hosted API) keeps the earlier segments' record."""
    said = {name: c for name, j in judges if (c := j.recorded_served()) is not None}
    key = "served_model_by_model" if cfg.models else "served_model"
    if said:
        block[key] = said if cfg.models else next(iter(said.values()))
    elif prior.get(key) is not None:
        block[key] = prior[key]
