"""Asking a plan's questions: the cache, single flight, at most one repair request, parsing, and the metric's outcome.

These functions are the bodies of `Judge`'s methods of the same names
(`client.Judge` binds them, hence `self`).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from tracejudge.core.records import JudgeInfo, Score
from tracejudge.llm.providers import JudgeRequest, ProviderError, Reply
from tracejudge.stages.judge.base import Plan, Question
from tracejudge.stages.judge.calls.answers import finish, parse_answers, question_groups, verdict_before_whitespace
from tracejudge.stages.judge.calls.outcome import Outcome, _BudgetRefused, error_kind
from tracejudge.stages.judge.calls.repair import REPAIR, repair_request
from tracejudge.stages.judge.calls.reply_notes import (SERVER_CUT_FIX, WINDOW_FIX, WINDOW_FULL, cut_problem, cut_thinking, empty_reply, server_cut,
                                                       with_thinking_advice)
from tracejudge.stages.judge.calls.stats import PAID_BY, paid_here, run_mark, sum_usd
from tracejudge.stages.judge.parse import ParseError

if TYPE_CHECKING:
    from tracejudge.stages.judge.calls.request import Wire
    from tracejudge.stages.judge.client import Judge
    from tracejudge.stages.judge.fit import Fitted
    from tracejudge.stages.judge.prepare import Prepared

__all__ = ["REPAIR", "ask", "ask_uncached", "case_of", "empty_reply", "from_cache", "hit", "is_hit", "judge", "judged", "note_truncation"]

_NOT_SHOWN = "not_shown"  # an outcome's kind: the call or step asked about cannot be shown within the judge's context

@dataclass
class _Flight:
    """One request in flight (single flight): waiters get `answers` when `done` is set (`None` if it failed); `ended`:
    when it was done (`time.monotonic()`, 0.0 while in flight)."""

    done: anyio.Event = field(default_factory=anyio.Event)
    answers: dict[str, Any] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    ended: float = 0.0


LANDED = 4096  # answered flights kept for asks made ready while they were in flight (`ask`); older ones are let go


def note_truncation(self: Judge, plan: Plan, fitted: Fitted) -> None:
    """Count a request that was truncated to fit and say on `plan` what was left out or cut.

    When the fitted request asks fewer questions than `plan` (`Fitted.asked`: the others ask about calls or steps
    it could not show), `plan` (and each of a grouped plan's parts) keeps only those asked, so the score counts
    only what the judge saw, and the reason names the questions not asked.
    """
    from tracejudge.stages.judge.conversation import omitted_note
    from tracejudge.stages.judge.field_cut import cut_note

    self.stats.truncated_prompts += 1
    notes = [omitted_note(plan.steps, fitted.omit, fitted.keep, plan.system, plan.system_lengths)] if fitted.omit else []
    if fitted.asked is not None:
        ids = {plan.full_id(q) for q in fitted.asked}
        for p in [plan, *plan.parts]:
            left = [f"{p.full_id(q)} ({q.text})" for q in p.questions if p.full_id(q) not in ids]
            p.questions = [q for q in p.questions if p.full_id(q) in ids]
            if left and (p is not plan or not plan.parts):  # each metric of a grouped plan names only its own
                p.note = "; ".join(filter(None, [p.note, f"not asked (their steps left out to fit context_tokens "
                                                         f"{self.cfg.context_tokens}): {', '.join(left)}"]))
    if fitted.cut:
        notes.append(f"{cut_note(fitted.cut, fitted.cap)} to fit the judge's context (too_long: truncate)")
    notes = [n for n in notes if n not in plan.note]  # asked one question per request, the same cut is said once
    plan.note = "; ".join([plan.note, *notes] if plan.note else notes)


def _mark(self: Judge) -> str | None:
    """The mark of the run this judge answers for (`stats.run_mark`: the run directory of its spend journal), found once."""
    if not hasattr(self, "_run_mark"):
        spend = self.spend
        self._run_mark = run_mark(spend.path.parent if spend is not None and spend.path is not None else None)  # type: ignore[attr-defined]
    return self._run_mark  # type: ignore[attr-defined,no-any-return]


def hit(self: Judge, hit: dict[str, Any], info: JudgeInfo) -> dict[str, Any]:
    """The answers of a cached entry `hit`, counted as a hit (in `info` and the stats, with what it saved)."""
    info.requests += 1
    self.stats.cache_hits += 1
    u = hit.get("usage", {})
    if paid_here(u, _mark(self)):  # paid by this run (its killed segment): the run paid once, so it saved nothing
        self.stats.hits_paid_by_this_run += 1
    else:
        self.stats.saved_tokens += u.get("input_tokens", 0) + u.get("output_tokens", 0)
        self.stats.saved_usage_unknown += bool(u.get("usage_unknown"))  # estimated tokens: what they saved is not known
        self.stats.saved_usd += self._cost(u.get("input_tokens", 0), u.get("output_tokens", 0))
    info.cached_requests += 1
    answers: dict[str, Any] = hit["answers"]
    return answers


async def ask(self: Judge, plan: Plan, questions: list[Question], trial: int, slot: str, info: JudgeInfo,
              repair: bool = True, ready: Prepared | Exception | None = None) -> tuple[dict[str, Any] | None, Outcome | None]:
    """Answers for `questions`, or an `Outcome` saying why there are none (`repair`: one repair request when unusable;
    `ready`: this request already made ready by `prepare_many`, or what that raised for it)."""
    # Rendering, counting, truncating, keying and the cache read run in a worker thread, shared with the asks
    # ready at the same time (`tracejudge.stages.judge.prepare`): a long trace never holds the loop.
    if ready is None:
        await self.learn_served()  # (every key of the run holds what a self-hosted server serves)
        ready = await self._preparer().prepare(plan, questions, trial)
    elif isinstance(ready, Exception):
        raise ready
    fitted = ready.fitted
    req, tokens, limit = fitted.req, fitted.tokens, self.cfg.context_tokens - fitted.req.max_tokens
    if not fitted.fits:
        self.stats.too_long += 1
        score = Score(value=None, passed=None, reason=f"too_long: the judge prompt has {'more than ' if fitted.over else ''}{tokens} tokens, over the {limit} that fit "
                      f"(context_tokens {self.cfg.context_tokens} − max_tokens {fitted.req.max_tokens}; too_long: {self.cfg.too_long})"
                      + (f"; {fitted.why}" if fitted.why else ""),
                      details={"too_long_tokens": tokens, **({"too_long_tokens_lower_bound": True} if fitted.over else {})})  # (`over`: a floor)
        # `why`: the request's items could not be shown; asked one question per request, the others may still be.
        return None, Outcome(score, "ok", kind=_NOT_SHOWN if fitted.why else "")
    if fitted.truncated:
        self._note_truncation(plan, fitted)
    if fitted.asked is not None:
        questions = fitted.asked

    comps, key = ready.components, ready.key
    assert comps is not None and key is not None  # (a request that fits is keyed)
    if self.cache is not None:
        hit = ready.hit
        if hit is not None:
            return self._hit(hit, info), None
        if self.explain:
            why = self.cache.explain(comps, slot)
            info.cache_miss = why if info.cache_miss is None else f"{info.cache_miss}; {why}"
            self.stats.cache_misses_explained[why] = self.stats.cache_misses_explained.get(why, 0) + 1
    # Single flight: an identical request already in flight is not sent again; this
    # ask waits for its answer. A flight that failed shares nothing: each waiter then
    # asks on its own (and gets its own error), all at once rather than one by one.
    # An ask made ready (its cache read a miss) while an identical flight was still out, which landed since, was in
    # flight at once with it all the same: it takes that answer, as its cache read would have a moment later.
    flight = self._flights.get(key)
    if flight is None and (landed := self._landed.get(key)) is not None and landed.ended > ready.began:
        flight = landed
    if flight is not None:
        await flight.done.wait()
        if flight.answers is not None:
            info.requests += 1
            info.cached_requests += 1
            self.stats.cache_hits += 1
            self.stats.single_flight_shared += 1
            u = flight.usage
            self.stats.saved_tokens += u["input_tokens"] + u["output_tokens"]
            self.stats.saved_usage_unknown += bool(u.get("usage_unknown"))
            self.stats.saved_usd += self._cost(u["input_tokens"], u["output_tokens"], u.get("cached_input_tokens", 0))
            return copy.deepcopy(flight.answers), None  # (each ask its own copy, as each cache hit is)
        return await self._ask_uncached(plan, questions, req, key, comps, slot, info, repair=repair, wire=ready.wire)
    flight = self._flights[key] = _Flight()
    try:
        answers, bad = await self._ask_uncached(plan, questions, req, key, comps, slot, info, flight.usage, repair, ready.wire)
        flight.answers = answers
        return answers, bad
    finally:
        del self._flights[key]
        flight.ended = time.monotonic()
        if flight.answers is not None:
            self._landed[key] = flight
            self._landed.move_to_end(key)
            while len(self._landed) > LANDED:
                self._landed.popitem(last=False)
        flight.done.set()


async def ask_uncached(self: Judge, plan: Plan, questions: list[Question], req: JudgeRequest, key: str, comps: dict[str, Any], slot: str,
                        info: JudgeInfo, used: dict[str, int] | None = None, repair: bool = True,
                        wire: Wire | None = None) -> tuple[dict[str, Any] | None, Outcome | None]:
    """`ask` past the cache: the request, at most one repair request (none unless `repair`), parsing and the cache write
    (`wire`: `req` made ready to send by `prepare_many`; `None`: `Judge.call` makes it)."""
    used = used if used is not None else {}
    used.update(input_tokens=0, output_tokens=0)
    raw = ""
    problem, kind = "", "parse_error"
    said, reasoning = "", ("", "")  # what the user is told beyond `problem`; the last reply's text outside its answer
    note = ""  # why the repair was not sent or not answered
    cut_short = False  # the last reply was cut by the server under max_tokens (`reply_notes.server_cut`)
    may_repair = repair
    for repair in ((False, True) if may_repair else (False,)):
        if repair:
            fixed = await repair_request(self, req, raw, problem)
            if fixed is None:  # not even without the reply: the case ends with the first reply's error
                may_repair = False
                note = "no repair request: the prompt and the repair note alone would not fit in judge.context_tokens"
                break
            self.stats.repairs += 1
            req = fixed
        try:
            info.requests += 1  # repair requests count: they are paid for like any other
            reply = await self.call(req, key=None if repair else key, wire=None if repair else wire)
        except _BudgetRefused as exc:
            info.requests -= 1  # refused before it was sent: a request never sent is not one
            self.stats.skipped_budget += 1
            _billed(self, info, exc, repair)
            return None, Outcome(Score(value=None, passed=None, reason="skipped_budget: this request could cross the judge budget"), "skipped_budget",
                                 "a judge request could cross the token or dollar budget; resume with a larger budget to finish it", "skipped_budget")
        except ProviderError as exc:
            info.requests -= exc.unsent  # the server's gate gave up on it before it was ever sent: a request never sent is not one
            _billed(self, info, exc, repair)  # attempts that timed out, a refusal: the score shows what the summary bills for it
            if repair and error_kind(exc, self.reached, self.cfg.max_tokens) in ("request_error", "context_exceeded", "body_too_large"):
                # Refused for what the repair added (a window smaller than judge.context_tokens says): this case's error, not
                # the run's; the first request was accepted, so the others will be.
                note = f"the repair request was refused: {' '.join(str(exc).split())[:300]}"
                break
            return None, self.failure(exc, case_of(slot))
        if not reply.usage_known:
            used["usage_unknown"] = 1
        info.input_tokens += reply.input_tokens
        info.output_tokens += reply.output_tokens
        info.cached_input_tokens += reply.cached_input_tokens
        info.cost_usd = sum_usd((info.cost_usd, reply.cost_usd), None)  # None once a reply's dollars are unknown
        used["input_tokens"] += reply.input_tokens
        used["output_tokens"] += reply.output_tokens
        if repair:
            self.stats.repair_input_tokens += reply.input_tokens
            self.stats.repair_output_tokens += reply.output_tokens
            self.stats.repair_cost_usd += reply.cost_usd or 0.0  # unknown dollars: the summary says so (`stage_summary`)
        raw = reply.text
        reasoning = (reply.reasoning, reply.reasoning_field)
        said = (empty_reply(reply, self.cfg.provider, req.max_tokens, self.cfg.extra_body)
                or cut_thinking(reply, self.cfg.provider, req.max_tokens, self.cfg.extra_body))
        cut_short = server_cut(reply, req.max_tokens) is not None
        whole = verdict_before_whitespace(plan, questions, raw) if reply.truncated else None
        if reply.truncated and whole is None:
            self.stats.truncated_replies += 1
            self.stats.server_cut_replies += cut_short
            problem, kind = cut_problem(reply, req.max_tokens), "truncated"
            continue
        try:
            # Never read from the reasoning: a draft there is not the answer (`empty_reply` says where the text went).
            answers = whole or parse_answers(plan, questions, raw)
        except ParseError as exc:
            if reply.usage_known and reply.output_tokens >= req.max_tokens:
                # Cut at max_tokens though the server said otherwise (Ollama's /v1 reported finish_reason "stop" whatever ended a reply).
                self.stats.truncated_replies += 1
                problem, kind = (f"it used all max_tokens={req.max_tokens} and did not parse: cut off, though the server did not say so; raise "
                                 "judge.max_tokens"), "truncated"
                continue
            self.stats.parse_failures += 1
            problem, kind = ("the reply had no answer outside its reasoning" if said else with_thinking_advice(str(exc), self.cfg.extra_body)), "parse_error"
            continue
        if self.cache is not None:
            mark = _mark(self)
            key, comps = await self.keyed_as_answered(key, comps)  # (other weights answer after a swap during an outage)
            self.cache.put(key, {"answers": answers, "text": raw, "usage": {**used, PAID_BY: mark} if mark else used}, comps, slot)
        return answers, None
    self.stats.judge_errors += 1
    self.stats.error_kinds[kind] = self.stats.error_kinds.get(kind, 0) + 1
    told = said if said and kind == "parse_error" else "; ".join(filter(None, [problem, said]))  # (`problem` is the model's wording)
    if problem == WINDOW_FULL and WINDOW_FIX not in said:  # (the setting to change, once: `said` names it for a reply all thinking)
        told += f": {WINDOW_FIX}"
    elif kind == "truncated" and cut_short and SERVER_CUT_FIX not in said:  # (raising max_tokens cannot help: say what can)
        told += f": {SERVER_CUT_FIX}"
    told = "; ".join(filter(None, [told, note]))
    msg = f"{kind}: unusable verdict" + (" after one repair request" if may_repair else "") + f" ({told})"
    details: dict[str, Any] = {"raw": raw[:8000], "error_kind": kind}
    tail = f"; raw reply: {raw[:2000] or '(empty)'}"
    if reasoning[0]:  # (redacted by `Judge.call`, cut here)
        details.update(reasoning=reasoning[0][:2000], reasoning_field=reasoning[1])
        tail += f"; {reasoning[1]}: {reasoning[0][:300]}" + ("…" if len(reasoning[0]) > 300 else "")
    return None, Outcome(Score(value=None, passed=None, reason=msg, details=details), "judge_error", msg + tail, kind)


def case_of(slot: str) -> str:
    """The case id a request's `slot` names (`case|metric|trial…`, a calibration's ending `|alone`)."""
    return slot.removesuffix("|alone").rsplit("|", 2)[0]


def _billed(self: Judge, info: JudgeInfo, exc: Any, repair: bool) -> None:
    """Add to `info` what a failed call's attempts were billed (`exc.billed_input_tokens`, `billed_output_tokens`: a
    refusal's; `billed_cost_usd`)."""
    tokens, out = getattr(exc, "billed_input_tokens", 0), getattr(exc, "billed_output_tokens", 0)
    if tokens or out:
        info.input_tokens += tokens
        info.output_tokens += out
        info.cost_usd = sum_usd((info.cost_usd, exc.billed_cost_usd), None)
        if repair:
            self.stats.repair_input_tokens += tokens
            self.stats.repair_output_tokens += out
            self.stats.repair_cost_usd += exc.billed_cost_usd or 0.0


async def judge(self: Judge, plan: Plan, trial: int, slot: str, one_per_request: bool, repair: bool = True,
                ready: list[Prepared | Exception] | None = None) -> Outcome:
    """All requests of `plan`; the metric's score, or the first failure (`repair`: see `ask`; `ready`: each request
    of `question_groups(plan, one_per_request)` already made ready by `prepare_many`, in that order)."""
    groups = question_groups(plan, one_per_request)
    info = JudgeInfo(model=self.cfg.model)
    answers: dict[str, Any] = {}
    failure: Outcome | None = None
    unseen: list[tuple[Question, Outcome]] = []  # questions asked alone whose call or step no fitted prompt can show
    t0 = time.perf_counter()

    async def one(i: int, group: list[Question]) -> None:
        nonlocal failure
        got, bad = await self.ask(plan, group, trial, f"{slot}#{i}" if len(groups) > 1 else slot, info, repair, ready[i] if ready else None)
        if bad is not None and bad.kind == _NOT_SHOWN and len(group) == 1 and len(groups) > 1:
            unseen.append((group[0], bad))
        elif bad is not None:
            failure = failure or bad
        else:
            answers.update(got or {})

    if len(groups) == 1:
        await one(0, groups[0])
    else:
        async with anyio.create_task_group() as tg:
            for i, group in enumerate(groups):
                tg.start_soon(one, i, group)
    if unseen and failure is None:
        if len(unseen) == len(groups):
            failure = unseen[0][1]
        else:  # scored on the questions asked; the reason names the others
            self.stats.too_long -= len(unseen)  # counted as prompts whose score is null: this score is not
            left = {q.id for q, _ in unseen}
            named = ", ".join(f"{plan.full_id(q)} ({q.text})" for q in plan.questions if q.id in left)
            plan.questions = [q for q in plan.questions if q.id not in left]
            plan.note = "; ".join(filter(None, [plan.note, f"not asked (their steps do not fit context_tokens {self.cfg.context_tokens}): {named}"]))
    return self._judged(plan, info, answers, failure, len(groups), t0)


def is_hit(self: Judge, ready: Prepared | Exception) -> bool:
    """Whether `ask` would answer this request (made ready by `prepare_many`) from the cache, sending nothing."""
    return self.cache is not None and not isinstance(ready, Exception) and ready.fitted.fits and ready.hit is not None


def from_cache(self: Judge, plan: Plan, ready: list[Prepared | Exception]) -> Outcome:
    """What `judge` gives for `plan` when the cache answers every one of its requests, without a task or a wait:
    `ready` holds each request of `question_groups(plan, …)` made ready (`prepare_many`), in that order, each a hit
    (`is_hit`; raises `ValueError` otherwise, with nothing counted)."""
    if not all(self.is_hit(r) for r in ready):
        raise ValueError("from_cache: a request that is not a cache hit")
    t0 = time.perf_counter()
    info = JudgeInfo(model=self.cfg.model)
    answers: dict[str, Any] = {}
    for r in ready:  # in the order `judge`'s asks resume in: each hit's notes and answers as `ask` adds them
        assert not isinstance(r, Exception) and r.hit is not None
        if r.fitted.truncated:
            self._note_truncation(plan, r.fitted)
        answers.update(self._hit(r.hit, info))
    return self._judged(plan, info, answers, None, len(ready), t0)


def judged(self: Judge, plan: Plan, info: JudgeInfo, answers: dict[str, Any], failure: Outcome | None, requests: int, t0: float) -> Outcome:
    """The outcome of `plan` once its `requests` requests were asked (`t0`: when asking began, `perf_counter`)."""
    info.cached = info.cached_requests == requests
    # A score none of whose requests was sent (too long for the context under `too_long: skip`, refused by the budget,
    # given up on by the server's gate) waited on no judge: it has no latency, not the microseconds spent deciding so.
    info.latency_s = round(time.perf_counter() - t0, 4) if info.requests else None
    info.cost_usd = sum_usd((info.cost_usd,))  # to 8 places (None, unknown, stays None)
    if failure is not None:
        failure.score.judge = info
        return failure
    score = finish(plan, answers)
    score.judge = info
    return Outcome(score)
