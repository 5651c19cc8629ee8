"""Redaction of credentials in text copied from a provider's reply.

A provider (or a proxy in front of it) may echo request headers in an
error body or even in a 200 reply; whatever of that text is kept — a score's
reason, `details.raw`, an error message, a log line — first goes through
`redact`. It removes the configured key's value wherever it appears and
anything shaped like a credential: `Bearer <token>`, `sk-…` / `sk_…` keys,
and the value after an `x-api-key` / `api-key` / `authorization` name.

A live target's secrets are the values of the environment variables its
config names as `${NAME}` (`env_secrets`); what the target stage copies from
the target's replies goes through `redact` / `redact_data` with them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ENV_VAR", "MASK", "env_secrets", "redact", "redact_data"]

# `${NAME}` in a config value: the environment variable NAME, expanded at run time.
ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

MASK = "[REDACTED]"

_PATTERNS = (
    # A header or JSON field that names a credential, then its value ("x-api-key: v", '"x-api-key": "v"').
    re.compile(r"""(?i)((?:x-api-key|api[-_]key|authorization|proxy-authorization)["']?\s*[:=]\s*["']?)(?:bearer\s+|basic\s+)?[^\s"',;}]+"""),
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{6,}|\bsk_[A-Za-z0-9_]{6,}"),
)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every secret in `secrets` and every credential-shaped token replaced by `[REDACTED]`.

    `secrets` are exact values (the configured API key); values shorter than
    4 characters are ignored (they would mask ordinary text). Never raises.
    """
    if not text:
        return text
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
    text = _PATTERNS[0].sub(lambda m: m.group(1) + MASK, text)
    text = _PATTERNS[1].sub(lambda m: m.group(1) + " " + MASK, text)
    return _PATTERNS[2].sub(MASK, text)


def env_secrets(texts: Iterable[str | None], environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """The values of the set environment variables named as `${NAME}` in `texts`, each once.

    Values shorter than 4 characters are left out (`redact` ignores them
    anyway). Never raises: an unset variable is simply skipped.
    """
    found: dict[str, None] = {}
    for text in texts:
        for name in ENV_VAR.findall(text or ""):
            value = environ.get(name)
            if value and len(value) >= 4:
                found[value] = None
    return tuple(found)


def redact_data(value: Any, secrets: Iterable[str | None] = (), only_with_secret: bool = False) -> Any:
    """A copy of the JSON-like `value` (dicts, lists, strings, scalars) with its strings passed through `redact`.

    With `only_with_secret`, only strings that contain one of `secrets` are
    redacted (a trace's ordinary text stays as the agent wrote it); the
    others are returned as they are. Dict keys are kept. Never raises.
    """
    secrets = tuple(s for s in secrets if s and len(s) >= 4)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            if only_with_secret and not any(s in v for s in secrets):
                return v
            return redact(v, secrets)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return v

    return walk(value)
