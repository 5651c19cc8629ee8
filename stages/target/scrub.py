"""Masking a run's secrets in what the target stage keeps of the agent's replies.

A live target may echo what it was sent: the header values, URL and command arguments the config names as `${NAME}`,
and the judge's API key (`target_secrets`). Before a result, a report or `traces.jsonl` sees an attempt, `scrub`
masks those values, and anything credential-shaped in its error text (`tracejudge.llm.redact`). It stands apart
from the stage because it is one rule applied to each attempt's output, whichever kind of target produced it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracejudge.core.config import RunConfig
from tracejudge.core.records import Trace
from tracejudge.core.utf8 import safe_text
from tracejudge.llm.redact import env_secrets, redact, redact_data

if TYPE_CHECKING:
    from tracejudge.stages.target import Attempt

__all__ = ["scrub", "target_secrets"]


def target_secrets(config: RunConfig) -> tuple[str, ...]:
    """The secret values a run's target replies may echo: every set `${NAME}` of the target's headers, URL and command, and the judge's API key."""
    cfg = config.target
    texts: list[str | None] = [*cfg.headers.values(), cfg.url, *(cfg.command or [])] if cfg is not None else []
    if config.judge is not None and config.judge.api_key_env:
        texts.append(f"${{{config.judge.api_key_env}}}")  # the judge's key, named the same way
    return env_secrets(texts)


def _scrub_trace(trace: Trace | None, secrets: tuple[str, ...], escaped: tuple[str, ...]) -> Trace | None:
    # The trace's own text is the agent's: only a trace that holds a secret is rebuilt (one JSON dump to check).
    if trace is None or not secrets:
        return trace
    blob = trace.model_dump_json()
    if not any(s in blob for s in escaped):
        return trace
    return Trace.model_validate(redact_data(trace.model_dump(mode="json"), secrets, only_with_secret=True))


def scrub(out: Attempt, secrets: tuple[str, ...], escaped: tuple[str, ...]) -> Attempt:
    """`out` with the target's echoes of `secrets` (and credential-shaped text in errors) masked."""
    out.trace = _scrub_trace(out.trace, secrets, escaped)
    out.partial = _scrub_trace(out.partial, secrets, escaped)
    # An agent's exception may carry a lone surrogate: escaped, as every text written of the reply must be encodable.
    if out.message is not None:
        out.message = safe_text(redact(out.message, secrets))
    if out.details is not None:
        out.details = {k: safe_text(v) if isinstance(v, str) else v for k, v in redact_data(out.details, secrets).items()}
    if out.turns is not None:
        out.turns = [
            {**t, "error": redact(t["error"], secrets)} if isinstance(t.get("error"), str) else t
            for t in redact_data(out.turns, secrets, only_with_secret=True)
        ]
    return out
