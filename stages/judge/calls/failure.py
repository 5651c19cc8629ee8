"""What a judge request that got no answer becomes: its `Outcome`, whose message says what to fix and where.

`failure` is the body of `Judge.failure` (`client.Judge` binds it, hence `self`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracejudge.core.records import Score
from tracejudge.llm.context_refusal import body_fix, context_fix
from tracejudge.llm.providers import ProviderError, public_url
from tracejudge.llm.replies import not_found_fix, request_fix
from tracejudge.stages.judge.calls.outcome import Outcome, error_kind

if TYPE_CHECKING:
    from tracejudge.stages.judge.client import Judge

__all__ = ["failure"]


def failure(self: Judge, exc: ProviderError, case: str = "") -> Outcome:
    """The `Outcome` of a request that got no answer (`exc` already redacted); counts it. A refused request's message names
    `case` (the case it asked about: a prompt too long is that case's) and, as any server's error does, the judge's URL."""
    kind = error_kind(exc, self.reached, self.cfg.max_tokens)
    self.stats.judge_errors += 1
    self.stats.error_kinds[kind] = self.stats.error_kinds.get(kind, 0) + 1
    details: dict[str, Any] = {"error_kind": kind}
    if exc.status is not None:
        details["http_status"] = exc.status
    if exc.given_up and self.reached:  # (the run's end names this cause first: `error_note.first_judge_error`)
        details["given_up"] = True
    if exc.kind == "quota":
        wait = f"the provider asked to wait {exc.retry_after_s:g} s, over max_retry_after_s {self.cfg.max_retry_after_s:g}" \
            if exc.retry_after_s is not None else "the provider reports its quota exhausted"
        msg = f"rate_limited: {wait} (daily quota?): {exc}"
        return Outcome(Score(value=None, passed=None, reason=msg, details=details), "rate_limited", msg, kind)
    msg = f"{kind}: {exc}"
    from tracejudge.llm.batch_api import NoBatchApi  # here: batch_api imports aiohttp, which a judge stage loads only once it sends

    if isinstance(exc, NoBatchApi):
        msg = f"no batch API: {exc}"  # (it says what to set; not_found_fix is about the chat endpoint's URL)
    elif kind == "request_error" and exc.status == 404:  # no such endpoint: the base URL, not the request, is what to fix
        msg += f"; {not_found_fix(self.url, self.cfg.provider, self.cfg.base_url, str(exc), self.cfg.model)}"  # (a missing model: judge.model)
    elif kind == "request_error":
        msg += _where(self, exc, case) + f"; {request_fix(str(exc))}"
    elif kind == "context_exceeded":
        msg += _where(self, exc, case) + f"; {context_fix(str(exc), self.cfg.context_tokens)}"
    elif kind == "body_too_large":
        msg += _where(self, exc, case) + f"; {body_fix(self.cfg.context_tokens)}"
    elif kind == "unreachable":
        msg = f"unreachable: cannot reach the judge at {public_url(self.url)} ({exc}); nothing of the run was answered"
    elif kind == "provider_error":
        msg += _where(self, exc)
    return Outcome(Score(value=None, passed=None, reason=msg, details=details), "judge_error", msg, kind)


def _where(self: Judge, exc: ProviderError, case: str = "") -> str:
    """` (the request for case 'c1', judge at URL)`: what a failure's message leaves out of the two ("" for neither)."""
    # A run may have several judges, and a base URL taken from the environment is easy to miss.
    url = public_url(self.url)
    parts = [f"the request for case {case!r}"] if case else []
    if url not in str(exc):
        parts.append(f"judge at {url}")
    return f" ({', '.join(parts)})" if parts else ""
