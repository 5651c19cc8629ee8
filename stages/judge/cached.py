"""A case the judge cache answers whole, judged in one step.

On a warm re-run every request of a case is a cache hit, and the way a case is
usually judged — a cut-off guard per case (`judge.stop_grace_s`), a task per
metric and per request, a wait per request for its cache read — cost several
times the work itself (rendering, keying, reading). `from_cache` makes every
request of the case ready in one trip (`tracejudge.stages.judge.prepare`)
and, when each one is a hit, gives each metric the outcome the usual way
gives: `Judge.judge`'s for a metric asked alone, `grouped.split`'s for the
metrics of a grouped request — the same answers, scores, notes and counts.
When any request is not a hit (a miss, a prompt too long, a rendering error)
or a grouped answer lacks a metric's answers (`split` would ask it again),
nothing is counted and the case is judged the usual way. `from_cache_many` does
this for the cases of a chunk, every request of them made ready in one trip
(the stage's `settle`, `tracejudge.stages.judge.settling`).

Only the plain path takes this step (`fast_path`): one judge, one sample, no
calibration, and no items batched across cases (`judge.items_per_request`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.stages.judge.base import JudgeMetric, Plan, grouped_plan
from tracejudge.stages.judge.client import Judge, Outcome, question_groups
from tracejudge.stages.judge.grouped import pass_note, split
from tracejudge.stages.judge.requests import per_question

__all__ = ["CaseAsk", "fast_path", "from_cache", "from_cache_many"]


def fast_path(cfg: Any, judges: int, singles: Sequence[JudgeMetric], grouped: bool) -> bool:
    """Whether a case whose metrics `singles` are asked on their own (`grouped`: others share a request) is judged by
    `Judge.judge` and `split` alone, the path `from_cache` stands in for: one judge (`judges`), one sample, no
    calibration, and no request whose items are batched across cases (`judge.items_per_request` > 1, except for a
    metric asking each question alone)."""
    return (judges == 1 and cfg.samples == 1 and cfg.calibration is None
            and (cfg.items_per_request == 1 or (not grouped and all(per_question(m, cfg) for m in singles))))


@dataclass
class _Asks:
    """One case's requests, as `from_cache` makes them ready: the plans' copies, the metrics asked alone with their
    question groups, and the grouped plans."""

    mine: dict[str, Plan]
    alone: dict[str, list[list[Any]]]
    joint: list[Plan]
    groups: list[list[str]]
    asks: list[tuple[Plan, list[Any], int]]


def _asks(plans: dict[str, Plan], metrics: dict[str, JudgeMetric], groups: list[list[str]], cfg: Any, trial: int, reused: bool) -> _Asks:
    mine = {k: p.copy() for k, p in plans.items()}
    in_group = {k for g in groups for k in g}
    alone = {k: question_groups(p, per_question(metrics[k], cfg)) for k, p in mine.items() if k not in in_group}
    joint = [grouped_plan([mine[k] for k in g], reused=reused) for g in groups]
    asks = [(mine[k], qs, trial) for k, gs in alone.items() for qs in gs] + [(gp, gp.questions, trial) for gp in joint]
    return _Asks(mine, alone, joint, groups, asks)


async def _answered(judge: Judge, case: _Asks, ready: list[Any], trial: int, slot_of: Callable[[str], str],
                    readied: dict[tuple[str, ...], list[Any]]) -> dict[str, Outcome] | None:
    # `from_cache` once `case`'s requests are made ready (`ready`, in the order of `case.asks`).
    alone, joint, groups, mine = case.alone, case.joint, case.groups, case.mine
    at = 0
    for k, gs in alone.items():
        readied[(k,)] = ready[at:at + len(gs)]
        at += len(gs)
    readied.update((tuple(g), [r]) for g, r in zip(groups, ready[at:], strict=True))
    if not all(judge.is_hit(r) for r in ready):
        return None
    at = len(ready) - len(joint)
    for gp, r in zip(joint, ready[at:], strict=True):
        answers = r.hit["answers"] if not isinstance(r, Exception) and r.hit is not None else {}
        if any(answers.get(q.id) is None for q in gp.questions):  # `split` would ask a metric again: the usual way
            return None
    out: dict[str, Outcome] = {}
    at = 0
    for k, gs in alone.items():
        out[k] = judge.from_cache(mine[k], ready[at:at + len(gs)])
        at += len(gs)
    for keys, gp, r in zip(groups, joint, ready[at:], strict=True):
        done = judge.from_cache(gp, [r])
        members = [mine[k] for k in keys]
        pass_note(gp, members)
        # Every metric's answers are in the reply (checked above): `split` asks nothing, it only scores each metric.
        out.update(zip(keys, await split(judge, members, done, trial, [slot_of(k) for k in keys]), strict=True))
    return out


async def from_cache(judge: Judge, plans: dict[str, Plan], metrics: dict[str, JudgeMetric], groups: list[list[str]], cfg: Any, trial: int,
                     reused: bool, slot_of: Callable[[str], str], readied: dict[tuple[str, ...], list[Any]]) -> dict[str, Outcome] | None:
    """Each plan's outcome by metric key when the cache answers every request of the case, else `None` (nothing counted),
    with each request made ready put in `readied` for the usual way to use (`Judge.judge`'s `ready`): by `(key,)` for a
    metric asked alone, by the group's keys for a grouped request.

    `plans` by metric key (those that need a request); `metrics` by key; `groups` the keys asked together
    (`requests.group_keys`), each as one grouped request (`grouped_plan`, its trace `reused`: see there); the others
    each as `Judge.judge` asks them. `slot_of(key)` is a metric's slot (for `split`). `plans` are not changed: notes go
    on copies, as the stage's own pass makes them.
    """
    return (await from_cache_many(judge, [CaseAsk(plans, metrics, groups, trial, slot_of, readied)], cfg, reused))[0]


@dataclass
class CaseAsk:
    """What `from_cache` takes about one case (see there): `plans`, `metrics`, `groups`, `trial`, `slot_of`, and
    `readied`, filled in."""

    plans: dict[str, Plan]
    metrics: dict[str, JudgeMetric]
    groups: list[list[str]]
    trial: int
    slot_of: Callable[[str], str]
    readied: dict[tuple[str, ...], list[Any]] = field(default_factory=dict)


async def from_cache_many(judge: Judge, cases: list[CaseAsk], cfg: Any, reused: bool) -> list[dict[str, Outcome] | None]:
    """`from_cache` of each of `cases`, every request of them made ready in one trip (`Judge.prepare_many`): the same
    outcomes, notes and counts as one `from_cache` a case, in order."""
    made = [_asks(c.plans, c.metrics, c.groups, cfg, c.trial, reused) for c in cases]
    ready = await judge.prepare_many([a for m in made for a in m.asks])
    out: list[dict[str, Outcome] | None] = []
    at = 0
    for c, m in zip(cases, made, strict=True):
        n = len(m.asks)
        out.append(await _answered(judge, m, ready[at:at + n], c.trial, c.slot_of, c.readied))
        at += n
    return out
