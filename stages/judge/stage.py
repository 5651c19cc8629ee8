"""Stage `judge`: run the LLM-judge metrics of each case.

One `Judge` per run — one aiohttp session, one limiter, one budget, one
cache, the last three received (`JudgeResources`) — shared by `judge.workers` concurrent tasks (default twice the
in-flight cap, so the admission gate always has work queued). With
`provider: simulator` the stage starts the judge simulator on 127.0.0.1
itself and stops it at the end.

How a case ends: every metric's score is stored; the case's status is
`skipped_budget` when some request was not sent for the budget (a resumed
run with a larger budget finishes it), else `judge_error` when some metric
got no usable verdict (the error's `kind` says why: `parse_error`,
`truncated`, `timeout`, `rate_limited`, `provider_error`), else unchanged.
A daily-quota reply (a `retry-after` beyond `judge.max_retry_after_s`, or
`insufficient_quota`) ends its case `rate_limited`, and from then on no new
judge request is sent: every later case ends `rate_limited` at once (with
the resume hint) instead of burning through the rest of the data.
A 401/403 (`auth_error`) stops the run at once with `JudgeAuthError`
(exit 2): the case that met it and every case still in flight are not
written, so nothing unjudged is marked final. A request the server refuses
as such (`request_error`: a 4xx, or a 5xx naming `response_format`…; not a
prompt over the server's context, that case's `context_exceeded`) stops it the same way with `JudgeRequestError` (exit 2),
one line naming the server's message and the setting to change; and a judge
that cannot be reached, or never replies, while nothing of the run was ever answered
(`unreachable`) with `JudgeUnreachable` naming the URL (exit 3). None of them
is written, so a resume (with the config fixed) judges those cases again.

`parse_failure_rate` in the summary is per item: the share of judged
metric scores (one metric on one case and trial) that ended without a usable
verdict (`parse_error`, `truncated`), whatever the number of attempts; it is
counted from the results (`tracejudge.engine.checkpoint`), so a kill cannot skew it.

With `judge.items_per_request` N > 1, each metric's items are gathered
across cases by one `Batcher` per (metric, trial) — at most N per request,
flushed after `judge.item_wait_s` — and judged by `tracejudge.stages.judge.multi`;
each case still gets its own score and status. With `judge.calibration`,
a sample of items is also judged alone, and rendered in full (`trace_format: full`) when
that differs from the compact rendering (`tracejudge.stages.judge.calibration`). With
`judge.mode: batch`, requests go through the provider's batch API
(`tracejudge.stages.judge.batch_runner`), journaled in `RUN_DIR/batches.jsonl`, and
the stage runs `BATCH_WORKERS` cases at once unless `judge.workers` says.

With `judge.samples` N or a panel (`judge.models`), each case is judged in
one pass per (model, sample), all at once, each pass with its own copies of
the plans; the passes' outcomes are combined per metric
(`tracejudge.stages.judge.repeat`) and tallied for the summary's
`judge.samples` and `judge.panel` blocks (`tracejudge.stages.judge.judge_stats`).
Each score records its judge (`stamp`): model, prompt version, structured-output mode.

The stage is fed chunks: the cases of a chunk the cache answers whole are
judged at once (`settle`, `tracejudge.stages.judge.settling`), the others one
by one by `process`, as `judge.workers` concurrent tasks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from tracejudge.core.config import RunConfig
from tracejudge.core.records import ErrorInfo, Status
from tracejudge.core.work import AGENT_ANSWERED, Stage, Work
from tracejudge.llm.judge_tokenizer import check_tokenizer, spec_of
from tracejudge.llm.prices import price_for
from tracejudge.llm.spend_journal import SpendJournal
from tracejudge.stages.judge.base import JudgeMetric, Plan, grouped_plan
from tracejudge.stages.judge.batcher import Batcher
from tracejudge.stages.judge.cached import fast_path, from_cache
from tracejudge.stages.judge.calibrated import calibrate, record_render, with_full
from tracejudge.stages.judge.calibration import Calibration
from tracejudge.stages.judge.calls.sending import paid_case
from tracejudge.stages.judge.client import Judge, JudgeStopped, Outcome
from tracejudge.stages.judge.grouped import pass_note, split
from tracejudge.stages.judge.judge_stats import JudgeTally
from tracejudge.stages.judge.multi import Item, judge_items
from tracejudge.stages.judge.panel import make_judges, panel_members, simulator_cache_name
from tracejudge.stages.judge.repeat import sample_trial
from tracejudge.stages.judge.requests import per_question, trace_reused
from tracejudge.stages.judge.resources import JudgeResources, api_key, local_resources
from tracejudge.stages.judge.settling import PLANNED, Planned, Probing, conclude, grouping, planned, settle_cached, slot
from tracejudge.stages.judge.stage_summary import _ADDITIVE, judge_summary, priced_prior, segment_telemetry  # noqa: F401 - `_ADDITIVE` is read here by `engine.shards`
from tracejudge.stages.judge.stopping import _stopping, _within_grace

__all__ = ["BATCH_WORKERS", "JudgeResources", "api_key", "judge_stage", "local_resources"]

BATCH_WORKERS = 2048

def judge_stage(config: RunConfig, metrics: Sequence[JudgeMetric], merge: Callable[[Sequence[Any], list[dict[str, Any]]], Sequence[Any]],
                prior: dict[str, Any] | None = None, run_dir: Path | None = None, stop: anyio.Event | None = None,
                resources: Callable[[RunConfig, dict[str, Any]], JudgeResources] | None = None) -> Stage:
    """The `judge` stage for `metrics` (the run's judge metrics; cases may add their own through `merge`).

    `prior` is the `judge` block of an earlier segment of the same run: its
    spending counts against the budget and its counters are carried on.
    `run_dir` is where batch mode journals its batches (`batches.jsonl`);
    without it a killed batch run cannot re-attach. Once `stop` is set,
    cases still being judged `judge.stop_grace_s` later are cut and marked
    `work.scratch["unfinished"]` (the runner does not write them).
    `resources(config, prior)` gives the limiter, budget and cache, called once
    when the first case arrives (default: in-process ones, `local_resources`).
    Raises `ConfigError` when the API key variable is unset.
    """
    from tracejudge.core.config import JudgeConfig

    cfg = config.judge or JudgeConfig()
    key = api_key(config)
    check_tokenizer(spec_of(cfg))
    price = price_for(cfg.model, cfg.prices)
    prior = priced_prior(prior or {}, cfg, price)
    members = panel_members(config)
    tally = JudgeTally()
    state: dict[str, Any] = {"judge": None, "judges": None, "sim": None, "session": None, "cache": None, "batches": None, "results": 0, "errors": 0, "auth": None,
                             "quota": None, "quota_stopped": 0,
                             "spend": None}
    calibration = Calibration(cfg.calibration)
    lock = anyio.Lock()

    async def start_all() -> list[tuple[str, Judge]]:
        """The run's judges (`tracejudge.stages.judge.panel`), made when the first case arrives: one session, budget and cache."""
        async with lock:
            if state["judges"] is not None:
                ready: list[tuple[str, Judge]] = state["judges"]
                return ready
            # Batch mode re-attaches the batches of a killed run at once: it connects now. Otherwise the simulator and
            # the HTTP session wait for the first request sent (`connect`): a run the cache answers whole starts neither.
            lazy = cfg.mode != "batch"
            sim_base = "" if lazy else await connect_now()
            shared = (resources or local_resources)(config, prior)
            budget, cache = shared.budget, shared.cache
            state["cache"] = cache
            state["spend"] = SpendJournal(run_dir)
            judges, state["batches"] = make_judges(config, members, key, shared, session=state["session"], sim_base=sim_base,
                                                   run_dir=run_dir, spend=state["spend"])
            if lazy:
                for _, j in judges:
                    j.connect = connect
            state["judge"] = judges[0][1]
            state["judges"] = judges
            return judges

    async def connect_now() -> str:
        """Start the simulator (when a judge is the simulator) and open the run's HTTP session; the simulator's base URL, or ""."""
        from tracejudge.llm.providers import open_session

        sim_base = ""
        if any(m.cfg.provider == "simulator" for m in members):
            from tracejudge.simulator.server import SimConfig, start_simulator

            s = cfg.simulator
            runner, url = await start_simulator(SimConfig(latency_ms=s.latency_ms, rpm=s.rpm, tpm=s.tpm, error_rate=s.error_rate, hang_s=s.hang_s, seed=s.seed,
                                                          batch_completion_s=s.batch_completion_s, agreement=s.agreement, noise=s.noise,
                                                          position_bias=s.position_bias, json_object_only=s.json_object_only,
                                                          tokenizer_factor=s.tokenizer_factor))
            state["sim"] = runner
            sim_base = url + "/v1"
        state["session"] = open_session(config.limits.max_in_flight)
        return sim_base

    connecting = anyio.Lock()

    async def connect() -> None:
        """What a judge calls before its first request is sent: connects the run's judges once (`connect_now`)."""
        from tracejudge.llm.providers import endpoint

        async with connecting:
            if state["session"] is not None:
                return
            sim_base = await connect_now()
            for member, (_, j) in zip(members, state["judges"], strict=True):
                j.session = state["session"]
                if member.cfg.provider == "simulator":
                    j.url = endpoint(member.cfg.provider, sim_base)

    batchers: dict[tuple[Any, ...], Batcher[Item, Outcome]] = {}

    async def batched(judge: Judge, metric: JudgeMetric, plan: Plan, trial: int, slot: str) -> Outcome:
        group = (metric.key, trial, id(judge))
        if group not in batchers:
            batchers[group] = Batcher(lambda items: judge_items(judge, items), cfg.items_per_request, cfg.item_wait_s)
        return await batchers[group].submit(group, Item(plan, trial, slot))

    def judged_metrics(work: Work) -> list[JudgeMetric]:
        """The judge metrics of `work`'s case: the run's, with the case's own merged in."""
        if work.case.metrics:
            return [m for m in merge(metrics, work.case.metrics) if isinstance(m, JudgeMetric)]
        return list(metrics)

    async def finish(work: Work, job: Planned, passes: dict[tuple[int, int], dict[str, Outcome]]) -> None:
        """`work`'s scores and status from its passes (`settling.conclude`); bad credentials or a refused request stop
        the run instead (the first case that meets it raises, the others wait to be cancelled, writing nothing)."""
        judges: list[tuple[str, Judge]] = state["judges"]
        fatal = conclude(work, job, passes, judges, cfg, state, tally)
        if fatal is not None:
            if state["auth"] is None:
                state["auth"] = fatal.message
                raise _stopping(fatal, cfg)
            await anyio.sleep_forever()

    probing = Probing()

    async def settle(works: list[Work]) -> list[Work]:
        """The works of a chunk the cache answers whole judged at once (`settling.settle_cached`); the others returned for
        `process`. Not while the run stops, nor once credentials or the quota failed, nor for a panel (`process` then)."""
        if (stop is not None and stop.is_set()) or state["auth"] is not None or state["quota"] is not None or len(members) != 1:
            return works
        judges = state["judges"] or await start_all()
        for _, j in judges:
            j.stop = stop
        return await settle_cached(works, judges, cfg, config.run.trials > 1, judged_metrics, finish, probing)

    async def process(work: Work) -> None:
        job: Planned | None = work.scratch.pop(PLANNED, None)  # planned (and made ready) by `settle` already
        use = job.use if job is not None else judged_metrics(work)
        if not use:
            return
        case = work.case
        if state["auth"] is not None:
            await anyio.sleep_forever()  # the run is stopping for bad credentials: wait to be cancelled, write nothing
        if state["quota"] is not None:
            # The provider's daily quota is spent: asking again now only collects more refusals.
            state["quota_stopped"] += 1
            work.result.status = Status.rate_limited
            work.result.error = ErrorInfo(kind="rate_limited", message=state["quota"])
            return
        if stop is not None and stop.is_set() and not work.scratch.get(AGENT_ANSWERED):
            # Stopping: not judged, not written, redone on resume. A case a live agent answered is judged within the
            # grace all the same: redoing it would pay the agent call again.
            work.scratch["unfinished"] = True
            return
        paid_case.set(bool(work.scratch.get(AGENT_ANSWERED)))  # this task's requests only (a context variable)
        judges: list[tuple[str, Judge]] = state["judges"] or await start_all()
        for _, j in judges:
            j.stop = stop
        stopped: list[str] = []
        if job is None:
            job = planned(work, use)
            # Grouping renders each plan's fenced text: off the event loop, as a long trace takes a while.
            if len(job.plans) > 1:
                await anyio.to_thread.run_sync(grouping, [job], cfg, abandon_on_cancel=True)
        plans, by_key, found, readied = job.plans, job.by_key, job.found or [], job.readied
        groups, singles = job.singles(cfg)

        async def guarded(job: Callable[[], Any], keys: list[str]) -> None:
            try:
                await job()
            except* JudgeStopped:  # also from a metric re-asked alone inside a task group
                stopped.extend(keys)

        async def one_pass(judge: Judge, index: int, sample: int) -> dict[str, Outcome]:
            """Every metric judged once by `judge` (panel member `index`), as sample `sample` (`tracejudge.stages.judge.repeat`)."""
            got: dict[str, Outcome] = {}
            trial = sample_trial(work.trial, sample)
            suffix = (f"/s{sample}" if sample else "") + (f"@{judges[index][0]}" if index else "")
            # Each pass notes on plans of its own (a truncation note, a group's note), so passes never add to each other's.
            mine = {k: p.copy() for k, p in plans.items()}

            def slot_of(metric: JudgeMetric) -> str:
                return f"{case.id}|{metric.key}|{work.trial}{suffix}"

            async def ask(metric: JudgeMetric) -> None:
                plan, slot = mine[metric.key], slot_of(metric)
                per_q = per_question(metric, cfg)
                if cfg.items_per_request > 1 and not per_q:
                    if calibration.sampled(slot):
                        got[metric.key] = await calibrate(calibration, batched, judge, metric, case, plan, trial, slot)
                    else:
                        got[metric.key] = await batched(judge, metric, plan, trial, slot)
                elif calibration.sampled(slot):
                    # Asked alone already: only the full rendering to compare with.
                    kept, full = await with_full(judge, metric, case, plan, trial, slot, per_q, lambda: judge.judge(plan, trial, slot, per_q))
                    record_render(calibration, metric, plan, kept, kept, full)
                    got[metric.key] = kept
                else:
                    got[metric.key] = await judge.judge(plan, trial, slot, per_q, ready=readied.pop((metric.key,), None))

            async def ask_group(members: list[JudgeMetric]) -> None:
                group = [mine[m.key] for m in members]
                gp = grouped_plan(group, reused=trace_reused(config, len(judges)))
                group_slot = f"{case.id}|group|{work.trial}{suffix}"
                if cfg.items_per_request > 1:
                    key = (tuple(type(p.metric).__name__ for p in group), trial, id(judge))
                    if key not in batchers:
                        batchers[key] = Batcher(lambda items: judge_items(judge, items), cfg.items_per_request, cfg.item_wait_s)
                    done = await batchers[key].submit(key, Item(gp, trial, group_slot))  # type: ignore[arg-type]
                else:
                    done = await judge.judge(gp, trial, group_slot, False, ready=readied.pop(tuple(m.key for m in members), None))  # type: ignore[arg-type]
                pass_note(gp, group)
                parts = await split(judge, group, done, trial, [slot_of(m) for m in members])  # type: ignore[arg-type]
                sampled = [i for i, m in enumerate(members) if calibration.sampled(slot_of(m))]

                async def compare(i: int) -> None:
                    # Calibration: the metric asked by itself too (compact and full), and compared with its grouped verdict.
                    m = members[i]
                    alone, full = await with_full(judge, m, case, mine[m.key], trial, slot_of(m), False,
                                                  lambda: judge.judge(mine[m.key], trial, slot_of(m) + "|alone", False))
                    found = calibration.add(m.key, parts[i], alone)
                    if found is not None:
                        parts[i].score.details = {**(parts[i].score.details or {}), "calibration": found}
                    record_render(calibration, m, mine[m.key], parts[i], alone, full)

                if sampled:
                    async with anyio.create_task_group() as tg:
                        for i in sampled:
                            tg.start_soon(compare, i)
                for m, o in zip(members, parts, strict=True):
                    got[m.key] = o

            jobs = [(lambda m=m: ask(m), [m.key]) for m in singles] + [(lambda g=g: ask_group(g), [m.key for m in g]) for g in groups]
            if len(jobs) == 1:
                await guarded(*jobs[0])
            elif jobs:
                async with anyio.create_task_group() as tg:
                    for job, keys in jobs:
                        tg.start_soon(guarded, job, keys)
            return got

        passes: dict[tuple[int, int], dict[str, Outcome]] = {}

        async def run_pass(index: int, sample: int) -> None:
            passes[(index, sample)] = await one_pass(judges[index][1], index, sample)

        async def all_metrics() -> None:
            if len(judges) == 1 and cfg.samples == 1:
                await run_pass(0, 0)
                return
            async with anyio.create_task_group() as tg:
                for index in range(len(judges)):
                    for sample in range(cfg.samples):
                        tg.start_soon(run_pass, index, sample)

        # A case the cache answers whole is judged in one step (`tracejudge.stages.judge.cached`); any other the usual way,
        # with the requests that step made ready (`readied`), so none is rendered and read twice. (`settle` took that
        # step for a case it hands over already.)
        cached = None
        if not job.tried and fast_path(cfg, len(judges), singles, bool(groups)):
            cached = await from_cache(judges[0][1], plans, by_key, found, cfg, work.trial, config.run.trials > 1,
                                      functools.partial(slot, case.id, work.trial), readied)
        if cached is not None:
            passes[(0, 0)] = cached
        elif stop is None:
            await all_metrics()
        elif not await _within_grace(stop, cfg.stop_grace_s, all_metrics):
            work.scratch["unfinished"] = True
            return
        if stopped:
            work.scratch["unfinished"] = True
            return
        await finish(work, job, passes)

    async def aclose() -> None:
        if state["batches"] is not None:
            state["batches"].close()
        if state["session"] is not None:
            await state["session"].close()
        if state["sim"] is not None:
            await state["sim"].cleanup()
        if state["cache"] is not None:
            state["cache"].close()
        if state["spend"] is not None:
            state["spend"].close()

    def summary() -> dict[str, Any]:
        return judge_summary(state, prior, cfg, price, calibration, tally)

    def usage() -> dict[str, float]:
        return segment_telemetry(state, run_dir)

    # Batch mode keeps many cases waiting on one provider batch; each waiting case is one cheap task.
    workers = cfg.workers or (BATCH_WORKERS if cfg.mode == "batch" else max(4, 2 * config.limits.max_in_flight))
    # `io`: every case waits on the network, so it is fed one at a time (results flush as they come, even with one worker).
    def activity() -> str | None:
        return state["judge"].activity() if state["judge"] is not None else None

    def pace() -> float | None:
        return state["judge"].pace(state["results"]) if state["judge"] is not None and cfg.mode != "batch" else None

    return Stage("judge", process, workers=workers, aclose=aclose, summary=summary, usage=usage, io=True, activity=activity, pace=pace,
                 settle=settle)
