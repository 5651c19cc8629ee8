"""Progress while a run goes: a rich bar on a terminal, periodic structlog lines otherwise.

Both take every new result through `update(result)` and show: results done
(of the expected total once it is known), rate, ETA, errors by kind, and,
when results carry judge provenance, judge tokens so far and the cache hit
rate. A judge stage can add live figures (requests in flight, dollars) with
`set_judge(**fields)`; they are shown as given.

With the run's `LiveStatus` attached (`attach`) and `tick()` called about
twice a second, they also say what a stalled run waits on (judge replies
pending, back-off before a retry, the rate limit) and, once a stop was asked
for, the cases in flight draining and the grace left before they are cut.

The bar is laid out for 80 columns: one line of fixed-width figures (count,
rate, elapsed, ETA, never squeezed) and the variable text on a line of its
own below, wrapped rather than cut.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, TextIO

from tracejudge.core.log import ROOT as LOG_ROOT

if TYPE_CHECKING:
    from rich.console import Console
    from tracejudge.engine.live import LiveStatus

__all__ = ["STALL_S", "LogProgress", "ProgressState", "RichProgress", "make_progress"]

# No new result for this many seconds: the display says what the run is waiting on.
STALL_S = 2.0


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
        self.live: LiveStatus | None = None
        self.t0 = self.last_result_at = time.monotonic()

    def add(self, result: Any) -> None:
        self.done += 1
        self.last_result_at = time.monotonic()
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
        """Seconds to go, when the total is known: at the rate seen so far, or at the rate limit's when that is slower.

        Under a rate limit the first results come fast (cache hits, the
        limiter's initial burst), so the rate seen so far promises too much;
        the limiter's admitted rate (`LiveStatus.pace`) is what the rest gets.
        """
        if self.total is None or self.done == 0:
            return None
        rate = self.rate
        pace = self.live.pace() if self.live is not None else None
        if pace is not None:
            rate = min(rate, pace)
        return max(self.total - self.done, 0) / max(rate, 1e-9)

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
        if self.stopping:
            grace = self.grace_left_s
            out.update(stopping=True, in_flight=self.live.finishing if self.live else 0, grace_left_s=None if grace is None else round(grace, 1))
            if self.live is not None and self.live.extracting:
                out["extracting_left_to_resume"] = self.live.extracting
        waiting = self.waiting_on()
        if waiting:
            out["waiting_on"] = waiting
        return out

    @property
    def stopping(self) -> bool:
        """True once a stop was asked for."""
        return self.live is not None and self.live.stopping

    @property
    def grace_left_s(self) -> float | None:
        """Seconds until cases in flight are cut, once a stop was asked for; else `None`."""
        return self.live.grace_left_s() if self.live is not None else None

    def waiting_on(self) -> list[str]:
        """What the run waits on, when no result came for `STALL_S` seconds (or it is stopping); else `[]`."""
        if self.live is None or (not self.stopping and time.monotonic() - self.last_result_at < STALL_S):
            return []
        return self.live.waiting_on()

    def status_text(self) -> str:
        """The line under the bar: stopping and waiting first, then errors and judge figures."""
        parts = []
        if self.stopping:
            grace = self.grace_left_s
            n = self.live.finishing if self.live else 0  # queued cases are dropped at once: count those a stop still finishes
            cases = f"{n} case{'' if n == 1 else 's'} in flight"
            if grace is None:
                parts.append(f"stopping: {cases}, finishing (Ctrl-C again to abort)")
            elif grace > 0:
                parts.append(f"stopping: {cases}, cut in {grace:.0f} s (Ctrl-C again to abort)")
            else:
                parts.append(f"stopping: grace over, {cases} being cut (redone on resume)")
        waiting = self.waiting_on()
        if waiting:
            parts.append("waiting on " + "; ".join(waiting))
        extra = self.extra_text()
        if extra:
            parts.append(extra)
        return "  ·  ".join(parts)

    def extra_text(self) -> str:
        parts = []
        if self.errors:
            parts.append("errors " + ", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())))
        if self.judge_calls:
            parts.append(f"judge {self.judge_in + self.judge_out:,} tok, cache {100 * self.judge_cached / self.judge_calls:.0f}%")
        for k, v in self.judge_live.items():
            parts.append(f"{k} {v}")
        return "  ".join(parts)


def _clock(seconds: float | None) -> str:
    # The ETA as H:MM:SS (our own estimate, see `ProgressState.eta_s`; rich's column would extrapolate early completions).
    if seconds is None:
        return "-:--:--"
    m, s = divmod(int(seconds + 0.5), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"


class RichProgress:
    """A transient rich progress bar on the console's terminal: the figures on one line, the status text below."""

    def __init__(self, console: Console, total: int | None = None) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        from rich.text import Text

        self.state = ProgressState(total)
        # Computed on the event loop (`_redraw`), drawn by rich's refresh thread: that thread never reads run state.
        self.status = ""
        owner = self

        class _Bar(Progress):
            def get_renderables(self):  # type: ignore[no-untyped-def]
                yield self.make_tasks_table(self.tasks)
                if owner.status:
                    yield Text(owner.status, overflow="fold")

        # Fixed-width figures (a 20-cell bar): "scoring ━━━ 197/200 12/s 0:00:15 ETA 0:00:01" fits 80 columns.
        self._p = _Bar(
            TextColumn("{task.description}"), BarColumn(bar_width=20), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"),
            console=console, transient=True,
        )
        self._task = self._p.add_task("scoring", total=total, rate="", eta=_clock(None))
        self._last = 0.0
        self._p.start()

    def attach(self, live: LiveStatus) -> None:
        """Show `live`'s figures (in flight, grace, what the run waits on) from now on."""
        self.state.live = live

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
            self._redraw()

    def tick(self) -> None:
        """Refresh the figures that change without a new result (a stall, a stop's grace)."""
        self._redraw()

    def _redraw(self) -> None:
        self.status = self.state.status_text()
        self._p.update(self._task, completed=self.state.done, rate=f"{self.state.rate:,.0f}/s", eta=_clock(self.state.eta_s),
                       description="stopping" if self.state.stopping else "scoring")

    def close(self, finished: bool = True) -> None:
        """Draw the last figures and take the bar off the screen (`finished` is for `LogProgress`)."""
        self._redraw()
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
        import structlog  # here: a run without progress lines (--no-progress, a terminal's bar) does not import it

        self._log = structlog.wrap_logger(
            structlog.PrintLogger(stream or sys.stderr),
            processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True), structlog.processors.JSONRenderer()],
            wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        )

    def set_total(self, total: int) -> None:
        self.state.total = total

    def set_judge(self, **fields: Any) -> None:
        self.state.judge_live.update(fields)

    def attach(self, live: LiveStatus) -> None:
        """Log `live`'s figures (in flight, grace, what the run waits on) from now on."""
        self.state.live = live

    def update(self, result: Any) -> None:
        self.state.add(result)
        self.tick()

    def tick(self) -> None:
        """Log a line if one is due: every `every_s` seconds, every second while stopping (the drain)."""
        now = time.monotonic()
        if now - self._last >= (min(self.every_s, 1.0) if self.state.stopping else self.every_s):
            self._last = now
            self._log.info("stopping" if self.state.stopping else "progress", **self.state.fields())

    def close(self, finished: bool = True) -> None:
        """Log the closing `progress_done` line; not when the run ended in an error before finishing (`finished=False`)."""
        if finished:
            self._log.info("progress_done", **self.state.fields())


def make_progress(console: Console, *, enabled: bool = True, total: int | None = None, every_s: float = 10.0) -> RichProgress | LogProgress | None:
    """A rich bar when `console` is a terminal, log lines otherwise; `None` when disabled.

    The log lines show at the default level (`warning`) and below, but not when tracejudge's
    logging is set above it (`--log-level error`): whoever asked for errors alone gets no
    progress lines either. The bar is a display, not log lines, and stays.
    """
    if not enabled:
        return None
    if console.is_terminal:
        return RichProgress(console, total)
    if logging.getLogger(LOG_ROOT).getEffectiveLevel() > logging.WARNING:
        return None
    return LogProgress(console.file, total, every_s)
