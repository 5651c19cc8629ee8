"""Billing one answered judge attempt: the rate limiter, the budget, the stats and the spend journal settled at its usage.

A verdict and a refusal are billed alike: the provider answered and billed both (`ProviderError.reply` carries a
refusal's usage). An answer without usage is billed at estimated tokens (`Judge._estimate_usage`). These functions
are called by `tracejudge.stages.judge.calls.sending.attempt` with the judge (`self`) it sends for.

Each attempt is journaled when it is sent (`note_sent`, before the request goes out) and settled in the spend journal
by the billing that ends it (`bill_input`, or `Judge._count` for an answer): what it was billed, 0 for a request that
failed unanswered (a 5xx, a refused connection). One a SIGKILL cut off in flight stays unsettled, and a resume counts
it at its estimated prompt tokens (`tracejudge.llm.spend_journal`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracejudge.stages.judge.calls.prompt_cut import check_prompt_cut

from tracejudge.stages.judge.calls.outcome import unreadable

if TYPE_CHECKING:
    from tracejudge.llm.providers import ProviderError, Reply
    from tracejudge.stages.judge.client import Judge

__all__ = ["Unsettled", "bill_input", "bill_malformed", "bill_unread", "note_sent", "settle_answer", "unsettled_error"]


class Unsettled(Exception):
    """Settling an answer's usage raised `cause` after the limiter and the budget were settled at its estimated input."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


def note_sent(self: Judge, prompt_tokens: int) -> None:
    """Journal an attempt about to be sent with `prompt_tokens`, its prompt as admitted (the estimate a timeout is
    billed at), priced at the judge's model: what a resume counts for it if a kill leaves it unanswered. The billing that
    ends the attempt in this task settles it (`bill_input`, `settle_answer`)."""
    if self.spend is not None:
        self.spend.sent(prompt_tokens, self._cost(prompt_tokens, 0))


def bill_input(self: Judge, held: Any, billed: int) -> None:
    """Settle `held` at `billed` estimated input tokens (an attempt processed with no usage to read) and count them; the
    attempt is settled in the spend journal at them (0: a request that failed unanswered, not paid)."""
    self.budget.settle(held, billed, self._cost(billed, 0))
    self.stats.input_tokens += billed
    self.stats.cost_usd += self._cost(billed, 0)
    if self.spend is not None:
        self.spend.add(billed, 0, self._cost(billed, 0))


def bill_unread(self: Judge, answers: list[Any], prompt_tokens: int, batch_cost: Any) -> tuple[int, float | None, int]:
    """Bill the answers of one batch request that could not be read (`BatchRunner.take_unread`): the provider billed
    each. One that reported its usage (a `Reply` holding it: an answer of the wrong shape) is counted at that usage;
    one whose usage is unknown too (None: its result line unreadable) at `prompt_tokens` (its estimated prompt) in and
    nothing out. Priced by `batch_cost(input, output)`, in the budget, the stats and the spend journal. Returns the input
    tokens, dollars (None for a model without a price) and output tokens billed, for the score of the request."""
    if not answers:
        return 0, 0.0, 0
    from tracejudge.llm.budget import Reservation

    each = [(r.input_tokens, r.output_tokens) if r is not None and r.usage_known else (prompt_tokens, 0) for r in answers]
    tokens, out_tokens = sum(i for i, _ in each), sum(o for _, o in each)
    cost = sum(batch_cost(i, o) for i, o in each)
    self.budget.settle(Reservation(0, 0.0), tokens + out_tokens, cost)  # (paid already: nothing held for it, nothing refused)
    self.stats.input_tokens += tokens
    self.stats.output_tokens += out_tokens
    self.stats.cost_usd += cost
    self.stats.sync_equivalent_usd += sum(self._cost(i, o) for i, o in each)
    if self.spend is not None:
        for i, o in each:
            self.spend.add(i, o, batch_cost(i, o))
    return tokens, None if self.price is None and tokens else cost, out_tokens


def settle_answer(self: Judge, reply: Reply, permit: Any, held: Any, prompt_tokens: int, estimate: int, rate: Any,
                  outcome: str = "ok") -> None:
    """Bill an answered attempt (a verdict, a refusal, or with `outcome="malformed"` a 2xx of the wrong shape that reported
    usage) at its usage: the limiter, the budget, the stats, the spend journal.
    Raises `Unsettled` when reading its usage raised (then billed at `prompt_tokens`, its estimated input)."""
    try:
        if not reply.usage_known:
            self._estimate_usage(reply, prompt_tokens)
        elif check_prompt_cut(self, reply, estimate):
            pass  # a server that cut the prompt counted only part of it: that teaches the tokenizer ratio nothing either
        elif reply.input_tokens > 0:  # (an estimate teaches the ratio nothing)
            self._ratio = max(1.0, 0.8 * self._ratio + 0.2 * reply.input_tokens / max(1, estimate))
        used = reply.input_tokens + reply.output_tokens
        cost = self._cost(reply.input_tokens, reply.output_tokens, reply.cached_input_tokens, reply.cache_write_input_tokens)
    except Exception as exc:  # (a usage figure or a tokenizer nothing foresaw)
        self.limiter.settle(permit, outcome, prompt_tokens, rate)
        bill_input(self, held, prompt_tokens)
        raise Unsettled(exc) from None
    self.limiter.settle(permit, outcome, used, rate)
    self.budget.settle(held, used, cost)
    self._count(reply, cost)
    self.stats.sync_equivalent_usd += cost


def unsettled_error(self: Judge, exc: Unsettled, status: int | None, billed: int) -> ProviderError:
    """The failure of an answer whose usage could not be read (`exc`), billed at `billed` estimated input tokens
    (`settle_answer`): a `fatal` error of HTTP `status`, carrying what it billed so the score shows what the summary
    counts for it."""
    err = unreadable(exc.cause, self.redact, status, "fatal", "had usage that could not be read")
    err.billed_input_tokens, err.billed_cost_usd = billed, None if self.price is None and billed else self._cost(billed, 0)
    return err


def bill_malformed(self: Judge, exc: ProviderError, permit: Any, held: Any, prompt_tokens: int, estimate: int, rate: Any) -> None:
    """Bill a 2xx of the wrong shape at the usage it reported (`exc.billed_reply`; the provider billed it, though no verdict
    could be read) and count it as the server error it is retried as."""
    reply = exc.billed_reply
    assert reply is not None
    try:
        settle_answer(self, reply, permit, held, prompt_tokens, estimate, rate, outcome="malformed")
        exc.billed_input_tokens, exc.billed_output_tokens, exc.billed_cost_usd = reply.input_tokens, reply.output_tokens, reply.cost_usd
    except Unsettled:  # (billed at its estimated input instead)
        exc.billed_input_tokens, exc.billed_cost_usd = prompt_tokens, None if self.price is None and prompt_tokens else self._cost(prompt_tokens, 0)
    self.stats.server_errors += 1
    self.reached = True
