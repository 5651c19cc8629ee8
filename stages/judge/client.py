"""The judge client: plan → requests → (cache | budget → limiter → provider with retries) → parsed answers.

Small separate steps, so batched multi-item judging and provider batch APIs
can reuse them:

- `build_request(plan, questions, cfg, omit)` — one provider-neutral request;
- `key_components(...)` / `cache_key` — the content address;
- `Judge.call(request)` — send one request with admission, budget and
  tenacity retries (429, 5xx, timeouts, connection errors; jittered
  exponential backoff, or the provider's `retry-after`; a cap on attempts
  and on total sleep; a `retry-after` beyond `max_retry_after_s` fails at
  once as `rate_limited`);
- `parse_answers(plan, questions, text)` — strict parsing;
- `Judge.ask(...)` — the above for one request, plus at most one repair
  request when the answer does not parse or was truncated;
- `Judge.judge(plan, trial, slot)` — all requests of one metric on one case.

Multi-item requests (`tracejudge.stages.judge.multi.judge_items`) and batch mode
(`judge.mode: batch`: `Judge.call` hands the payload to a
`tracejudge.stages.judge.batch_runner.BatchRunner` under the request's cache key as
`custom_id`, billed at the batch price, with `sync_equivalent_usd`
counting what the same answers would have cost synchronously) build on
these steps.

Billing: every attempt that got an answer is billed at its `usage`; an
attempt that timed out or lost its connection after sending is billed at
its estimated input tokens (the provider may have processed it); refused
attempts (429, 5xx) and attempts that never connected cost nothing.
Cache hits cost nothing; what they would have cost is counted as saved.
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_random_exponential
from tracejudge.core.config import JudgeConfig
from tracejudge.core.records import JudgeInfo, Score
from tracejudge.llm.budget import Budget
from tracejudge.llm.cache import JudgeCache, cache_key, canonical
from tracejudge.llm.prices import Price
from tracejudge.llm.providers import (
    JudgeRequest,
    ProviderError,
    Reply,
    auth_headers,
    build_payload,
    rate_info,
    read_reply,
    send,
)
from tracejudge.llm.ratelimit import Limiter
from tracejudge.llm.tokens import count_messages
from tracejudge.stages.judge.base import Plan, Question
from tracejudge.stages.judge.parse import ParseError, parse_scale, parse_yes_no

if TYPE_CHECKING:
    from tracejudge.stages.judge.batch_runner import BatchRunner

__all__ = ["Judge", "JudgeStats", "Outcome", "build_request", "key_components", "parse_answers", "request_tokens"]

REPAIR = ("Your previous reply could not be used ({problem}). Reply again with only the JSON object the schema describes "
          "— every question id, nothing else — and keep each reason under 20 words.")


@dataclass
class JudgeStats:
    """Counters of one run segment. Tokens are counts, money US dollars, times seconds."""

    requests: int = 0
    answered: int = 0
    cache_hits: int = 0
    retries: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    timeouts: int = 0
    connection_errors: int = 0
    repairs: int = 0
    judge_errors: int = 0
    skipped_budget: int = 0
    too_long: int = 0
    truncated_prompts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    saved_usd: float = 0.0
    saved_tokens: int = 0
    queued_s: float = 0.0
    slept_s: float = 0.0
    sync_equivalent_usd: float = 0.0
    multi_requests: int = 0
    items_batched: int = 0
    items_reasked_alone: int = 0
    items_from_cache: int = 0
    latencies: list[float] = field(default_factory=list)
    cache_misses_explained: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The summary's `judge` block."""
        lat = sorted(self.latencies)

        def pct(p: float) -> float | None:
            return round(lat[min(len(lat) - 1, int(p * len(lat)))], 4) if lat else None

        out = {k: v for k, v in self.__dict__.items() if k not in ("latencies", "cost_usd", "saved_usd", "queued_s", "slept_s", "sync_equivalent_usd")}
        out.update(cost_usd=round(self.cost_usd, 6), saved_usd=round(self.saved_usd, 6), sync_equivalent_usd=round(self.sync_equivalent_usd, 6),
                   queued_s=round(self.queued_s, 3),
                   slept_s=round(self.slept_s, 3), latency_p50_s=pct(0.5), latency_p95_s=pct(0.95))
        return out


@dataclass
class Outcome:
    """A metric's result on one case: the score and how it ended (`ok`, `judge_error`, `rate_limited`, `skipped_budget`)."""

    score: Score
    status: str = "ok"
    message: str = ""


class _BudgetRefused(Exception):
    pass


def build_request(plan: Plan, questions: list[Question], cfg: JudgeConfig, omit: int = 0) -> JudgeRequest:
    """The request asking `questions` of `plan` (its case text with `omit` middle steps left out)."""
    metric = plan.metric
    listing = "\n".join(f"{q.id}: {q.text}" for q in questions)
    user = f"{plan.render(omit)}\n\nQuestions:\n{listing}" if plan.kind == "yes_no" else plan.render(omit)
    system = metric.system_prompt(plan.kind)
    return JudgeRequest(
        model=cfg.model,
        messages=({"role": "system", "content": system}, {"role": "user", "content": user}),
        schema=metric.verdict_schema(plan, [q.id for q in questions]),
        schema_name="verdict",
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
    )


def request_tokens(req: JudgeRequest) -> int:
    """Estimated prompt tokens of `req` (messages + schema), tiktoken-counted."""
    return count_messages(list(req.messages), req.model, canonical(req.schema))


def key_components(provider: str, base_url: str, req: JudgeRequest, prompt_version: str, rubric: Any, trial: int) -> dict[str, Any]:
    """Exactly the cache key components (see `tracejudge.llm.cache`)."""
    return {
        "provider": provider,
        "base_url": base_url,
        "model": req.model,
        "messages": list(req.messages),
        "sampling": {"temperature": req.temperature, "max_tokens": req.max_tokens},
        "response_format": {"name": req.schema_name, "schema": req.schema},
        "prompt_version": prompt_version,
        "rubric": rubric,
        "trial": trial,
    }


def parse_answers(plan: Plan, questions: list[Question], text: str) -> dict[str, dict[str, Any]]:
    """Answers by question id; raises `ParseError`."""
    if plan.kind == "scale":
        return {questions[0].id: parse_scale(text, *plan.scale)}
    return parse_yes_no(text, [q.id for q in questions])


class Judge:
    """Sends judge requests for one run: one shared session, limiter, budget, cache and stats.

    `cache_base_url` is the base URL as it enters cache keys (the simulator's
    changes every start, so its key uses a fixed name).
    """

    def __init__(self, cfg: JudgeConfig, *, session: aiohttp.ClientSession, url: str, api_key: str | None, limiter: Limiter,
                 budget: Budget, cache: JudgeCache | None, price: Price | None, cache_base_url: str, explain: bool = False,
                 batches: BatchRunner | None = None) -> None:
        self.cfg = cfg
        self.session = session
        self.url = url
        self.protocol = "anthropic" if cfg.provider == "anthropic" else "openai"
        self._headers = auth_headers(self.protocol, api_key)
        self.limiter = limiter
        self.budget = budget
        self.cache = cache
        self.price = price
        self.cache_base_url = cache_base_url
        self.explain = explain
        self.stats = JudgeStats()
        self.batches = batches
        self._ratio = 1.0  # provider prompt tokens / our estimate, never below 1

    # ------------------------------------------------------------------ money

    def _cost(self, input_tokens: int, output_tokens: int, cached: int = 0) -> float:
        return self.price.cost(input_tokens, output_tokens, cached) if self.price else 0.0

    # ------------------------------------------------------------------ one request, retried

    async def _sleep(self, seconds: float) -> None:
        self.stats.slept_s += seconds
        await anyio.sleep(seconds)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        backoff = wait_random_exponential(multiplier=0.25, max=20)(state)
        if isinstance(exc, ProviderError) and exc.retry_after_s is not None:
            # What the server asked, plus a little jitter so retries do not arrive together.
            return exc.retry_after_s + random.uniform(0, 0.05 + 0.1 * exc.retry_after_s)
        return backoff

    def _stop(self, state: RetryCallState) -> bool:
        return stop_after_attempt(self.cfg.max_attempts)(state) or state.idle_for + (state.upcoming_sleep or 0) > self.cfg.max_retry_wait_s

    async def _attempt(self, payload: dict[str, Any], estimate: int) -> Reply:
        # The provider's count of a prompt differs from ours (its tokenizer, its framing);
        # reserving our estimate scaled by the ratio `usage` has shown keeps the
        # admission gate from running ahead of the provider's own bucket.
        prompt_tokens = math.ceil(estimate * self._ratio)
        max_out = int(payload.get("max_tokens") or self.cfg.max_tokens)  # a multi-item request allows more output
        reserve = prompt_tokens + max_out
        held = self.budget.reserve(reserve, self._cost(prompt_tokens, max_out))
        if held is None:
            raise _BudgetRefused()
        permit = await self.limiter.acquire(reserve)
        self.stats.queued_s += permit.queued_s
        self.stats.requests += 1
        try:
            http = await send(self.session, self.url, self._headers, payload, self.cfg.timeout_s)
            self.stats.latencies.append(http.latency_s)
            reply = read_reply(self.protocol, http, self.cfg.max_retry_after_s)
        except ProviderError as exc:
            self.limiter.settle(permit, exc.kind, None, exc.rate)
            billed = prompt_tokens if exc.kind in ("timeout", "connection") else 0
            self.budget.settle(held, billed, self._cost(billed, 0))
            self.stats.input_tokens += billed
            self.stats.cost_usd += self._cost(billed, 0)
            if exc.kind in ("rate_limited", "quota"):
                self.stats.rate_limited += 1
            elif exc.kind == "server":
                self.stats.server_errors += 1
            elif exc.kind == "timeout":
                self.stats.timeouts += 1
            elif exc.kind in ("connection", "unreachable"):
                self.stats.connection_errors += 1
            raise
        except BaseException:
            self.limiter.settle(permit, "timeout")
            self.budget.settle(held, prompt_tokens, self._cost(prompt_tokens, 0))
            raise
        used = reply.input_tokens + reply.output_tokens
        if reply.input_tokens > 0:
            self._ratio = max(1.0, 0.8 * self._ratio + 0.2 * reply.input_tokens / max(1, estimate))
        self.limiter.settle(permit, "ok", used, rate_info(http.headers))
        cost = self._cost(reply.input_tokens, reply.output_tokens, reply.cached_input_tokens)
        self.budget.settle(held, used, cost)
        self.stats.answered += 1
        self.stats.input_tokens += reply.input_tokens
        self.stats.output_tokens += reply.output_tokens
        self.stats.cost_usd += cost
        self.stats.sync_equivalent_usd += cost
        return reply

    async def _batch_call(self, payload: dict[str, Any], estimate: int, custom_id: str) -> Reply:
        # Batch mode: no rate limiter (the provider queues the batch); the budget holds the
        # worst case at the batch price until the batch's answer settles it.
        assert self.batches is not None
        prompt_tokens = math.ceil(estimate * self._ratio)
        batch_cost = self.price.batch_cost if self.price else (lambda i, o, c=0: 0.0)
        max_out = int(payload.get("max_tokens") or self.cfg.max_tokens)
        held = self.budget.reserve(prompt_tokens + max_out, batch_cost(prompt_tokens, max_out))
        if held is None:
            raise _BudgetRefused()
        self.stats.requests += 1
        try:
            reply = await self.batches.submit(custom_id, payload)
        except BaseException:
            self.budget.settle(held, 0, 0.0)
            raise
        cost = batch_cost(reply.input_tokens, reply.output_tokens, reply.cached_input_tokens)
        self.budget.settle(held, reply.input_tokens + reply.output_tokens, cost)
        self.stats.answered += 1
        self.stats.input_tokens += reply.input_tokens
        self.stats.output_tokens += reply.output_tokens
        self.stats.cost_usd += cost
        self.stats.sync_equivalent_usd += self._cost(reply.input_tokens, reply.output_tokens, reply.cached_input_tokens)
        return reply

    async def call(self, req: JudgeRequest, key: str | None = None) -> Reply:
        """Send `req` with admission, budget and retries (or, in batch mode, in a provider batch as `key`).

        Raises `ProviderError` (kind `quota` for a daily quota, or the last
        retryable failure once attempts or wait are exhausted, or `fatal`), or
        `_BudgetRefused` when an attempt could cross the budget.
        """
        from tracejudge.stages.judge.fit import count_prompt

        payload = build_payload(self.protocol, req)
        prompt_tokens = await count_prompt(req)
        if self.batches is not None:
            custom_id = key or hashlib.sha256(canonical({"protocol": self.protocol, "payload": payload}).encode()).hexdigest()
            return await self._batch_call(payload, prompt_tokens, custom_id)
        retrying = AsyncRetrying(
            stop=self._stop, wait=self._wait, sleep=self._sleep, reraise=True,
            retry=retry_if_exception(lambda e: isinstance(e, ProviderError) and e.retryable),
            before_sleep=lambda state: setattr(self.stats, "retries", self.stats.retries + 1),
        )
        async for attempt in retrying:
            with attempt:
                reply = await self._attempt(payload, prompt_tokens)
        return reply

    # ------------------------------------------------------------------ one question group

    async def ask(self, plan: Plan, questions: list[Question], trial: int, slot: str, info: JudgeInfo) -> tuple[dict[str, Any] | None, Outcome | None]:
        """Answers for `questions`, or an `Outcome` saying why there are none."""
        from tracejudge.stages.judge.fit import fit_request

        # Rendering, counting and truncating run in a worker thread: a long trace never holds the loop.
        fitted = await anyio.to_thread.run_sync(fit_request, plan, questions, self.cfg, abandon_on_cancel=True)
        req, tokens, limit = fitted.req, fitted.tokens, self.cfg.context_tokens - self.cfg.max_tokens
        if not fitted.fits:
            self.stats.too_long += 1
            score = Score(value=None, passed=None, reason=f"too_long: the judge prompt has {tokens} tokens, over the {limit} that fit "
                          f"(context_tokens {self.cfg.context_tokens} − max_tokens {self.cfg.max_tokens}; too_long: {self.cfg.too_long})",
                          details={"too_long_tokens": tokens})
            return None, Outcome(score, "ok")
        if fitted.omit:
            self.stats.truncated_prompts += 1
            plan.note = (plan.note + "; " if plan.note else "") + f"{fitted.omit} middle steps left out to fit the judge's context (too_long: truncate)"

        comps = key_components(self.cfg.provider, self.cache_base_url, req, plan.metric.prompt_version, plan.metric.rubric, trial)
        key = cache_key(comps)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                u = hit.get("usage", {})
                self.stats.saved_tokens += u.get("input_tokens", 0) + u.get("output_tokens", 0)
                self.stats.saved_usd += self._cost(u.get("input_tokens", 0), u.get("output_tokens", 0))
                info.cached_requests += 1
                return hit["answers"], None
            if self.explain:
                why = self.cache.explain(comps, slot)
                info.cache_miss = why if info.cache_miss is None else f"{info.cache_miss}; {why}"
                self.stats.cache_misses_explained[why] = self.stats.cache_misses_explained.get(why, 0) + 1
        used = {"input_tokens": 0, "output_tokens": 0}
        raw = ""
        problem = ""
        for repair in (False, True):
            if repair:
                self.stats.repairs += 1
                req = JudgeRequest(req.model, (*req.messages, {"role": "assistant", "content": raw or "(empty)"},
                                               {"role": "user", "content": REPAIR.format(problem=problem)}),
                                   req.schema, req.schema_name, req.max_tokens, req.temperature)
            try:
                reply = await self.call(req, key=None if repair else key)
            except _BudgetRefused:
                self.stats.skipped_budget += 1
                return None, Outcome(Score(value=None, passed=None, reason="skipped_budget: this request could cross the judge budget"), "skipped_budget",
                                     "a judge request could cross the token or dollar budget; resume with a larger budget to finish it")
            except ProviderError as exc:
                self.stats.judge_errors += 1
                kind = "rate_limited" if exc.kind == "quota" else "judge_error"
                msg = f"judge_error: {exc}" if kind == "judge_error" else \
                      f"rate_limited: the provider asked to wait {exc.retry_after_s:g} s, over max_retry_after_s {self.cfg.max_retry_after_s:g} (daily quota?): {exc}"
                return None, Outcome(Score(value=None, passed=None, reason=msg), kind, msg)
            info.input_tokens += reply.input_tokens
            info.output_tokens += reply.output_tokens
            used["input_tokens"] += reply.input_tokens
            used["output_tokens"] += reply.output_tokens
            raw = reply.text
            if reply.truncated:
                problem = f"it was cut off at max_tokens={req.max_tokens}"
                continue
            try:
                answers = parse_answers(plan, questions, raw)
            except ParseError as exc:
                problem = str(exc)
                continue
            if self.cache is not None:
                self.cache.put(key, {"answers": answers, "text": raw, "usage": used}, comps, slot)
            return answers, None
        self.stats.judge_errors += 1
        msg = f"judge_error: unusable verdict after one repair request ({problem})"
        return None, Outcome(Score(value=None, passed=None, reason=msg, details={"raw": raw[:8000]}), "judge_error", f"{msg}; raw reply: {raw[:2000]}")

    # ------------------------------------------------------------------ one metric, one case

    async def judge(self, plan: Plan, trial: int, slot: str, one_per_request: bool) -> Outcome:
        """All requests of `plan`; the metric's score, or the first failure."""
        groups = [[q] for q in plan.questions] if one_per_request and plan.kind == "yes_no" else [plan.questions]
        info = JudgeInfo(model=self.cfg.model)
        answers: dict[str, Any] = {}
        failure: Outcome | None = None
        t0 = time.perf_counter()

        async def one(i: int, group: list[Question]) -> None:
            nonlocal failure
            got, bad = await self.ask(plan, group, trial, f"{slot}#{i}" if len(groups) > 1 else slot, info)
            if bad is not None:
                failure = failure or bad
            else:
                answers.update(got or {})

        if len(groups) == 1:
            await one(0, groups[0])
        else:
            async with anyio.create_task_group() as tg:
                for i, group in enumerate(groups):
                    tg.start_soon(one, i, group)
        info.requests = len(groups)
        info.cached = info.cached_requests == len(groups)
        info.latency_s = round(time.perf_counter() - t0, 4)
        if failure is not None:
            failure.score.judge = info
            return failure
        score = plan.metric.finalize(plan, answers)
        score.judge = info
        return Outcome(score)
