"""What a run's judge did, counted: the summary's `judge` block."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PAID_BY", "RUN_MARK", "JudgeStats", "add_counts", "paid_here", "run_mark", "share_usd", "sum_usd"]

# The file of a run directory naming the run (a random hex token, made by the first answer paid or read), and the key
# of a cached answer's `usage` naming the run that paid for it: a hit of an answer this run paid for is no saving.
RUN_MARK = "judge_run_id"
PAID_BY = "paid_by"


def add_counts(a: Any, b: Any) -> Any:
    """`a + b` for two counters of the summary (rounded to 6 places when either is a float); None when either is None
    (dollars not known: a model without a price billed tokens)."""
    if a is None or b is None:
        return None
    return round(a + b, 6) if isinstance(a, float) or isinstance(b, float) else a + b


def sum_usd(costs: Iterable[float | None], places: int | None = 8) -> float | None:
    """The sum of a score's dollars (`JudgeInfo.cost_usd`, `Reply.cost_usd`), rounded to `places` (None: not rounded);
    None when any is None (a model without a price billed tokens: the sum is not known either)."""
    costs = list(costs)
    if any(c is None for c in costs):
        return None
    total = sum(costs)  # type: ignore[arg-type]
    return total if places is None else round(total, places)


def share_usd(cost: float | None, n: int) -> float | None:
    """One of `n` equal shares of `cost` (a request shared by `n` items or metrics), to 8 places; None stays None."""
    return None if cost is None else round(cost / n, 8)


def run_mark(run_dir: Path | None) -> str | None:
    """The token naming the run of `run_dir` (32 hex digits, kept in `run_dir/judge_run_id`, made on first use); None
    without a run directory or when the file can be neither read nor made (its answers then count as another run's).

    The same for every segment of the run (a resume reads the file the first segment made), and another run's
    directory has its own: what tells a resume's cache hits of answers its killed segment paid for (not savings: the
    run paid for them once) from hits of answers paid before the run began or by another run (savings). Deleting the
    file makes the next segment a new run for this purpose only.
    """
    if run_dir is None:
        return None
    path = Path(run_dir) / RUN_MARK
    mark: str | None = None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)  # (exclusive: two judges of a panel make one)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            mark = uuid.uuid4().hex
            fh.write(mark + "\n")
    except FileExistsError:
        try:
            text = path.read_text(encoding="ascii", errors="replace").strip()
            mark = text if len(text) == 32 and all(c in "0123456789abcdef" for c in text) else None
        except OSError:
            mark = None
    except OSError:
        mark = None
    return mark


def paid_here(usage: Any, mark: str | None) -> bool:
    """Was the cached answer whose `usage` (its cache entry's, `{"input_tokens", "output_tokens"[, "paid_by"]}`) this is
    paid for by the run `mark` names (`run_mark`)? False for an entry without the mark (cached before runs were named)."""
    return mark is not None and isinstance(usage, dict) and usage.get(PAID_BY) == mark


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
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
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
    single_flight_shared: int = 0
    requests_split: int = 0
    parts_reasked_alone: int = 0
    cache_errors: int = 0
    parse_failures: int = 0
    request_errors: int = 0
    truncated_replies: int = 0
    repair_input_tokens: int = 0
    repair_output_tokens: int = 0
    repair_cost_usd: float = 0.0
    usage_unknown_replies: int = 0  # answers without usage: tokens estimated, dollars unknown
    server_truncated_prompts: int = 0  # replies whose server counted far fewer prompt tokens than were sent (it cut them)
    server_cut_replies: int = 0  # replies cut (finish_reason length) by the server itself, under the max_tokens asked (`reply_notes.server_cut`)
    saved_usage_unknown: int = 0  # cache hits (and shared flights) of such answers: what they saved is unknown
    # Cache hits of answers this run paid for itself (a killed segment's, read back by the resume that redid their
    # cases): counted in `cache_hits`, never in `saved_tokens`/`saved_usd` (`paid_here`).
    hits_paid_by_this_run: int = 0
    latencies: list[float] = field(default_factory=list)
    cache_misses_explained: dict[str, int] = field(default_factory=dict)
    error_kinds: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The summary's `judge` block."""
        lat = sorted(self.latencies)

        def pct(p: float) -> float | None:
            return round(lat[min(len(lat) - 1, int(p * len(lat)))], 4) if lat else None

        rounded = ("latencies", "cost_usd", "saved_usd", "queued_s", "slept_s", "sync_equivalent_usd", "repair_cost_usd", "error_kinds")
        out = {k: v for k, v in self.__dict__.items() if k not in rounded}
        out.update(cost_usd=round(self.cost_usd, 6), saved_usd=round(self.saved_usd, 6), sync_equivalent_usd=round(self.sync_equivalent_usd, 6),
                   repair_cost_usd=round(self.repair_cost_usd, 6), error_kinds=dict(sorted(self.error_kinds.items())),
                   queued_s=round(self.queued_s, 3),
                   slept_s=round(self.slept_s, 3), latency_p50_s=pct(0.5), latency_p95_s=pct(0.95))
        return out
