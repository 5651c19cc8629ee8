"""Grouped judging (`judge.group: case`): one request asks every judge metric's questions about one case.

The plans of a case's judge metrics that render the same fenced data
(`tracejudge.stages.judge.base.group_plans`: every trace metric does) become
one grouped plan (`grouped_plan`): the fenced trace once, then each metric's
instructions and its questions with ids such as `TC1` (`Plan.full_id`), answered as one
object of the shared answers schema. A Rubric (graded on a scale) and a
metric asked one question per request keep their own requests.

The grouped request goes through the same path as any request (`Judge.judge`:
the context fit, the cache, single flight, the budget, the limiter or the
batch API, one repair request when nothing in the reply parses), so it works
with all of them; with `items_per_request` > 1 grouped plans of several
cases share a request (`tracejudge.stages.judge.multi`). `split` then gives each
metric its own score, computed by the metric exactly as from a request of
its own (same score, reason and threshold):

- a metric whose answers are missing or malformed in the reply is re-asked
  alone, the others are kept (`parts_reasked_alone` counts the metrics asked alone with a request sent);
- a grouped request the provider refuses (a content filter's 400, a 500 that
  persisted) or whose reply was unusable even after the repair is re-asked
  metric by metric, so one metric's prompt cannot fail the others — after an
  unusable reply each metric is asked once, without a repair of its own (at
  most 2 + M requests for M metrics);
- a request error (the server refuses the request itself) is not re-asked:
  the run stops (`tracejudge.stages.judge.stage`);
- any other failure (budget, rate limit, timeout, a server down, overloaded or
  unreachable: a 502/503/504/529 or no connection, an error body or a page that
  is not a reply) is each metric's failure: no metric's part causes it, and
  asking each metric would only multiply the load on a server that cannot serve.

Each score's `details.group` says what happened: `metrics` (the group, in
order) and `position`, or `alone: true` with `why`. The summary's
`grouped_requests` counts the standing results whose grouped request the
judge answered, read from their `judge` blocks (`tracejudge.engine.journal_counts`),
so `details` say nothing of provenance and a cached re-run's equal a cold run's. Its `judge` block holds
its share of the grouped request's tokens and dollars (split evenly; the
first metric takes the remainder, and counts the request) plus, for a
metric re-asked alone, that request's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from tracejudge.core.records import JudgeInfo
from tracejudge.stages.judge.base import Plan
from tracejudge.stages.judge.calls.gate import OUTAGE_STATUSES
from tracejudge.stages.judge.calls.stats import share_usd, sum_usd

if TYPE_CHECKING:
    from tracejudge.stages.judge.client import Judge, Outcome

__all__ = ["add_info", "pass_note", "split"]


def _reasked(outcome: Outcome) -> bool:
    """Whether a failed grouped request is asked again metric by metric: when one metric's part may cause the failure
    (an unusable reply, a refusal of the request's content: a 4xx or a 500 that persisted). See the module doc."""
    if outcome.kind in ("parse_error", "truncated", "context_exceeded", "body_too_large"):  # (a metric's own prompt is shorter: it may fit)
        return True
    status = (outcome.score.details or {}).get("http_status")
    return outcome.kind == "provider_error" and isinstance(status, int) and 400 <= status < 600 and status not in OUTAGE_STATUSES


def pass_note(grouped: Plan, plans: list[Plan]) -> None:
    """The grouped request's note (what was left out to fit) added to each of its metrics' `plans`."""
    if grouped.note:
        for p in plans:
            p.note = (p.note + "; " if p.note else "") + grouped.note


def _share(info: JudgeInfo | None, n: int, pos: int) -> JudgeInfo | None:
    """Position `pos`'s share of the grouped request's `info` among `n` metrics."""
    if info is None:
        return None

    def part(v: int) -> int:
        return v // n + (v % n if pos == 0 else 0)

    # Requests are counted once (on the first metric), so spending rebuilt from results on a resume counts the
    # grouped request once, as the run did.
    return info.model_copy(update={"input_tokens": part(info.input_tokens), "output_tokens": part(info.output_tokens),
                                   "cached_input_tokens": part(info.cached_input_tokens), "cost_usd": share_usd(info.cost_usd, n),
                                   "requests": info.requests if pos == 0 else 0, "cached_requests": info.cached_requests if pos == 0 else 0})


def add_info(a: JudgeInfo | None, b: JudgeInfo | None) -> JudgeInfo | None:
    """`a` with `b`'s tokens, dollars and requests added (either may be missing): a score re-asked alone with its
    share of the shared request that did not answer it."""
    if a is None or b is None:
        return a or b
    return a.model_copy(update={"input_tokens": a.input_tokens + b.input_tokens, "output_tokens": a.output_tokens + b.output_tokens,
                                "cached_input_tokens": a.cached_input_tokens + b.cached_input_tokens,
                                "cost_usd": sum_usd((a.cost_usd, b.cost_usd)), "requests": a.requests + b.requests,
                                "cached_requests": a.cached_requests + b.cached_requests, "cached": a.cached and b.cached})


async def split(judge: Judge, plans: list[Plan], outcome: Outcome, trial: int, slots: list[str],
                alone: Callable[[Plan, int, str], Awaitable[Outcome]] | None = None) -> list[Outcome]:
    """Each metric's `Outcome` from the grouped request's `outcome` (one per plan of `plans`, in order).

    `alone(plan, trial, slot)` judges one metric by itself (default: `judge.judge`).
    """
    from tracejudge.stages.judge.client import Outcome

    # A grouped reply that did not parse even after its repair: each metric is asked alone once, with no second
    # repair round (a model that cannot answer the format would otherwise cost 2 + 2M requests per case).
    unparsed = outcome.status != "ok" and outcome.kind in ("parse_error", "truncated")
    ask = alone or (lambda plan, t, slot: judge.judge(plan, t, slot, False, repair=not unparsed))
    names = [type(p.metric).__name__ for p in plans]
    out: list[Outcome | None] = [None] * len(plans)
    why: dict[int, str] = {}
    score = outcome.score
    if outcome.status != "ok" or (score.details or {}).get("answers") is None:
        if outcome.status != "ok" and not _reasked(outcome):
            for i in range(len(plans)):
                s = score.model_copy(update={"details": {**(score.details or {}), "group": {"metrics": names, "position": i}},
                                             "judge": _share(score.judge, len(plans), i)})
                out[i] = Outcome(s, outcome.status, outcome.message, outcome.kind)
            return [o for o in out if o is not None]
        # Refused, unusable or too long as a whole: each metric on its own, so only a metric that causes it fails.
        problem = outcome.message or score.reason or ""
        if outcome.status == "ok" and (score.details or {}).get("too_long_tokens") is not None:
            judge.stats.too_long -= 1  # counted as a prompt whose scores are null: they are asked alone instead
            # (never sent, so not re-asked; and under `skip` a metric's own prompt may not fit either: its reason says so)
            why = {i: f"the grouped request does not fit the judge's context ({problem[:300]}); asked alone" for i in range(len(plans))}
        else:
            why = {i: f"the grouped request failed ({problem[:300]}); re-asked alone" for i in range(len(plans))}
    else:
        answers: dict[str, Any] = score.details["answers"]  # type: ignore[index]
        for i, plan in enumerate(plans):
            mine = {q.id: answers.get(plan.full_id(q)) for q in plan.questions}
            if any(a is None for a in mine.values()):
                why[i] = "re-asked alone: its answers were missing or malformed in the grouped reply"
                continue
            s = plan.metric.finalize(plan, mine)  # type: ignore[arg-type]
            s.details = {**(s.details or {}), "group": {"metrics": names, "position": i}}
            for key in ("batch", "calibration"):
                if key in (score.details or {}):
                    s.details[key] = score.details[key]  # type: ignore[index]
            s.judge = _share(score.judge, len(plans), i)
            out[i] = Outcome(s)
    if why:
        async def one(i: int) -> None:
            got = await ask(plans[i], trial, slots[i])
            # Counted when a request was sent for it (not when its own prompt was too long, or its budget refused it), as
            # the summary counts it from the results (`journal_counts._group_counts`).
            judge.stats.parts_reasked_alone += bool(got.score.judge and got.score.judge.requests > got.score.judge.cached_requests)
            got.score.details = {**(got.score.details or {}), "group": {"alone": True, "why": why[i], "metrics": names}}
            # Its share of the grouped request stays on its score: spending rebuilt from results misses nothing.
            got.score.judge = add_info(got.score.judge, _share(score.judge, len(plans), i))
            out[i] = got

        async with anyio.create_task_group() as tg:
            for i in why:
                tg.start_soon(one, i)
    return [o for o in out if o is not None]
