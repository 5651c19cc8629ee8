"""Progress while a run goes: a rich bar on a terminal, periodic structlog lines otherwise.

Both take every new result through `update(result)` and show: results done
(of the expected total once it is known), rate, ETA, errors by kind, and,
when results carry judge provenance, judge tokens so far and the cache hit
rate. A judge stage can add live figures (requests in flight, dollars) with
`set_judge(**fields)`; they are shown as given.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from typing import Any, TextIO

import structlog
from rich.console import Console

__all__ = ["LogProgress", "ProgressState", "RichProgress", "make_progress"]


class ProgressState:
    """Counts behind both displays. Times are `time.monotonic()` seconds."""

    def __init__(self, total: int | None = None) -> None:
        self.total = total
        self.done = 0
        self.errors: Counter[str] = Counter()
        self.judge_in = 0
        self.judge_out = 0
        self.judge_calls = 0
        self.judge_cached = 0
        self.judge_live: dict[str, Any] = {}
        self.t0 = time.monotonic()

    def add(self, result: Any) -> None:
        self.done += 1
        status = getattr(result.status, "value", str(result.status))
        if status != "ok":
            self.errors[status] += 1
        for score in result.scores.values():
            j = getattr(score, "judge", None)
            if j is not None:
                self.judge_calls += 1
                self.judge_cached += bool(j.cached)
                self.judge_in += j.input_tokens
                self.judge_out += j.output_tokens

    @property
    def rate(self) -> float:
        """Results per second since the start."""
        return self.done / max(time.monotonic() - self.t0, 1e-9)

    @property
    def eta_s(self) -> float | None:
        """Seconds to go at the current rate, when the total is known."""
        if self.total is None or self.done == 0:
            return None
        return max(self.total - self.done, 0) / max(self.rate, 1e-9)

    def fields(self) -> dict[str, Any]:
        """The figures as flat key/values (the log line's fields)."""
        out: dict[str, Any] = {"done": self.done, "rate_per_s": round(self.rate, 1)}
        if self.total is not None:
            out["total"] = self.total
            eta = self.eta_s
            out["eta_s"] = None if eta is None else round(eta, 1)
        if self.errors:
            out["errors"] = dict(sorted(self.errors.items()))
        if self.judge_calls:
            out["judge_tokens"] = self.judge_in + self.judge_out
            out["judge_cache_hit_rate"] = round(self.judge_cached / self.judge_calls, 3)
        out.update(self.judge_live)
        return out

    def extra_text(self) -> str:
        parts = []
        if self.errors:
            parts.append("errors " + ", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())))
        if self.judge_calls:
            parts.append(f"judge {self.judge_in + self.judge_out:,} tok, cache {100 * self.judge_cached / self.judge_calls:.0f}%")
        for k, v in self.judge_live.items():
            parts.append(f"{k} {v}")
        return "  ".join(parts)


class RichProgress:
    """A transient rich progress bar on the console's terminal."""

    def __init__(self, console: Console, total: int | None = None) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.state = ProgressState(total)
        self._p = Progress(
            TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[extra]}"),
            console=console, transient=True,
        )
        self._task = self._p.add_task("run", total=total, rate="", extra="")
        self._last = 0.0
        self._p.start()

    def set_total(self, total: int) -> None:
        self.state.total = total
        self._p.update(self._task, total=total)

    def set_judge(self, **fields: Any) -> None:
        self.state.judge_live.update(fields)

    def update(self, result: Any) -> None:
        self.state.add(result)
        now = time.monotonic()
        if now - self._last >= 0.1:  # redraw at most 10 times a second, however fast results come
            self._last = now
            self._p.update(self._task, completed=self.state.done, rate=f"{self.state.rate:,.0f}/s", extra=self.state.extra_text())

    def close(self) -> None:
        self._p.update(self._task, completed=self.state.done, rate=f"{self.state.rate:,.0f}/s", extra=self.state.extra_text())
        self._p.refresh()
        self._p.stop()


class LogProgress:
    """Plain structlog lines (JSON) every `every_s` seconds, and one at the end.

    Uses its own structlog logger writing to `stream`, so the lines appear
    whatever the CLI's log level is (progress is not a warning, but a
    non-terminal user still wants to see it).
    """

    def __init__(self, stream: TextIO | None = None, total: int | None = None, every_s: float = 10.0) -> None:
        self.state = ProgressState(total)
        self.every_s = every_s
        self._last = time.monotonic()
        self._log = structlog.wrap_logger(
            structlog.PrintLogger(stream or sys.stderr),
            processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True), structlog.processors.JSONRenderer()],
            wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        )

    def set_total(self, total: int) -> None:
        self.state.total = total

    def set_judge(self, **fields: Any) -> None:
        self.state.judge_live.update(fields)

    def update(self, result: Any) -> None:
        self.state.add(result)
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self._log.info("progress", **self.state.fields())

    def close(self) -> None:
        self._log.info("progress_done", **self.state.fields())


def make_progress(console: Console, *, enabled: bool = True, total: int | None = None, every_s: float = 10.0) -> RichProgress | LogProgress | None:
    """A rich bar when `console` is a terminal, log lines otherwise; `None` when disabled."""
    if not enabled:
        return None
    if console.is_terminal:
        return RichProgress(console, total)
    return LogProgress(console.file, total, every_s)
