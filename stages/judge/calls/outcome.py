"""How judging a metric on a case ended (`Outcome`), and the provider failures that stop the whole run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tracejudge.core.errors import TracejudgeError
from tracejudge.core.records import Score
from tracejudge.llm.context_refusal import context_size, over_context
from tracejudge.llm.providers import ProviderError

__all__ = ["STOPS", "JudgeAuthError", "JudgeRequestError", "JudgeStopped", "JudgeUnreachable", "Outcome", "error_kind", "unreadable"]


@dataclass
class Outcome:
    """A metric's result on one case: the score and how it ended.

    `status` is the result status it asks for (`ok`, `judge_error`,
    `rate_limited`, `skipped_budget`); `kind` the error kind of a failure
    (see the module doc; empty when `ok`).
    """

    score: Score
    status: str = "ok"
    message: str = ""
    kind: str = ""


class JudgeAuthError(TracejudgeError):
    """The provider refused the credentials (HTTP 401/403): no later request can succeed, so the run stops (exit 2)."""


class JudgeRequestError(TracejudgeError):
    """The judge server refused the request itself (its format, its size): every request would be refused the same way,
    so the run stops (exit 2) naming the server's message and the setting to change."""


class JudgeUnreachable(TracejudgeError):
    """No connection to the judge (or connections accepted and never replied to), and nothing of the run was ever
    answered: the run stops naming the URL (exit 3)."""

    exit_status = 3


# Error kinds after which no later request can succeed: the stage stops the run at the first.
STOPS = {"auth_error": JudgeAuthError, "request_error": JudgeRequestError, "unreachable": JudgeUnreachable}


def error_kind(exc: ProviderError, reached: bool = True, max_tokens: int | None = None) -> str:
    """The result's error kind for a provider failure: rate_limited, timeout, auth_error, request_error, context_exceeded
    (a refusal of this request's prompt as longer than the server's context, `context_refusal.over_context`: that case's
    error, not the run's), body_too_large (a 413 refusing this request's body as larger than the server, or a proxy before
    it, accepts: that case's error too), unreachable (never connected while nothing was ever `reached`) or provider_error.

    A context refusal whose window is no larger than `max_tokens` (`judge.max_tokens`) is a `request_error`: the reply's
    room alone fills the window, so no prompt fits and every request would be refused alike."""
    if exc.kind in ("rate_limited", "quota"):
        return "rate_limited"
    if exc.kind == "timeout":
        return "timeout"
    if exc.status in (401, 403):
        return "auth_error"
    if exc.kind == "request" and exc.status == 413:
        return "body_too_large"
    if exc.kind == "request" and exc.status != 404 and over_context(str(exc)):
        window = context_size(str(exc))
        return "request_error" if window is not None and max_tokens is not None and max_tokens >= window else "context_exceeded"
    if exc.kind == "request":
        return "request_error"
    if exc.kind == "unreachable" and not reached:
        return "unreachable"
    return "provider_error"


def unreadable(exc: BaseException, redact: Callable[[str], str], status: int | None = None, kind: str = "fatal",
               what: str = "could not be read") -> ProviderError:
    """`exc`, an exception of no foreseen kind met while a judge request was sent or its reply read (a reply shape or a
    header nothing foresaw, a bug), as that request's failure: a `ProviderError` of `kind` and HTTP `status` (None: no
    reply), so its result is a `provider_error` judge error, counted, and the case's other verdicts stand. `kind`
    `server` (a reply the wire layer could not read) is retried as a malformed reply is; `fatal` is not (a reply's
    usage that cannot be read reads the same the next time). The message says the reply `what` and names the
    exception's type, its text passed through `redact` (it may quote the reply) and cut to 200 characters."""
    text = " ".join(redact(str(exc)).split())
    text = text if len(text) <= 200 else text[:199] + "…"
    head = f"HTTP {status}: " if status is not None else ""
    return ProviderError(kind, f"{head}the judge's reply {what} ({type(exc).__name__}{': ' + text if text else ''}); nothing of it is used",
                         status)


class JudgeStopped(Exception):
    """The run is stopping: a request still waiting for admission is not sent (nothing more is spent)."""


class _BudgetRefused(Exception):
    """An attempt could cross the judge budget: the request is not sent (its result is `skipped_budget`).

    `billed_input_tokens` / `billed_cost_usd`: what the same call's earlier attempts that timed out were billed."""

    billed_input_tokens: int = 0
    billed_cost_usd: float | None = 0.0
