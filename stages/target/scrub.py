"""Masking a run's secrets in what the target stage keeps of the agent's replies.

A live target may echo what it was sent: the header values, URL and command arguments the config names as `${NAME}`,
and the judge's API key (`target_secrets`). Before a result, a report or `traces.jsonl` sees an attempt, `scrub`
masks those values, anything credential-shaped in its error text (`tracejudge.llm.redact`), and in its trace and
turns what the viewer masks of a trace (`redact_details`: credential shapes, a value under a credential's name):
a run directory is an artifact others read, and a hosted judge a third party (its prompt is rendered from the masked
trace). The deterministic metrics score the trace as the agent produced it (`Attempt.raw`, kept here before masking),
as they score a dataset's: an argument a mask would hide (a password, an echoed `${NAME}`) is compared as the agent
passed it. A resumed or re-scored run reads `traces.jsonl`, so there a metric compares such a value masked. It stands
apart from the stage because it is one rule applied to each attempt's output, whichever kind of target produced it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tracejudge.core.config import RunConfig
from tracejudge.core.records import Trace
from tracejudge.core.utf8 import safe_text
from pydantic import ValidationError
from tracejudge.llm.redact import env_secrets, quoted_clean, redact, redact_data, redact_details

if TYPE_CHECKING:
    from tracejudge.stages.target import Attempt

__all__ = ["echo_forms", "scrub", "target_secrets"]


def target_secrets(config: RunConfig) -> tuple[str, ...]:
    """The secret values a run's target replies may echo: every set `${NAME}` of the target's headers, URL and command, and the judge's API key."""
    cfg = config.target
    texts: list[str | None] = [*cfg.headers.values(), cfg.url, *(cfg.command or [])] if cfg is not None else []
    if config.judge is not None and config.judge.api_key_env:
        texts.append(f"${{{config.judge.api_key_env}}}")  # the judge's key, named the same way
    return env_secrets(texts)


def echo_forms(secrets: tuple[str, ...]) -> tuple[str, ...]:
    """`secrets` and their JSON-escaped spellings (a secret with a quote or a backslash, as a trace's JSON text holds it),
    longest first, without repeats: what `redact` must be given to mask every echo."""
    forms = {*secrets, *(json.dumps(s, ensure_ascii=False)[1:-1] for s in secrets)}
    return tuple(sorted(forms, key=lambda s: (-len(s), s)))


def _scrub_trace(trace: Trace | None, secrets: tuple[str, ...], escaped: tuple[str, ...]) -> Trace | None:
    # Only a trace that holds a secret or a credential's hint is rebuilt (one JSON dump to check).
    if trace is None:
        return trace
    blob = trace.model_dump_json()
    echoed = bool(secrets) and any(s in blob for s in escaped)
    if not echoed and quoted_clean([blob]):
        return trace
    data = trace.model_dump(mode="json")
    if echoed:
        data = redact_data(data, secrets, only_with_secret=True)
    masked = redact_details(data)
    if masked == data and not echoed:
        return trace
    try:
        return Trace.model_validate(masked)
    except ValidationError:  # a credential inside a field a trace constrains: its echoes of secrets masked only
        return Trace.model_validate(data)


def scrub(out: Attempt, secrets: tuple[str, ...], escaped: tuple[str, ...]) -> Attempt:
    """`out` with the target's echoes of `secrets` (and credential-shaped text in errors) masked; `out.raw` keeps the
    trace as it was, for the deterministic metrics."""
    out.raw = out.trace
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
            for t in redact_details(redact_data(out.turns, secrets, only_with_secret=True))
        ]
    return out
