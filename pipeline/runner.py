"""The staged pipeline: load → (target) → extract → score → (judge) → aggregate.

Each stage is a pool of anyio tasks; consecutive stages are joined by a
bounded memory object stream (`run.queue_size`), so a slow stage holds back
the ones before it and memory stays flat however many cases stream through.
Stages that are not configured are not started: their neighbours are joined
directly. The runner wires stages by the names in the config; it never names
a metric or a format itself.

Every finished (case, trial) is appended to `results.jsonl` as it arrives
and folded into the aggregate; `summary.json` is written atomically at the
end (and on interruption). Re-running on the same run directory resumes it
(`pipeline.checkpoint`): the (case, trial) pairs already there are skipped,
for formats with a `peek_id` before their record is even parsed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from pipeline import manifest as manifest_mod
from pipeline import registry, store
from pipeline.checkpoint import RunJournal
from pipeline.config import RunConfig
from pipeline.keyset import FirstSeen, key_hash, result_key, trial_key
from pipeline.log import get_logger
from pipeline.records import Case, CaseResult, ErrorInfo, Status
from pipeline.work import Stage, Work

__all__ = ["RunOutcome", "manifest_for", "run"]

log = get_logger("tracejudge.runner")


@dataclass
class RunOutcome:
    """What a run (or one segment of a resumed run) did."""

    run_dir: Path
    summary: dict[str, Any]
    new_results: int
    skipped_finished: int
    interrupted: bool


def manifest_for(config: RunConfig) -> dict[str, Any]:
    """The manifest a run directory records for `config` (see `pipeline.manifest`)."""
    return manifest_mod.manifest_for(config)


async def run(
    config: RunConfig,
    *,
    run_dir: Path | None = None,
    force: bool = False,
    stop: anyio.Event | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
) -> RunOutcome:
    """Run the pipeline for `config`, writing to `run_dir` (default `config.run.dir`).

    Args:
        stop: when set, no new case is taken; cases in flight finish and are written.
        on_result: called with each new result (progress display).

    Raises:
        store.LockedError: another process holds the run directory.
        store.ManifestMismatch: the directory holds a run of another config or dataset.
    """
    from stages.aggregate import Aggregator
    from stages.extract import extract_record

    run_dir = Path(run_dir or config.run.dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = store.RunLock(run_dir)
    lock.acquire()
    try:
        fmt = registry.format_for(config.dataset.format)
        metrics = [registry.build_metric(spec) for spec in config.metrics]
        manifest = manifest_for(config)
        previous = store.read_manifest(run_dir)
        changes = manifest_mod.check(run_dir, previous, manifest, force)
        if previous is None or changes:
            store.atomic_write_text(run_dir / store.MANIFEST, json.dumps(manifest, indent=2) + "\n")
        metric_keys = [m.key for m in metrics]
        ctx = fmt.prepare(config.dataset)
        journal = RunJournal.open(
            run_dir,
            metric_keys=metric_keys,
            new_aggregator=lambda: Aggregator(metric_keys),
            config_hash=manifest["config_hash"],
            forced=bool(changes),
            flush_every=config.run.flush_every,
        )
        if journal.finished or journal.segments:
            log.info("resuming", run_dir=str(run_dir), finished=journal.finished, segment=journal.segment["segment"],
                     forced_changes=changes, **journal.recovery)
        done = journal.done  # KeySet of result_key(case_id, trial)
        peek = fmt.peek_id
        stop = stop or anyio.Event()
        trials = config.run.trials
        q = config.run.queue_size
        counters = {"new": 0, "skipped": 0}
        seen = FirstSeen(size_hint=len(done))  # sized up front: no doubling while resuming
        sink_done = anyio.Event()

        stages = build_stages(config, metrics)
        journal.usage_source = lambda: {st.name: dict(st.usage()) for st in stages if st.usage is not None}

        def finished(raw: Any) -> bool:
            # Resume fast path: a record whose every trial is finished is skipped unparsed,
            # unless it repeats an id seen earlier (then extract decides, as it did the first time).
            if peek is None or raw.error is not None:
                return False
            pid = peek(raw.payload)
            if pid is None:
                return False
            h = key_hash(pid)
            return all(done.contains_hash(trial_key(h, t)) for t in range(trials)) and seen.claim_first(h, raw.file, raw.line)

        async def load(send: MemoryObjectSendStream[Any]) -> None:
            async with send:
                skipped = 0
                for raw in fmt.read(config.dataset):
                    if stop.is_set():
                        return
                    if finished(raw):
                        skipped += 1
                        counters["skipped"] += trials
                        if skipped % 512 == 0:
                            await anyio.lowlevel.checkpoint()  # let signals and flushes in
                        continue
                    await send.send(raw)

        async def extract(recv: MemoryObjectReceiveStream[Any], send: MemoryObjectSendStream[Work]) -> None:
            async with recv, send:
                async for raw in recv:
                    t0 = time.perf_counter()
                    got = extract_record(raw, fmt, ctx)
                    if not isinstance(got, Case):
                        cid, err = got
                        seen.claim(cid, raw.file, raw.line)
                        if done.contains_hash(result_key(cid, 0)):
                            counters["skipped"] += 1
                            continue
                        done.add_hash(result_key(cid, 0))
                        bad = CaseResult(case_id=cid, status=Status.invalid_input, error=err)
                        await send.send(Work(Case(id=cid), 0, bad, t0))
                        continue
                    where = f"{raw.file}:{raw.line}"
                    first = seen.claim(got.id, raw.file, raw.line)
                    if first != where:
                        cid = f"{got.id}@{where}"
                        if not done.contains_hash(result_key(cid, 0)):
                            done.add_hash(result_key(cid, 0))
                            err = ErrorInfo(kind="invalid_input", message=f"duplicate case id {got.id!r} (first at {first})", file=raw.file, line=raw.line, field="id")
                            bad = CaseResult(case_id=cid, status=Status.invalid_input, tags=got.tags, metadata=got.metadata, error=err)
                            await send.send(Work(got, 0, bad, t0))
                        else:
                            counters["skipped"] += 1
                        continue
                    for trial in range(trials):
                        if done.contains_hash(result_key(got.id, trial)):
                            counters["skipped"] += 1
                            continue
                        result = CaseResult(case_id=got.id, trial=trial, tags=got.tags, metadata=got.metadata)
                        await send.send(Work(got, trial, result, t0))

        async def worker(stage: Stage, recv: MemoryObjectReceiveStream[Work], send: MemoryObjectSendStream[Work]) -> None:
            async with recv, send:
                async for work in recv:
                    if not work.failed:
                        try:
                            await stage.process(work)
                        except Exception as exc:  # a stage bug must cost one case, not the run
                            work.result.status = Status.invalid_input if stage.name == "score" else Status.target_error
                            work.result.error = ErrorInfo(kind=f"{stage.name}_error", message=f"{type(exc).__name__}: {exc}")
                    await send.send(work)

        async def sink(recv: MemoryObjectReceiveStream[Work]) -> None:
            async with recv:
                async for work in recv:
                    result = work.result
                    result.duration_s = round(time.perf_counter() - work.started, 6)
                    journal.record(result)
                    counters["new"] += 1
                    if on_result is not None:
                        on_result(result)
            sink_done.set()

        async def flusher() -> None:
            # Results that trickle in (a slow judge) still reach the disk within flush_seconds.
            while not sink_done.is_set():
                with anyio.move_on_after(0.1):
                    await sink_done.wait()
                journal.tick()

        try:
            async with anyio.create_task_group() as tg:
                send, recv = anyio.create_memory_object_stream[Any](q)
                tg.start_soon(load, send)
                nxt_send, nxt_recv = anyio.create_memory_object_stream[Work](q)
                async with recv, nxt_send:
                    for _ in range(config.run.workers):
                        tg.start_soon(extract, recv.clone(), nxt_send.clone())
                recv = nxt_recv
                for stage in stages:
                    nxt_send, nxt_recv = anyio.create_memory_object_stream[Work](q)
                    async with recv, nxt_send:
                        for _ in range(stage.workers):
                            tg.start_soon(worker, stage, recv.clone(), nxt_send.clone())
                    recv = nxt_recv
                tg.start_soon(sink, recv)
                tg.start_soon(flusher)
            ended = "interrupted" if stop.is_set() else "finished"
        except BaseException:
            ended = "interrupted"
            raise
        finally:
            journal.close(ended)
            summary = _write_summary(run_dir, journal, manifest, complete=ended == "finished")
        return RunOutcome(run_dir, summary, counters["new"], counters["skipped"], stop.is_set())
    finally:
        lock.release()


def build_stages(config: RunConfig, metrics: list[Any]) -> list[Stage]:
    """The stages between extract and aggregate that this config needs, in order.

    Unconfigured stages (no target, no judge metric) are left out, so their
    neighbours are joined directly.
    """
    from stages.score import score_stage

    return [score_stage(metrics, _merge_case_metrics)]


def _merge_case_metrics(run_metrics: list[Any], specs: list[dict[str, Any]]) -> list[Any]:
    # Case-level metrics add to the run's; one with the same key replaces the run's for this case.
    extra = []
    for i, spec in enumerate(specs):
        try:
            extra.append(registry.build_metric(spec))
        except registry.SpecError as exc:
            raise registry.SpecError((i, *exc.loc), exc.msg) from None
    keys = {m.key for m in extra}
    return [m for m in run_metrics if m.key not in keys] + extra


def _write_summary(run_dir: Path, journal: RunJournal, manifest: dict[str, Any], complete: bool) -> dict[str, Any]:
    # Built only from recorded state (no clock reading), so a resume that adds nothing
    # rewrites a byte-identical summary.
    totals = journal.totals()
    judge = {"requests": 0, "cache_hits": 0, "retries": 0, "rate_limited": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    for k, v in totals["usage"].get("judge", {}).items():
        judge[k] = judge.get(k, 0) + v
    summary = {
        "tracejudge_version": manifest["tracejudge_version"],
        "config_hash": manifest["config_hash"],
        "complete": complete,
        "elapsed_s_total": totals["elapsed_s"],
        **journal.agg.summary(),
        "judge": judge,
        "usage": totals["usage"],
        "segments": journal.segments,
    }
    text = json.dumps(summary, indent=2) + "\n"
    path = run_dir / store.SUMMARY
    try:
        unchanged = path.read_text(encoding="utf-8") == text
    except OSError:
        unchanged = False
    if not unchanged:
        store.atomic_write_text(path, text)
    return summary
