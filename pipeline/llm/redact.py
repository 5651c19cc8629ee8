"""Redaction of credentials in text copied from a provider's reply.

A provider (or a proxy in front of it) may echo request headers in an
error body or even in a 200 reply; whatever of that text is kept — a score's
reason, `details.raw`, an error message, a log line — first goes through
`redact`. It removes the configured key's value wherever it appears and
anything shaped like a credential: `Bearer <token>`, `sk-…` / `sk_…` keys,
and the value after an `x-api-key` / `api-key` / `authorization` name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["MASK", "redact"]

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
