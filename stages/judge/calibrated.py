"""The judge stage's calibration asks (`judge.calibration`): a sampled item judged alone as well as batched, and
rendered in full (`trace_format: full`) when that differs from the compact rendering; the verdicts are compared
(`tracejudge.stages.judge.calibration.Calibration`) and the comparison noted on the kept score."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from tracejudge.core.errors import describe, text_of
from tracejudge.core.records import Case, Score
from tracejudge.stages.judge.base import JudgeMetric, Plan
from tracejudge.stages.judge.calibration import Calibration
from tracejudge.stages.judge.client import Judge, Outcome

__all__ = ["calibrate", "full_plan", "full_render", "record_render", "with_full"]


def full_plan(metric: JudgeMetric, case: Case, plan: Plan) -> Plan | None:
    """The plan of `case` rendered uncut (`trace_format: full`) that calibration asks besides `plan`, its compact one; `None`
    when nothing is asked (the metric renders in full already, a grouped plan, no request needed, or both renderings the
    same). Raises what the metric's `plan` raises. (`tracejudge estimate` counts the requests it gives.)"""
    if metric.trace_format == "full" or plan.parts:
        return None
    full = metric.model_copy(update={"trace_format": "full"}).plan(case)
    return None if isinstance(full, Score) or full.render(0) == plan.render(0) else full


async def full_render(judge: Judge, metric: JudgeMetric, case: Case, plan: Plan, trial: int, slot: str, per_q: bool) -> Outcome | None:
    """The item rendered uncut (`trace_format: full`) and judged alone; `None`, with no request, when both renderings are the same."""
    if metric.trace_format == "full" or plan.parts:
        return None
    try:  # rendering a long trace takes a while: off the event loop
        full = await anyio.to_thread.run_sync(full_plan, metric, case, plan, abandon_on_cancel=True)
    except Exception as exc:  # a metric bug costs the comparison, not the score
        return Outcome(Score(value=None, passed=None, reason=f"metric raised {describe(exc)}"), "judge_error", text_of(exc), "metric_error")
    return None if full is None else await judge.judge(full, trial, slot + "|full", per_q)


async def with_full(judge: Judge, metric: JudgeMetric, case: Case, plan: Plan, trial: int, slot: str, per_q: bool,
                    compact: Callable[[], Awaitable[Outcome]]) -> tuple[Outcome, Outcome | None]:
    """`compact()`'s outcome and, asked at the same time, the full rendering's (`full_render`)."""
    got: dict[str, Outcome | None] = {}

    async def full() -> None:
        got["full"] = await full_render(judge, metric, case, plan, trial, slot, per_q)

    async with anyio.create_task_group() as tg:
        tg.start_soon(full)
        kept = await compact()
    return kept, got["full"]


def record_render(calibration: Calibration, metric: JudgeMetric, plan: Plan, kept: Outcome, compact: Outcome, full: Outcome | None) -> None:
    """Compare the `compact` and `full` renderings' verdicts (`Calibration.add_render`) and note what was found on `kept`'s details."""
    found = calibration.add_render(metric.key, compact, full, len(plan.questions))
    if found is not None:
        d = kept.score.details or {}
        kept.score.details = {**d, "calibration": {**(d.get("calibration") or {}), "full_render": found}}


async def calibrate(calibration: Calibration, batched: Callable[[Judge, JudgeMetric, Plan, int, str], Awaitable[Outcome]], judge: Judge,
                    metric: JudgeMetric, case: Case, plan: Plan, trial: int, slot: str) -> Outcome:
    """The batched verdict of a sampled item (`batched`), with the item also judged alone and in full at the same time:
    the batched one is the score, the alone one is compared with it and with the full rendering's."""
    got: dict[str, Any] = {}

    async def alone() -> None:
        got["alone"], got["full"] = await with_full(judge, metric, case, plan, trial, slot, False,
                                                    lambda: judge.judge(plan, trial, slot + "|alone", False))

    async with anyio.create_task_group() as tg:
        tg.start_soon(alone)
        got["batched"] = await batched(judge, metric, plan, trial, slot)
    compare = calibration.add(metric.key, got["batched"], got["alone"])
    if compare is not None:
        b = got["batched"].score
        b.details = {**(b.details or {}), "calibration": compare}
    record_render(calibration, metric, plan, got["batched"], got["alone"], got["full"])
    return got["batched"]
