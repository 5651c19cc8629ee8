"""A case's judging in the judge stage, in parts: planned, settled from the cache a chunk at a time, concluded.

`tracejudge.stages.judge.stage` judges each case in three steps: `planned` (each
metric's plan, or its score when it needs no request), the asking, and
`conclude` (every score stored on the result, its status set). On a warm
re-run nearly every case is answered by the cache whole, and the asking is one
cache read: `settle_cached` takes the cases of a chunk through all three at
once, every request of theirs made ready in one trip
(`tracejudge.stages.judge.cached.from_cache_many`), instead of a task, a wait
and a trip a case. A case it does not settle keeps what was made for it
(`Planned`, its requests made ready), so the stage's usual way neither plans
nor renders nor reads it again.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from tracejudge.core.errors import describe
from tracejudge.core.records import ErrorInfo, Score, Status
from tracejudge.core.work import AGENT_ANSWERED, Work
from tracejudge.stages.judge.base import JudgeMetric, Plan
from tracejudge.stages.judge.cached import CaseAsk, fast_path, from_cache_many
from tracejudge.stages.judge.client import STOPS, Judge, Outcome
from tracejudge.stages.judge.judge_stats import JudgeTally
from tracejudge.stages.judge.panel import extra_body_digest, served_label, stamp
from tracejudge.stages.judge.repeat import combine_panel, combine_samples
from tracejudge.stages.judge.requests import group_keys

__all__ = ["PLANNED", "Planned", "Probing", "conclude", "grouping", "planned", "settle_cached", "slot"]

PLANNED = "judge_planned"
"""The `Work.scratch` key under which `settle_cached` hands the stage's usual way what it planned for a case."""

Passes = dict[tuple[int, int], dict[str, Outcome]]  # each (panel member, sample) pass's outcomes, by metric key


@dataclass
class Planned:
    """One case's judging as planned: the metrics it `use`s (by key in `by_key`), their `plans` (those that need a
    request), the `outcomes` known without one, the groups `found` (`requests.group_keys`; None: not looked for yet),
    the requests made ready (`readied`, as `cached.from_cache` fills it) and whether the cache was `tried` already."""

    use: list[JudgeMetric]
    by_key: dict[str, JudgeMetric]
    plans: dict[str, Plan] = field(default_factory=dict)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    found: list[list[str]] | None = None
    readied: dict[tuple[str, ...], list[Any]] = field(default_factory=dict)
    tried: bool = False

    def singles(self, cfg: Any) -> tuple[list[list[JudgeMetric]], list[JudgeMetric]]:
        """The metrics asked together (one list a grouped request) and those asked alone that need a request."""
        groups = [[self.by_key[k] for k in g] for g in self.found or []]
        grouped = {m.key for g in groups for m in g}
        return groups, [m for m in self.use if m.key in self.plans and m.key not in grouped]


class Probing:
    """Which chunks `settle_cached` tries: every chunk while the cache answers some of its cases; after a chunk it
    answered none of, the next 1, then 2, 4… up to `MAX_SKIP` chunks go the usual way untried (`take` says False), so a
    cold run's cases are not held back to be made ready a whole chunk at a time while the judge waits for work."""

    MAX_SKIP = 32

    def __init__(self) -> None:
        self._skip = 0  # chunks left to pass untried
        self._wait = 0  # chunks passed untried after the last chunk the cache answered none of

    def take(self) -> bool:
        """Whether to try the next chunk."""
        if self._skip:
            self._skip -= 1
            return False
        return True

    def saw(self, tried: int, settled: int) -> None:
        """A tried chunk's outcome: `tried` cases looked up, `settled` of them answered whole."""
        if settled:
            self._wait = 0
        elif tried:
            self._wait = min(max(1, 2 * self._wait), self.MAX_SKIP)
            self._skip = self._wait


def slot(case_id: str, trial: int, key: str) -> str:
    """A metric's slot in a case's trial, as `Judge.judge` and `grouped.split` name it."""
    return f"{case_id}|{key}|{trial}"


def planned(work: Work, use: list[JudgeMetric]) -> Planned:
    """Each metric of `use` planned for `work`'s case: its plan, or its score when it needs no request."""
    job = Planned(use, {m.key: m for m in use})
    for metric in use:
        try:
            plan = metric.plan(work.case)
        except Exception as exc:  # a metric bug costs one score, not the run
            job.outcomes[metric.key] = Outcome(Score(value=None, passed=None, reason=f"metric raised {describe(exc)}"))
            continue
        if isinstance(plan, Score):
            job.outcomes[metric.key] = Outcome(plan)
        else:
            job.plans[metric.key] = plan
    return job


def grouping(jobs: list[Planned], cfg: Any) -> None:
    """Set each job's groups `found`: those `case_requests` (estimate, bench) finds too. (A single plan has nothing to
    share a request with.) Renders each plan's fenced text: CPU work, which the callers do off the event loop."""
    for job in jobs:
        job.found = group_keys(job.plans, job.by_key, cfg) if len(job.plans) > 1 else []


def _member_urls(judges: list[tuple[str, Judge]]) -> dict[str, str]:
    """Each panel member's base URL (its password masked; the endpoint for a member without `base_url`), for naming a
    failing member (`repeat.combine_panel`)."""
    from tracejudge.llm.providers import public_url

    return {name: public_url(j.cfg.base_url or j.url) if (j.cfg.base_url or j.url) else "" for name, j in judges}


def conclude(work: Work, job: Planned, passes: Passes, judges: list[tuple[str, Judge]], cfg: Any, state: dict[str, Any],
             tally: JudgeTally) -> Outcome | None:
    """Store every metric's score on `work` from its `passes`' outcomes and set its status, counting in the stage's
    `state` (`results`, `errors`, `quota`) and `tally`; a run-stopping outcome (`STOPS`) is returned instead, no score
    stored."""
    outcomes, plans, by_key = job.outcomes, job.plans, job.by_key
    for key in plans:
        per_model = {name: combine_samples(by_key[key], [passes[(i, s)][key] for s in range(cfg.samples)], plans[key])
                     for i, (name, _) in enumerate(judges)}
        for o in per_model.values():
            tally.add_samples(key, o.score.details)
        outcomes[key] = next(iter(per_model.values())) if len(judges) == 1 else combine_panel(by_key[key], plans[key], per_model, cfg.aggregate,
                                                                                               _member_urls(judges))
        tally.add_panel(key, outcomes[key].score.details)
    fatal = next((o for o in outcomes.values() if o.kind in STOPS), None)
    if fatal is not None:
        return fatal
    if "extra_body" not in state:  # (once a stage: a long value is masked and hashed once, not once a case)
        state["extra_body"] = extra_body_digest(cfg, judges)
    served = served_label(judges)  # (each case: the server may come back from an outage on other weights)
    for metric in job.use:
        work.result.scores[metric.key] = stamp(outcomes[metric.key].score, metric, cfg, state["extra_body"], served)
    bad = [o for o in outcomes.values() if o.status != "ok"]
    state["results"] += 1
    skipped = [o for o in bad if o.status == "skipped_budget"]
    quota = next((o for o in bad if o.status == "rate_limited"), None)
    if quota is not None:
        state["quota"] = state["quota"] or (f"not judged: the judge provider's quota is spent ({quota.message[:200]}); "
                                            "resume the run (its config and run directory) once the quota resets to judge the rest")
        work.result.status = Status.rate_limited
        work.result.error = ErrorInfo(kind="rate_limited", message=quota.message)
    elif skipped:
        work.result.status = Status.skipped_budget
        work.result.error = ErrorInfo(kind="skipped_budget", message=skipped[0].message)
    elif bad:
        state["errors"] += 1
        work.result.status = Status.judge_error
        work.result.error = ErrorInfo(kind=bad[0].kind or bad[0].status, message=bad[0].message)
    return None


async def settle_cached(works: list[Work], judges: list[tuple[str, Judge]], cfg: Any, reused: bool,
                        use_of: Callable[[Work], list[JudgeMetric]], finish: Callable[[Work, Planned, Passes], Awaitable[None]],
                        probing: Probing | None = None) -> list[Work]:
    """Judge at once the works of `works` the cache answers whole (`finish(work, job, passes)` concludes each, as the
    stage's usual way does); return the others, each with its `Planned` in `scratch[PLANNED]`.

    Only a case the usual way would take the cache's one-step path for (`cached.fast_path`) is tried; a failed work
    and one a live agent answered are returned as they are. `use_of(work)` gives a case's judge metrics; `reused`
    says a case is asked again (more trials), as `cached.from_cache` takes it. With `probing`, a chunk it says not to
    try is returned whole, untouched, and each tried chunk's outcome is told to it.
    """
    if probing is not None and not probing.take():
        return works
    settled: set[int] = set()  # (by `id`) the works finished here, or with no judge metric: nothing to do for them
    jobs: list[tuple[Work, Planned]] = []
    for work in works:
        if work.failed or work.scratch.get(AGENT_ANSWERED):
            continue  # passed through, or judged as a paid case is
        if use := use_of(work):
            jobs.append((work, planned(work, use)))
        else:
            settled.add(id(work))
    several = [job for _, job in jobs if len(job.plans) > 1]
    if several:
        await anyio.to_thread.run_sync(grouping, several, cfg, abandon_on_cancel=True)
    asks: list[tuple[Work, Planned, CaseAsk]] = []
    for work, job in jobs:
        job.found = job.found or []
        groups, singles = job.singles(cfg)
        if fast_path(cfg, len(judges), singles, bool(groups)):
            asks.append((work, job, CaseAsk(job.plans, job.by_key, job.found, work.trial, functools.partial(slot, work.case.id, work.trial),
                                            job.readied)))
        else:
            work.scratch[PLANNED] = job
    hits = 0
    got = await from_cache_many(judges[0][1], [a for _, _, a in asks], cfg, reused) if asks else []
    for (work, job, _), cached in zip(asks, got, strict=True):
        job.tried = True
        if cached is None:
            work.scratch[PLANNED] = job
        else:
            await finish(work, job, {(0, 0): cached})
            settled.add(id(work))
            hits += 1
    if probing is not None:
        probing.saw(len(asks), hits)
    return [w for w in works if id(w) not in settled]
