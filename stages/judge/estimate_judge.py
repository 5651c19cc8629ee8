"""One judge's part of `tracejudge estimate` (`tracejudge.stages.judge.estimate`'s module doc says what is counted).

`JudgeEstimate` builds the requests one judge of the run (the section's model, or a panel member) would be sent as
the run builds them — alone, grouped per case, packed into multi-item requests, and those `judge.calibration` adds —
keys them for the judge cache as that judge's requests are keyed, and prices them at its own prices, into rows by
metric key. `add_fields` sums one row into another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracejudge.core.config import JudgeConfig
from tracejudge.core.records import Case
from tracejudge.llm import served_model
from tracejudge.llm.cache import DiskJudgeCache, cache_key, canonical
from tracejudge.llm.prices import price_for
from tracejudge.llm.prefix_cache import PrefixCache
from tracejudge.llm.providers import JudgeRequest, build_payload, protocol_of
from tracejudge.llm.judge_tokenizer import prompt_counter, spec_of
from tracejudge.stages.judge.calls.repair import REPAIR
from tracejudge.stages.judge.calls.request import asked_ids
from tracejudge.stages.judge.client import key_components, request_tokens
from tracejudge.stages.judge.estimate_range import FIELDS, MetricEstimate, add_bound, least_reply_tokens
from tracejudge.stages.judge.fit import Fitted, fit_request, over_window
from tracejudge.stages.judge.multi import Item, build_multi_request, item_id
from tracejudge.stages.judge.requests import Asked, fitted_requests, per_question

__all__ = ["CALIBRATION", "JudgeEstimate", "add_fields"]

# What a metric's row of `judge.calibration`'s requests adds to its key: `TaskCompletion (calibration)`.
CALIBRATION = "(calibration)"


class JudgeEstimate:
    """One judge's part of the estimate (the section's model, or a panel member: `panel.Member`): its requests built with
    its own config (model, structured output, tokenizer, context), keyed for the cache as its requests are, priced at
    its own prices, fed to a prefix cache of its own; rows by metric key in `out`."""

    def __init__(self, name: str, cfg: JudgeConfig, cache: DiskJudgeCache | None, cache_base: str, calibrated: bool = False) -> None:
        self.name, self.cfg, self.cache, self.base = name, cfg, cache, cache_base
        self.price = price_for(cfg.model, cfg.prices)
        self.batch = cfg.mode == "batch"
        self.protocol, self.structured = protocol_of(cfg)
        self.tokenizer = spec_of(cfg)
        self.count = prompt_counter(cfg.model, self.tokenizer).text
        # What a repair adds besides the reply: the reply's turn and the note saying what was wrong (a problem of some words).
        self.note = prompt_counter(cfg.model, self.tokenizer).messages(
            [{"role": "assistant", "content": ""}, {"role": "user", "content": REPAIR.format(problem="word " * 60)}])
        self.prefix = PrefixCache()
        self.out: dict[str, MetricEstimate] = {}
        self.pending: dict[tuple[str, Any], list[Item]] = {}
        # With `judge.calibration` (`calibrated`), the multi-item groups of the range's low end are packed apart, without
        # the items the sample holds (`low_pending`): the batcher may ask such an item alone, which is the very request
        # its calibration asks, so its group costs nothing more. Without, one packing makes both (`both`).
        self.split = calibrated and cfg.items_per_request > 1
        self.low_pending: dict[tuple[str, Any], list[Item]] = {}
        self.low_prefix = PrefixCache()  # (the provider's prompt cache as the low end's requests leave it, when packed apart)
        # Content addresses asked so far (the first 64 bits of each key; items by their id): a later request with the same
        # one is answered by the first in the run (its cache, or single flight while the first is out).
        self.seen: set[int] = set()
        self.seen_items: set[str] = set()
        # `judge.calibration`: by metric key, the items sampled, and those of them whose full rendering is the compact one.
        self.sampled: dict[str, int] = {}
        self.identical: dict[str, int] = {}
        # A self-hosted server's weights, as the last run learnt them (the estimate asks no server anything).
        self.served = (cache.last_served(cfg.provider, cache_base, cfg.model)
                       if cache is not None and cfg.provider != "simulator" and served_model.self_hosted(cache_base) else None)

    def row(self, key: str) -> MetricEstimate:
        return self.out.setdefault(key, MetricEstimate())

    def dollars(self, tin: int, tout: int, read: int = 0, write: int = 0) -> float:
        price = self.price
        if price is None:
            return 0.0
        return price.batch_cost(tin, tout, read, write) if self.batch else price.cost(tin, tout, read, write)

    def writable(self, req: JudgeRequest, tin: int) -> int:
        # The prompt tokens a provider's cache could write for `req` when not modelled (Anthropic with cache hints: at most all).
        return tin if self.protocol == "anthropic" and req.cache_prefix else 0

    def bound(self, est: MetricEstimate, tin: int, cap: int, write: int, repair: bool, plain: int) -> None:
        add_bound(est, self.dollars, self.note, tin, cap, write, repair, plain)

    def charge(self, est: MetricEstimate, req: JudgeRequest, ids: list[str], questions: int, reasks: int = 0,
               low_tin: int | None = None, bounded: bool = True, part: str = "both") -> None:
        """Count `req` as sent (`ids`: the question ids it asks; `reasks`: metrics asked alone after an unusable reply;
        `low_tin`: its prompt tokens at the least, when less than counted; `bounded`: its high end counted here; `part`:
        `expected` counts it in the expected figures (and the high end) only, `low` in the low end only)."""
        cfg = self.cfg
        tin = request_tokens(req, self.tokenizer)
        cap = req.max_tokens
        least = min(cap, least_reply_tokens(req, ids, self.count))
        tout = max(least, min(cap, cfg.expected_output_tokens * questions))
        payload = build_payload(self.protocol, req, self.structured)

        def cached(prefix: PrefixCache) -> tuple[int, int]:
            got = prefix.anthropic(req.model, payload) if self.protocol == "anthropic" else (prefix.openai(req.model, payload), 0)
            return min(got[0], tin), min(got[1], tin - min(got[0], tin))

        # Each end's provider cache sees its own requests (one model for both, unless the low end packs items apart).
        read, write = cached(self.prefix) if part != "low" else (0, 0)
        low_read, low_write = (cached(self.low_prefix) if self.split and part != "expected" else (read, write))
        if part != "low":
            est.requests += 1
            est.questions += questions
            est.input_tokens += tin
            est.output_tokens += tout
            est.cached_input_tokens += read
            est.cache_write_input_tokens += write
            est.cost_usd += self.dollars(tin, tout, read, write)
        if part != "expected":
            low = tin if low_tin is None else min(tin, low_tin)
            est.low_requests += 1
            est.low_input_tokens += low
            est.low_output_tokens += least
            est.low_cost_usd += self.dollars(low, least, min(low_read, low), min(low_write, low - min(low_read, low)))
        if bounded and part != "low":
            self.bound(est, tin, cap, read + write, True, reasks)

    def key(self, req: JudgeRequest, version: str, rubric: Any, trial: int | str) -> str:
        comps = key_components(self.cfg.provider, self.base, req, version, rubric, trial, self.structured, self.served)  # type: ignore[arg-type]
        return cache_key(comps)

    def asked_before(self, key: str) -> bool:
        """Whether an earlier request of the run has content address `key` (and remember it)."""
        mark = int(key[:16], 16)
        if mark in self.seen:
            return True
        self.seen.add(mark)
        return False

    def bound_item(self, est: MetricEstimate, item: Item, fitted: Fitted | None = None) -> None:
        """The high end of `item` of a multi-item queue, whatever group the run puts it in (the batcher groups items as
        they come): asked alone, or in a group, whose prompt it adds at most a one-item request's to (the fixed part
        counted again for each item); then, at worst, asked alone again with its repair and its metrics' re-asks. An item
        whose one-item request cannot fit is never in a group the run sends: only its alone request is priced."""
        fitted = fitted or fit_request(item.plan, item.questions, self.cfg)
        one = build_multi_request([item], self.cfg)
        alone = request_tokens(fitted.req, self.tokenizer) if fitted.fits else 0
        # A one-item request over the window is never sent, nor any group holding it (`multi` asks such a group's items
        # alone): its prompt (a 6 MB output's) is neither counted whole to learn that (`over_window`) nor priced.
        grouped = 0 if over_window(one, self.cfg.context_tokens - one.max_tokens, self.tokenizer) else request_tokens(one, self.tokenizer)
        if not (alone or grouped):
            return  # (nothing the run sends holds it)
        tin = max(alone, grouped)
        first = MetricEstimate()
        self.bound(first, tin, one.max_tokens, self.writable(fitted.req, tin), False, 0)
        add_fields(est, first)
        if fitted.fits:
            chain = MetricEstimate()
            self.bound(chain, alone, fitted.req.max_tokens, self.writable(fitted.req, alone), True, len(item.plan.parts))
            for f in ("worst_requests", "worst_input_tokens", "worst_output_tokens", "worst_cost_usd"):
                setattr(est, f, getattr(est, f) + getattr(chain, f))

    def alone(self, key: str, item: Item, part: str = "both") -> None:
        # As the run asks an item alone (`multi`: a group left with one item, or one that does not fit): the single-item
        # path, fitted to the context window (nothing sent when it cannot fit), looked up in the cache under its own
        # address — which is also the request `judge.calibration` asks for a sampled item, so a lone sampled item's request
        # is sent once, not once for the group and once for its calibration.
        est = self.row(key)
        fitted = fit_request(item.plan, item.questions, self.cfg)
        address = self.key(fitted.req, item.plan.prompt_version, item.plan.metric.rubric, item.trial) if fitted.fits else ""
        held = bool(address) and self.cache is not None and self.cache.get(address) is not None
        if part == "low":
            if fitted.fits and not held:
                qs = fitted.asked if fitted.asked is not None else item.questions
                self.charge(est, fitted.req, asked_ids(item.plan, qs), len(item.questions), bounded=False, part=part)
            return
        self.bound_item(est, item, fitted)
        if not fitted.fits:
            est.too_long += 1
            return
        est.truncated += fitted.truncated
        if held:
            est.cache_hits += 1
            return
        if self.asked_before(address):  # (its calibration request, counted in the `… (calibration)` row, or the other way round)
            est.cache_hits += 1
            est.repeats += 1
            return
        qs = fitted.asked if fitted.asked is not None else item.questions
        self.charge(est, fitted.req, asked_ids(item.plan, qs), len(item.questions), bounded=False, part=part)

    def flush(self, key: str, items: list[Item], part: str = "both") -> None:
        """Price `items` (one metric or group, one trial) as one multi-item request (`part`: see `charge`)."""
        if not items:
            return
        if len(items) == 1:
            self.alone(key, items[0], part)
            return
        cfg = self.cfg
        for it in items:
            it.id = it.id or item_id(it, cfg)
        req = build_multi_request(items, cfg)
        if over_window(req, cfg.context_tokens - req.max_tokens, self.tokenizer):  # (as the run decides it: `multi`)
            for it in items:  # the run asks each item alone when the group does not fit (`multi`)
                self.alone(key, it, part)
            return
        tin = request_tokens(req, self.tokenizer)
        est = self.row(key)
        # At the least, the run's groups share one verdict shape each (the schema states each shape once: `$defs`).
        defs = req.schema.get("$defs") or {}
        slack = 0
        if len(defs) > 1:
            small = min(defs, key=lambda k: len(canonical(defs[k])))
            slack = self.count(canonical(req.schema)) - self.count(canonical({**req.schema, "$defs": {small: defs[small]}}))
        ids = [i for it in items for i in asked_ids(it.plan, it.questions)]
        self.charge(est, req, ids, sum(len(it.questions) for it in items), low_tin=tin - max(0, slack), bounded=False, part=part)
        if part != "low":
            for it in items:
                self.bound_item(est, it)

    def queue(self, pending: dict[tuple[str, Any], list[Item]], key: str, item: Item, part: str) -> None:
        group = pending.setdefault((key, item.trial), [])
        group.append(item)
        if len(group) >= self.cfg.items_per_request:
            self.flush(key, group, part)
            pending[(key, item.trial)] = []

    def ask_item(self, key: str, item: Item, covered: bool = False) -> None:
        # `items_per_request` > 1: gathered N at a time per trial (a sample's its own), as each judge's batcher gathers
        # them; a cached item, or one an earlier item asks the same, is left out of its group. `covered`: a metric's item
        # the calibration sample holds (its calibration request is the request the batcher sends for it alone).
        item.id = item_id(item, self.cfg)
        if self.cache is not None:
            req = build_multi_request([item], self.cfg)
            if self.cache.get(self.key(req, item.plan.prompt_version, item.plan.metric.rubric, item.trial)) is not None:
                self.row(key).cache_hits += 1
                return
        if item.id in self.seen_items:
            est = self.row(key)
            est.cache_hits += 1
            est.repeats += 1
            self.bound_item(est, item)  # (sent again when in another group, or when the first's reply was unusable)
            return
        self.seen_items.add(item.id)
        self.queue(self.pending, key, item, "expected" if self.split else "both")
        if self.split and not covered:
            self.queue(self.low_pending, key, item, "low")

    def ask(self, case_id: str, a: Asked, trial: int | str, covered: bool = False) -> None:
        """What the run sends for `a` about case `case_id` as `trial` (`repeat.sample_trial`: a sample's own trial);
        `covered`: `a` is one metric's item that the calibration sample holds (`ask_item`)."""
        cfg = self.cfg
        est = self.row(a.key)
        if cfg.items_per_request > 1 and a.batchable:
            slot = f"{case_id}|group|{trial}" if a.metrics > 1 else f"{case_id}|{a.key}|{trial}"
            self.ask_item(a.key, Item(a.plan, trial, slot), covered and a.metrics == 1)  # type: ignore[arg-type]
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
            reasks = a.metrics if a.metrics > 1 and not by_itself else 0
            address = self.key(req, plan.prompt_version, plan.metric.rubric if a.metrics == 1 or by_itself else None, trial)
            if self.cache is not None and self.cache.get(address) is not None:
                mest.cache_hits += 1
                continue
            if self.asked_before(address):
                mest.cache_hits += 1
                mest.repeats += 1
                tin = request_tokens(req, self.tokenizer)
                self.bound(mest, tin, req.max_tokens, self.writable(req, tin), True, reasks)  # (sent again if the first's reply was unusable)
                continue
            asked = fitted.asked if fitted.asked is not None else qs
            self.charge(mest, req, asked_ids(plan, asked), len(qs), reasks)

    def calibrate(self, case: Case, a: Asked, trial: int | str, sampled: Callable[[str], bool], tail: str) -> None:
        """The requests `judge.calibration` adds for `a` about `case` (as `stage` and `calibrated` send them): each metric
        whose slot (`case|metric` + `tail`: the trial, the sample's `/sN`, a panel member's `@name`) the sample holds is
        asked alone too when its verdict comes from a shared request (a group, a multi-item request), and rendered in
        full (`trace_format: full`) unless that is its compact rendering; in that metric's `… (calibration)` row."""
        from tracejudge.stages.judge.calibrated import full_plan

        cfg = self.cfg
        shared = a.metrics > 1 or (cfg.items_per_request > 1 and a.batchable)
        for plan in (a.plan.parts if a.metrics > 1 else [a.plan]):
            metric = plan.metric
            if not sampled(f"{case.id}|{metric.key}{tail}"):
                continue
            key = f"{metric.key} {CALIBRATION}"
            self.sampled[key] = self.sampled.get(key, 0) + 1
            if shared:  # one request for that metric on that case, as a run without sharing asks it
                self.ask(case.id, Asked(key, plan, [plan.questions], False), trial)
            try:
                full = full_plan(metric, case, plan)
            except Exception:  # the run compares nothing and sends nothing for it
                continue
            if full is None:
                self.identical[key] = self.identical.get(key, 0) + 1
                continue
            qs = [[q] for q in full.questions] if per_question(metric, cfg) and full.kind == "yes_no" else [full.questions]
            self.ask(case.id, Asked(key, full, qs, False), trial)

    def finish(self) -> None:
        for (key, _), items in self.pending.items():
            self.flush(key, items, "expected" if self.split else "both")
        for (key, _), items in self.low_pending.items():
            self.flush(key, items, "low")
        self.pending, self.low_pending = {}, {}


def add_fields(into: MetricEstimate, e: MetricEstimate, skip: tuple[str, ...] = ()) -> None:
    for f in FIELDS:
        if f not in skip:
            setattr(into, f, getattr(into, f) + getattr(e, f))
