"""The unit that flows between stages: one (case, trial) and its result so far."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tracejudge.core.records import Case, CaseResult, Status

__all__ = ["AGENT_ANSWERED", "AGENT_SECRETS", "AGENT_TRACE", "Stage", "Work"]

AGENT_ANSWERED = "agent_answered"
"""A `Work.scratch` key the target stage sets once a live agent was called for the work: a stop lets such work
finish (scored, judged within the grace, written), since redoing it on resume would pay the agent call again."""

AGENT_TRACE = "agent_trace"
"""A `Work.scratch` key the target stage sets to the trace as the live agent produced it when the case's trace is a
masked copy (`stages.target.scrub`): the score stage scores it; the judge's prompt and every file see the copy."""

AGENT_SECRETS = "agent_secrets"
"""A `Work.scratch` key set beside `AGENT_TRACE`: the secret values the copy was masked of (`${NAME}` values, as they are
and JSON-escaped). The scores of the unmasked trace quote it, so the score stage masks those values in their reasons
and details before anything is written."""


@dataclass(slots=True)
class Work:
    """One (case, trial) in flight.

    `result` is filled in as stages run; once its status is not `ok`, later
    stages pass the work through untouched. `scratch` is per-work state a
    stage hands to a later one (e.g. a live trace before extraction).
    `started` is when its record's chunk began to be read (`time.perf_counter()`); `ended`, for a work finished
    before any stage (a record refused when admitted), when that was: its `duration_s` ends there, not where it
    was written, behind the slower cases of its chunk (None: it ends when written).
    """

    case: Case
    trial: int
    result: CaseResult
    started: float
    scratch: dict[str, Any] = field(default_factory=dict)
    ended: float | None = None

    @property
    def failed(self) -> bool:
        """True once a stage gave the work a non-`ok` status."""
        return self.result.status is not Status.ok


@dataclass(frozen=True)
class Stage:
    """A pipeline stage between extract and aggregate.

    `process(work)` mutates `work` in place (adds scores, sets an error
    status). It runs in `workers` concurrent tasks. `aclose()` (optional) is
    awaited after the last work passed, for sessions and flushes.
    `summary()` (optional) returns the stage's block for `summary.json`
    (stored under the stage's name).
    `usage()` (optional) returns the stage's additive counters since it was
    built (`{"requests": 12, "input_tokens": 3400, "cost_usd": 0.01, ...}`);
    the run records them per segment and sums them across restarts (a stage
    named `judge` fills the summary's `judge` block). `io` says its work
    waits on the network: it is fed single items whatever its `workers`,
    so each result moves on as soon as it is done. `activity()` (optional)
    says in a few words what the stage is waiting on right now (retries,
    back-off, slow replies), or `None`: shown when the progress bar stalls.
    `pace()` (optional) gives the results per second the stage's rate limit
    admits at most, or `None` while unknown: the progress ETA uses it.
    `settle(works)` (optional) finishes at once, in one step for a chunk, the
    works that need no waiting (a judge's cache hits) and returns the others,
    which `process` then takes one at a time: a stage with it is fed chunks.
    It settles a work exactly as `process` would (the same result).
    """

    name: str
    process: Callable[[Work], Awaitable[None]]
    workers: int = 1
    aclose: Callable[[], Awaitable[None]] | None = None
    summary: Callable[[], dict[str, Any]] | None = None
    usage: Callable[[], dict[str, float]] | None = None
    io: bool = False
    activity: Callable[[], str | None] | None = None
    pace: Callable[[], float | None] | None = None
    settle: Callable[[list[Work]], Awaitable[list[Work]]] | None = None
