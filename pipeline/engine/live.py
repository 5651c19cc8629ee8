"""What a run is doing right now, for a progress display: cases in flight, a stop's grace, what it waits on.

The runner keeps `in_flight` (cases admitted past extract and not yet
written or dropped) and registers each stage's `activity` probe; the CLI
marks the moment a stop was asked for. A display polls `snapshot()` from the
event loop. Nothing here changes what a run does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LiveStatus"]


@dataclass
class LiveStatus:
    """Live figures of one run.

    `in_flight`: cases between admission and the run directory (count), queued
    between stages included. `working`: those of them in a stage's hands right
    now (a reply awaited, a retry in back-off): what a stop waits for, since
    queued ones are dropped at once. `writing`: those past every stage (past
    extract and scoring when no stage follows), on their way to the run
    directory: a stop writes them all. `extracting`: raw records in chunks the CPU
    executor is extracting and scoring (in worker processes, or in-process),
    not yet admitted; on a stop they are not admitted (the resume redoes them),
    and the run waits for them at most the executor's grace. `paces`: callables giving the results per
    second a stage's rate limit admits at most (`None` while unknown).
    `grace_s`: seconds work in flight gets after a stop before it is cut
    (the judge's `judge.stop_grace_s` when the run judges, else the CPU
    executor's grace); `None` when a live target's cases run on until they
    finish or reach `target.timeout_s`. `probes`: callables returning a short phrase saying
    what a stage is waiting on (`"judge: 3 replies pending (slowest 25 s)"`),
    or `None` when it waits on nothing. `settled`: results already final when the run opened its directory (a
    resume skips them; provisional ones it redoes are not among them), `None` until known. Times are
    `time.monotonic()` seconds.
    """

    in_flight: int = 0
    working: int = 0
    writing: int = 0
    extracting: int = 0
    grace_s: float | None = 0.0
    stop_at: float | None = None
    settled: int | None = None
    probes: list[Callable[[], str | None]] = field(default_factory=list)
    paces: list[Callable[[], float | None]] = field(default_factory=list)

    def pace(self) -> float | None:
        """Results per second the slowest rate-limited stage admits, or `None` when no limit is known (a failing callable counts as unknown)."""
        known = [v for v in _ask(self.paces) if v is not None and v > 0]
        return min(known) if known else None

    @property
    def finishing(self) -> int:
        """Cases a stop still finishes: those in a stage's hands (`working`) and those on their way to be written (`writing`)."""
        return self.working + self.writing

    def mark_stop(self) -> None:
        """Record that a stop was asked for now (the first Ctrl-C / SIGTERM)."""
        if self.stop_at is None:
            self.stop_at = time.monotonic()

    @property
    def stopping(self) -> bool:
        """True once a stop was asked for."""
        return self.stop_at is not None

    def grace_left_s(self) -> float | None:
        """Seconds until work still in flight is cut; `None` when no stop was asked for or no grace applies."""
        if self.stop_at is None or self.grace_s is None:
            return None
        return max(0.0, self.grace_s - (time.monotonic() - self.stop_at))

    def stop_text(self) -> str:
        """What a stop waits for and what it leaves, as the stop message says it.

        E.g. "the 3 in flight get 1 s to finish (256 records still being extracted are left to the resume)".
        """
        within = f"get {self.grace_s:g} s to finish" if self.grace_s is not None else "finish (each within target.timeout_s)"
        text = f"the {self.finishing} in flight {within}"
        if self.extracting:
            n = self.extracting
            text += f" ({n} record{'' if n == 1 else 's'} still being extracted {'is' if n == 1 else 'are'} left to the resume)"
        return text

    def waiting_on(self) -> list[str]:
        """What the stages are waiting on, one phrase each (a probe that fails says nothing)."""
        return [phrase for phrase in _ask(self.probes) if phrase]


def _ask(callables: list[Callable[[], Any]]) -> list[Any]:
    # Each callable's answer; one that fails answers None (a display must never break a run).
    out = []
    for ask in callables:
        try:
            out.append(ask())
        except Exception:
            out.append(None)
    return out
