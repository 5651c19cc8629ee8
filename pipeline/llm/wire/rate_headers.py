"""The rate-limit state a provider reports in its headers (OpenAI `x-ratelimit-*`, Anthropic `anthropic-ratelimit-*`, `retry-after`)."""

from __future__ import annotations

import math
import time
from datetime import datetime

from tracejudge.llm.wire.records import RateInfo

__all__ = ["rate_info"]


def _seconds(value: str | None) -> float | None:
    """OpenAI's `1.5s` / `6m0s` / `20ms`, a plain number, or an RFC 3339 time → seconds from now; `None` for anything
    else (`1.2.3s`, a date out of range): a header is the server's hint, and one that cannot be read says nothing."""
    try:
        got = _read_seconds(value)
    except (ValueError, OverflowError):
        return None
    return got if got is None or math.isfinite(got) else None  # (`1e999`, `inf`, `nan`: no wait any clock can time)


def _read_seconds(value: str | None) -> float | None:
    if value is None or value == "":
        return None
    v = value.strip()
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    # The common `1.5s` / `20ms` in one step (what the loop below gives for them).
    head = v[:-2] if v.endswith("ms") else v[:-1] if v.endswith("s") else ""
    if head.isascii() and head.replace(".", "", 1).isdigit():
        return float(head) / (1000 if v.endswith("ms") else 1)
    if "T" in v and ("Z" in v or "+" in v):
        try:
            return max(0.0, datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() - time.time())
        except ValueError:
            return None
    total, num = 0.0, ""
    i = 0
    while i < len(v):
        c = v[i]
        if c.isdigit() or c == ".":
            num += c
        elif v.startswith("ms", i):
            total += float(num or 0) / 1000
            num = ""
            i += 1
        elif c in "hms":
            total += float(num or 0) * {"h": 3600, "m": 60, "s": 1}[c]
            num = ""
        else:
            return None
        i += 1
    return total


def _int(value: str | None) -> int | None:
    try:
        return int(float(value)) if value not in (None, "") else None
    except (ValueError, OverflowError):  # (`1e999` is float infinity, which no int holds)
        return None


def rate_info(headers: dict[str, str]) -> RateInfo:
    """Rate-limit state from OpenAI (`x-ratelimit-*`) or Anthropic (`anthropic-ratelimit-*`) headers."""
    h = headers
    retry = None
    if "retry-after-ms" in h:
        retry = (_int(h["retry-after-ms"]) or 0) / 1000
    elif "retry-after" in h:
        retry = _seconds(h["retry-after"])
    if any(k.startswith("anthropic-ratelimit-") for k in h):
        p = "anthropic-ratelimit-"
        return RateInfo(
            _int(h.get(p + "requests-limit")), _int(h.get(p + "tokens-limit")),
            _int(h.get(p + "requests-remaining")), _int(h.get(p + "tokens-remaining")),
            _seconds(h.get(p + "requests-reset")), _seconds(h.get(p + "tokens-reset")), retry,
        )
    p = "x-ratelimit-"
    return RateInfo(
        _int(h.get(p + "limit-requests")), _int(h.get(p + "limit-tokens")),
        _int(h.get(p + "remaining-requests")), _int(h.get(p + "remaining-tokens")),
        _seconds(h.get(p + "reset-requests")), _seconds(h.get(p + "reset-tokens")), retry,
    )
