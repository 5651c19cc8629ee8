"""The staged pipeline: load → (target) → extract → score → (judge) → aggregate.

Each stage is a pool of anyio tasks; consecutive stages are joined by a
bounded memory object stream (`run.queue_size`), so a slow stage holds back
the ones before it and memory stays flat however many cases stream through.
Stages that are not configured are not started: their neighbours are joined
directly. The runner wires stages by the names in the config; it never names
a metric or a format itself.

Every finished (case, trial) is appended to `results.jsonl` as it arrives
and folded into the aggregate; `summary.json` is written atomically at the
end (and on interruption), then the assertions are checked and the reports
(report.md, junit.xml, report.html) written (`tracejudge.stages.reports.finish_run`). Re-running on the same run directory skips the
(case, trial) pairs already there.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from tracejudge.core import registry
from tracejudge.core.config import RunConfig
from tracejudge.core.errors import ConfigError
from tracejudge.core.log import get_logger
from tracejudge.core.records import Case, CaseResult, ErrorInfo, Status
from tracejudge.core.work import Stage, Work
from tracejudge.engine import manifest as manifest_mod
from tracejudge.engine import store
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.engine.keyset import FirstSeen, key_hash, result_key, trial_key
from tracejudge.engine.shards import parse_shard, shard_index, shard_run_dir

if TYPE_CHECKING:
    from tracejudge.stages.load.memory import MemorySource

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
    verdict: Any = None  # stages.gate.Verdict: the assertions' PASS/FAIL


def manifest_for(config: RunConfig, source: MemorySource | None = None) -> dict[str, Any]:
    """The manifest a run directory records for `config` (see `tracejudge.engine.manifest`)."""
    return manifest_mod.manifest_for(config, None if source is None else source.fingerprint)


async def run(
    config: RunConfig,
    *,
    run_dir: Path | None = None,
    force: bool = False,
    stop: anyio.Event | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    source: MemorySource | None = None,
    metrics: Sequence[Any] | None = None,
) -> RunOutcome:
    """Run the pipeline for `config`, writing to `run_dir` (default `config.run.dir`, or its
    `-shard-I-of-N` sibling when `config.run.shard` is set: then only that shard's cases run).

    Args:
        stop: when set, no new case is taken; cases in flight finish and are written.
        on_result: called with each new result (progress display).
        source: cases from memory (`tracejudge.stages.load.memory.MemorySource`) read instead of
            `config.dataset`'s file; the manifest then records no file fingerprint.
        metrics: metric instances to use instead of building `config.metrics`
            (the Python API passes metrics that a spec cannot rebuild, such as a
            custom metric defined inside a function); `config.metrics` still
            names them in the manifest.

    Raises:
        store.LockedError: another process holds the run directory.
        store.ManifestMismatch: the directory holds a run of another config or dataset.
    """
    from tracejudge.stages.aggregate.fold import aggregator_for
    from tracejudge.stages.extract import extract_record
    from tracejudge.stages.reports import finish_run

    shard = parse_shard(config.run.shard) if config.run.shard else None
    run_dir = Path(run_dir or (shard_run_dir(config.run.dir, shard) if shard else config.run.dir))
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ConfigError(f"run.dir: {run_dir} exists and is not a directory") from None
    lock = store.RunLock(run_dir)
    lock.acquire()
    try:
        fmt = source.format if source is not None else registry.format_for(config.dataset.format)
        metrics = list(metrics) if metrics is not None else [registry.build_metric(spec) for spec in config.metrics]
        manifest = manifest_for(config, source)
        previous = store.read_manifest(run_dir)
        changes = manifest_mod.check(run_dir, previous, manifest, force)
        if previous is None or changes:
            store.atomic_write_text(run_dir / store.MANIFEST, json.dumps(manifest, indent=2) + "\n")
        metric_keys = [m.key for m in metrics]
        ctx = fmt.prepare(config.dataset)
        journal = RunJournal.open(
            run_dir,
            metric_keys=metric_keys,
            new_aggregator=lambda: aggregator_for(config, metrics),
            config_hash=manifest["config_hash"],
            forced=bool(changes),
            flush_every=config.run.flush_every,
        )
        if journal.finished or journal.segments:
            log.info("resuming", run_dir=str(run_dir), finished=journal.finished, segment=journal.segment["segment"],
                     forced_changes=changes, **journal.recovery)
        done = journal.done  # KeySet of result_key(case_id, trial)
        is_done = journal.is_done  # budget-skipped results are not done: a resume redoes them
        peek = fmt.peek_id
        stop = stop or anyio.Event()
        trials = config.run.trials
        q = config.run.queue_size
        counters = {"new": 0, "skipped": 0, "cut_short": 0}
        seen = FirstSeen(size_hint=len(done))  # sized up front: no doubling while resuming
        sink_done = anyio.Event()

        # Metrics over trials (PassAtK) are computed by the aggregate, not per case.
        stages = build_stages(
            config, [m for m in metrics if not getattr(m, "over_trials", False)],
            run_dir=run_dir, prior_judge=_prior_judge(run_dir, journal.judge_spent),
        )
        journal.usage_source = lambda: {st.name: dict(st.usage()) for st in stages if st.usage is not None}

        # Streams carry small chunks of work, not single items: one hop per chunk keeps the
        # event loop's share of a CPU-bound case low. A stream that feeds a concurrent
        # (I/O) stage carries single items so its `workers` is its true concurrency.
        chunk = min(config.run.chunk_size, q)
        capacity = max(2, q // chunk)

        async def emit(send: MemoryObjectSendStream[list[Any]], items: list[Any], single: bool) -> None:
            if single:
                for item in items:
                    await send.send([item])
            elif items:
                await send.send(items)

        def foreign(case_id: str) -> bool:
            # Not this shard's case: not read further, not written, not counted.
            return shard is not None and shard_index(case_id, shard[1]) != shard[0]

        def foreign_unparsed(raw: Any) -> bool:
            if shard is None or peek is None or raw.error is not None:
                return False
            pid = peek(raw.payload)
            return pid is not None and foreign(pid)

        def finished(raw: Any) -> bool:
            # Resume fast path: a record whose every trial is finished is skipped unparsed,
            # unless it repeats an id seen earlier (then extract decides, as it did the first time).
            if peek is None or raw.error is not None:
                return False
            pid = peek(raw.payload)
            if pid is None:
                return False
            h = key_hash(pid)
            return all(is_done(trial_key(h, t)) for t in range(trials)) and seen.claim_first(h, raw.file, raw.line)

        async def load(send: MemoryObjectSendStream[list[Any]]) -> None:
            records = source.records() if source is not None else _aiter(fmt.read(config.dataset))
            async with send, aclosing(records):
                batch: list[Any] = []
                skipped = 0
                async for raw in records:
                    if stop.is_set():
                        counters["cut_short"] = 1
                        break
                    if foreign_unparsed(raw):
                        continue
                    if finished(raw):
                        skipped += 1
                        counters["skipped"] += trials
                        if skipped % 512 == 0:
                            await anyio.lowlevel.checkpoint()  # let signals and flushes in
                        continue
                    batch.append(raw)
                    if len(batch) >= chunk:
                        await send.send(batch)
                        batch = []
                if batch:
                    await send.send(batch)

        async def extract(recv: MemoryObjectReceiveStream[list[Any]], send: MemoryObjectSendStream[list[Work]], single: bool) -> None:
            async with recv, send:
                async for raws in recv:
                    if stop.is_set():
                        counters["cut_short"] = 1
                        continue
                    out: list[Work] = []
                    for raw in raws:
                        t0 = time.perf_counter()
                        got = extract_record(raw, fmt, ctx)
                        if not isinstance(got, tuple) and not _encodable(got.id):
                            got = (got.id, ErrorInfo(kind="invalid_input", message="the case id holds text that UTF-8 cannot encode (a lone surrogate)",
                                                     file=raw.file, line=raw.line, field="id"))
                        if foreign(_safe_text(got[0]) if isinstance(got, tuple) else got.id):
                            continue
                        if isinstance(got, tuple):  # (case_id, ErrorInfo): the record could not be read
                            cid, err = got
                            cid = _safe_text(cid)
                            seen.claim(cid, raw.file, raw.line)
                            if is_done(result_key(cid, 0)):
                                counters["skipped"] += 1
                                continue
                            done.add_hash(result_key(cid, 0))
                            bad = CaseResult(case_id=cid, status=Status.invalid_input, error=err)
                            out.append(Work(Case(id=cid), 0, bad, t0))
                            continue
                        where = f"{raw.file}:{raw.line}"
                        first = seen.claim(got.id, raw.file, raw.line)
                        if first != where:
                            cid = f"{got.id}@{where}"
                            if not is_done(result_key(cid, 0)):
                                done.add_hash(result_key(cid, 0))
                                err = ErrorInfo(
                                    kind="invalid_input", message=f"duplicate case id {got.id!r} (first at {first})",
                                    file=raw.file, line=raw.line, field="id",
                                )
                                bad = CaseResult(case_id=cid, status=Status.invalid_input, tags=got.tags, metadata=got.metadata, error=err)
                                out.append(Work(got, 0, bad, t0))
                            else:
                                counters["skipped"] += 1
                            continue
                        for trial in range(trials):
                            if is_done(result_key(got.id, trial)):
                                counters["skipped"] += 1
                                continue
                            result = CaseResult(case_id=got.id, trial=trial, tags=got.tags, metadata=got.metadata)
                            out.append(Work(got, trial, result, t0))
                    await emit(send, out, single)

        async def worker(stage: Stage, recv: MemoryObjectReceiveStream[list[Work]], send: MemoryObjectSendStream[list[Work]], single: bool) -> None:
            async with recv, send:
                async for works in recv:
                    if stop.is_set():
                        # Stopping: work no stage has started is dropped, not written, so the
                        # resume redoes it; only what is already in a stage's hands finishes.
                        counters["cut_short"] = 1
                        continue
                    for work in works:
                        if not work.failed:
                            try:
                                await stage.process(work)
                            except Exception as exc:  # a stage bug must cost one case, not the run
                                work.result.status = Status.invalid_input if stage.name == "score" else Status.target_error
                                work.result.error = ErrorInfo(kind=f"{stage.name}_error", message=f"{type(exc).__name__}: {exc}")
                    await emit(send, works, single)

        async def sink(recv: MemoryObjectReceiveStream[list[Work]]) -> None:
            async with recv:
                async for works in recv:
                    for work in works:
                        result = work.result
                        result.duration_s = round(time.perf_counter() - work.started, 6)
                        try:
                            written = journal.record(result)
                        except ValueError as exc:  # text JSON cannot carry (a lone surrogate)
                            result = _unencodable(result, exc)
                            written = journal.record(result)
                        if not written:
                            continue
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

        def feeds_concurrent(i: int) -> bool:
            return i < len(stages) and stages[i].workers > 1

        try:
            async with anyio.create_task_group() as tg:
                send, recv = anyio.create_memory_object_stream[list[Any]](capacity)
                tg.start_soon(load, send)
                nxt_send, nxt_recv = anyio.create_memory_object_stream[list[Work]](capacity)
                async with recv, nxt_send:
                    for _ in range(config.run.workers):
                        tg.start_soon(extract, recv.clone(), nxt_send.clone(), feeds_concurrent(0))
                recv = nxt_recv
                for i, stage in enumerate(stages):
                    nxt_send, nxt_recv = anyio.create_memory_object_stream[list[Work]](capacity)
                    async with recv, nxt_send:
                        for _ in range(stage.workers):
                            tg.start_soon(worker, stage, recv.clone(), nxt_send.clone(), feeds_concurrent(i + 1))
                    recv = nxt_recv
                tg.start_soon(sink, recv)
                tg.start_soon(flusher)
            # A stop that came after every case was taken is not an interruption: all finished.
            ended = "interrupted" if counters["cut_short"] else "finished"
            crashed = False
        except BaseException:
            ended = "interrupted"
            crashed = True
            raise
        finally:
            with anyio.CancelScope(shield=True):
                for stage in stages:
                    if stage.aclose is not None:
                        await stage.aclose()
            journal.close(ended)
            blocks = {stage.name: stage.summary() for stage in stages if stage.summary is not None}
            summary = _build_summary(journal, manifest, complete=ended == "finished", blocks=blocks)
            if crashed:  # finish_run below will not run: keep the summary of what was done
                store.write_text_if_changed(run_dir / store.SUMMARY, json.dumps(summary, indent=2) + "\n")
        # Writes summary.json (with the verdict) and the reports, each only if it changed, so
        # resuming a finished run leaves the run directory byte- and mtime-identical.
        verdict = finish_run(run_dir, summary, config)
        return RunOutcome(run_dir, summary, counters["new"], counters["skipped"], bool(counters["cut_short"]), verdict)
    finally:
        lock.release()


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _safe_text(text: str) -> str:
    return text if _encodable(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _unencodable(result: CaseResult, exc: Exception) -> CaseResult:
    """The result that replaces one whose text cannot be written (kept: id and trial, so resume skips it)."""
    return CaseResult(
        case_id=result.case_id, trial=result.trial, status=Status.invalid_input, duration_s=result.duration_s,
        error=ErrorInfo(kind="invalid_input", message=f"the record holds text that UTF-8 cannot encode (a lone surrogate): {str(exc)[:160]}"),
    )


async def _aiter(items: Iterable[Any]) -> AsyncGenerator[Any, None]:
    for item in items:
        yield item


def build_stages(
    config: RunConfig, metrics: list[Any], run_dir: Path | None = None, prior_judge: dict[str, Any] | None = None
) -> list[Stage]:
    """The stages between extract and aggregate that this config needs, in order.

    Unconfigured stages (no target, no judge metric) are left out, so their
    neighbours are joined directly. `run_dir` is where stages keep their own
    files (the target's `traces.jsonl`); without it they keep none.
    `prior_judge` is the judge block of an earlier segment of the same run
    (its spending counts against the budget). Raises `ConfigError` when the
    judge's API key variable is unset.
    """
    from tracejudge.stages.judge import JudgeMetric
    from tracejudge.stages.judge.stage import judge_stage
    from tracejudge.stages.score import score_stage

    def deterministic(run_metrics: Any, specs: list[dict[str, Any]]) -> list[Any]:
        return [m for m in _merge_case_metrics(run_metrics, specs) if not isinstance(m, JudgeMetric)]

    plain = [m for m in metrics if not isinstance(m, JudgeMetric)]
    judged = [m for m in metrics if isinstance(m, JudgeMetric)]
    stages: list[Stage] = []
    if config.target is not None:
        from tracejudge.stages.target import target_stage

        stages.append(target_stage(config, run_dir))
    stages.append(score_stage(plain, deterministic))
    if judged:
        stages.append(judge_stage(config, judged, _merge_case_metrics, prior_judge, run_dir=run_dir))
    return stages


def _prior_judge(run_dir: Path, spent: dict[str, int]) -> dict[str, Any]:
    """What earlier segments spent on the judge: their summary block, corrected by the results.

    A segment killed with SIGKILL never wrote its summary, but its results carry
    the tokens each score cost; those are the floor of what was spent, so the
    budget holds across a kill (only requests in flight at the kill are unseen).
    """
    block = dict(_prior_block(run_dir, "judge") or {})
    if spent["input_tokens"] + spent["output_tokens"] > int(block.get("input_tokens", 0)) + int(block.get("output_tokens", 0)):
        block["input_tokens"], block["output_tokens"] = spent["input_tokens"], spent["output_tokens"]
        block["requests"] = max(int(block.get("requests", 0)), spent["requests"])
        block["cost_usd"] = None  # unknown here: the judge stage prices the tokens
    return block


def _prior_block(run_dir: Path, name: str) -> dict[str, Any] | None:
    try:
        block = json.loads((run_dir / "summary.json").read_text()).get(name)
    except (OSError, ValueError, AttributeError):
        return None
    return block if isinstance(block, dict) else None


def _merge_case_metrics(run_metrics: Sequence[Any], specs: list[dict[str, Any]]) -> list[Any]:
    # Case-level metrics add to the run's; one with the same key replaces the run's for this case.
    extra = []
    for i, spec in enumerate(specs):
        try:
            extra.append(registry.build_metric(spec))
        except registry.SpecError as exc:
            raise registry.SpecError((i, *exc.loc), exc.msg) from None
    keys = {m.key for m in extra}
    return [m for m in run_metrics if m.key not in keys] + extra


def _build_summary(
    journal: RunJournal, manifest: dict[str, Any], complete: bool, blocks: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    # Built only from recorded state (no clock reading), so a resume that adds nothing
    # gives a byte-identical summary. A stage's own block (the judge's, which carries
    # its earlier segments' spending) replaces the one summed from segment usage.
    totals = journal.totals()
    judge: dict[str, Any] = {"requests": 0, "cache_hits": 0, "retries": 0, "rate_limited": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    for k, v in totals["usage"].get("judge", {}).items():
        judge[k] = judge.get(k, 0) + v
    return {
        "tracejudge_version": manifest["tracejudge_version"],
        "config_hash": manifest["config_hash"],
        "complete": complete,
        "elapsed_s_total": totals["elapsed_s"],
        **journal.summary_aggregate().summary(),
        "judge": judge,
        **(blocks or {}),
        "usage": totals["usage"],
        "segments": journal.segments,
    }
