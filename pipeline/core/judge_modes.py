"""Config sections for how judge requests are grouped and sent: calibration and provider batch APIs.

They hang off `judge:` (`judge.calibration`, `judge.batch`); the fields that
choose the mode (`judge.mode`, `judge.items_per_request`) are on `JudgeConfig`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from tracejudge.core.strict_numbers import NoBoolNumbers

__all__ = ["BatchApiConfig", "CalibrationConfig", "PROVIDER_BATCH_LIMITS"]

# Per batch: (requests, bytes of the request file or body) as the providers document them.
PROVIDER_BATCH_LIMITS: dict[str, tuple[int, int]] = {"openai": (50_000, 200 * 1024 * 1024), "anthropic": (100_000, 256 * 1024 * 1024)}


class CalibrationConfig(NoBoolNumbers):
    """Judge a sample of items both alone and batched, and report how often the verdicts agree.

    `fraction` of the items (chosen by a hash of case, metric, trial and
    `seed`, so the same items are chosen on every run) is also judged alone;
    the summary's `judge.calibration` block gives, per metric, the items
    compared, the share of questions answered the same and the share of equal
    scores. It compares a shared request — `items_per_request` > 1, or
    `judge.group: case` — with one request per metric and case, and (under
    `render`) the compact trace with the full one (`trace_format: full`),
    sending no request for an item whose two renderings are the same.
    """

    model_config = ConfigDict(extra="forbid")

    fraction: float = Field(gt=0, le=1)
    seed: int = 0


class BatchApiConfig(NoBoolNumbers):
    """How `judge.mode: batch` groups requests into provider batches and waits for them.

    A batch is submitted when it holds `max_requests` requests or
    `max_bytes` bytes (default: the provider's limits), or `flush_after_s`
    seconds after its first request arrived. Its status is polled every
    `poll_interval_s` seconds. A request that came back with an error or
    expired is resubmitted in a later batch, at most `max_resubmits` times,
    then its case ends `judge_error`. `completion_window` is OpenAI's
    (`24h` is the only value it accepts today).
    """

    model_config = ConfigDict(extra="forbid")

    max_requests: int | None = Field(default=None, ge=1)
    max_bytes: int | None = Field(default=None, ge=1024)
    flush_after_s: float = Field(default=30.0, ge=0)
    poll_interval_s: float = Field(default=30.0, gt=0)
    max_resubmits: int = Field(default=2, ge=0, le=20)
    completion_window: str = "24h"
