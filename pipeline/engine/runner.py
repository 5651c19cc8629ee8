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

import functools
import gc
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from tracejudge.core import registry
from tracejudge.core.config import WORKERS_DEPRECATED, RunConfig
from tracejudge.core.errors import TracejudgeError, leaves, refuse_in_worker_import
from tracejudge.core.log import get_logger
from tracejudge.core.records import WORKER_ERROR, CaseResult, ErrorInfo, Status
from tracejudge.core.work import Stage, Work
from tracejudge.engine import config_journal, cursor
from tracejudge.engine import manifest as manifest_mod
from tracejudge.engine import store
from tracejudge.engine.admit import Admission, safe_text
from tracejudge.engine.checkpoint import RunJournal, recorded_config_hash
from tracejudge.engine.executors import STOP_GRACE_S, CpuJob, Executor, Extracted, open_executor
from tracejudge.engine.executors.base import deterministic_metrics
from tracejudge.engine.executors.pump import Mapped, ordered_map
from tracejudge.engine.keyset import FirstSeen, key_hash, trial_key
from tracejudge.engine.live import LiveStatus
from tracejudge.engine.rendered import Finished
from tracejudge.engine.shards import Shard, parse_shard, shard_index, shard_run_dir
from tracejudge.stages.score import time_limit

if TYPE_CHECKING:
    from tracejudge.stages.load.memory import MemorySource

__all__ = ["RunOutcome", "manifest_for", "preflight", "run"]

log = get_logger("tracejudge.runner")

_PLAIN_CHUNK = 64  # raw records per chunk when nothing runs after the executor (~20 ms of extract and score in-process)


@dataclass
class RunOutcome:
    """What a run (or one segment of a resumed run) did."""

    run_dir: Path
    summary: dict[str, Any]
    new_results: int
    skipped_finished: int
    interrupted: bool
    verdict: Any = None  # stages.gate.Verdict: the assertions' PASS/FAIL
    retried: int = 0  # provisional failures of earlier segments this one redid
    pending_retries: int = 0  # transient failures standing now, which the same command would redo


def manifest_for(config: RunConfig, source: MemorySource | None = None) -> dict[str, Any]:
    """The manifest a run directory records for `config` (see `tracejudge.engine.manifest`)."""
    return manifest_mod.manifest_for(config, None if source is None else source.fingerprint)


_P = ParamSpec("_P")


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Collect cyclic garbage less often while a run goes, then restore the process's settings.

    A run allocates millions of short-lived containers (parsed traces, scores) that reference
    counting frees; the cyclic collector still ran ~800 times over 10,000 cases, each pass
    also walking every object imported at start-up (pydantic schemas, modules): ~5% of a
    deterministic run. Objects alive at the start are frozen out of the passes and
    generation 0 is collected every 50,000 allocations instead of 700. Nothing a run
    computes depends on when the collector runs.
    """
    before, ours = gc.get_threshold(), (50_000, 20, 20)
    if before == ours:  # inside another run (the Python API, a thread): that one restores
        yield
        return
    gc.freeze()
    gc.set_threshold(*ours)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def _with_fewer_collections(fn: Callable[_P, Awaitable[RunOutcome]]) -> Callable[_P, Awaitable[RunOutcome]]:
    @functools.wraps(fn)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> RunOutcome:
        with _fewer_collections():
            try:
                return await fn(*args, **kwargs)
            except BaseExceptionGroup as group:
                # A stage that says no case can succeed (bad credentials, an unguarded script) raises
                # inside the task groups; the caller gets that error itself, one `except` away, not
                # nested in groups beside the cancellations it caused.
                ours = next((e for e in leaves(group) if isinstance(e, TracejudgeError)), None)
                if ours is None:
                    raise
                raise ours from None

    return wrapper


@_with_fewer_collections
async def run(
    config: RunConfig,
    *,
    run_dir: Path | None = None,
    force: bool = False,
    stop: anyio.Event | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    source: MemorySource | None = None,
    metrics: Sequence[Any] | None = None,
    live: LiveStatus | None = None,
) -> RunOutcome:
    """Run the pipeline for `config`, writing to `run_dir` (default `config.run.dir`, or its
    `-shard-I-of-N` sibling when `config.run.shard` is set: then only that shard's cases run).

    Args:
        stop: when set, no new case is taken; cases in flight finish and are written
            (CPU work still computing `STOP_GRACE_S` later is cancelled and redone on resume).
        on_result: called with each new result (progress display): a `CaseResult`, or for a result
            rendered where it was scored an `engine.rendered.Finished`, which reads the same
            (`case_id`, `trial`, `status`, `scores` values and verdicts) and whose `.result()` is the model.
        source: cases from memory (`tracejudge.stages.load.memory.MemorySource`) read instead of
            `config.dataset`'s file; the manifest then records no file fingerprint.
        metrics: metric instances to use instead of building `config.metrics`
            (the Python API passes metrics that a spec cannot rebuild, such as a
            custom metric defined inside a function); `config.metrics` still
            names them in the manifest.
        live: filled in as the run goes (cases in flight, the stop grace, what stages wait on) for a display.

    Raises:
        store.LockedError: another process holds the run directory.
        store.ManifestMismatch: the directory holds a run of another config or dataset.
    """
    from tracejudge.stages.reports import ReportFeed, finish_run

    refuse_in_worker_import("a tracejudge run")
    if "workers" in config.run.model_fields_set:
        log.warning(WORKERS_DEPRECATED)
    shard = parse_shard(config.run.shard) if config.run.shard else None
    # Everything that can fail on the config is checked before the run directory is created
    # or its manifest touched: a config error leaves nothing behind.
    fmt = source.format if source is not None else registry.format_for(config.dataset.format)
    given = metrics is not None
    metrics = list(metrics) if metrics is not None else [registry.build_metric(spec) for spec in config.metrics]
    preflight(config)
    ctx = fmt.prepare(config.dataset)
    run_dir = _run_dir(Path(run_dir or (shard_run_dir(config.run.dir, shard) if shard else config.run.dir)))
    lock = store.RunLock(run_dir)
    lock.acquire()
    try:
        manifest, changes = _write_manifest(run_dir, config, source, force)
        journal = _open_journal(run_dir, config, metrics, manifest, changes)
        resume = None if source is not None else cursor.prepare(run_dir, config, fmt, journal.recovery, journal.done, forced=bool(changes))
        # A run on an empty results file collects its reports' material as it writes, instead of re-reading.
        feed = ReportFeed(list(journal.agg.metrics), config.run.trials) if journal.fresh else None
        journal.on_record = feed.feed if feed is not None else None
        stop = stop or anyio.Event()
        job = CpuJob(
            format_name="" if source is not None else config.dataset.format, dataset=config.dataset,
            metric_specs=None if given else config.metrics, metrics=metrics if given else None,
            merge=_merge_case_metrics if config.judge is None else _merge_without_judge_metrics,
            score=config.target is None, keep_case=True, metric_timeout_s=config.run.metric_timeout_s,
            fmt=fmt, ctx=ctx, _built=(fmt, ctx, deterministic_metrics(metrics)),
        )
        time_limit.set_default(config.run.metric_timeout_s)  # (`_built` is given: build() does not set it in this process)
        executor = open_executor(config, job)
        stages = build_stages(
            config, _per_case(metrics), run_dir=run_dir, prior_judge=_prior_judge(run_dir, journal.judge_spent),
            score=config.target is not None, judge_resources=getattr(executor, "judge_resources", None), stop=stop,
            target_attempt=getattr(executor, "target_attempt", None),
        )
        journal.usage_source = lambda: {st.name: dict(st.usage()) for st in stages if st.usage is not None}
        job.keep_case = bool(stages)  # no later stage reads the trace: workers send back only id, tags and metadata
        if not stages:  # a scored case's result is settled where it is scored: rendered there (`engine.rendered`)
            job.render_keys = list(feed.keys) if feed is not None else []
        live = live if live is not None else LiveStatus()
        live.probes = [st.activity for st in stages if st.activity is not None]
        live.paces = [st.pace for st in stages if st.pace is not None]
        names = {st.name for st in stages}
        # A live target's cases are not cut: they finish or time out (`target.timeout_s`).
        live.grace_s = None if "target" in names else (config.judge.stop_grace_s if "judge" in names and config.judge else STOP_GRACE_S)
        flow = _Flow(config, journal, stop, on_result, stages, fmt.peek_id, shard, live, resume)
        try:
            async with executor:
                await flow.run(executor, _aiter(resume.records) if resume is not None else _records(config, fmt, source, run_dir))
            ended, crashed = ("interrupted" if flow.cut_short else "finished"), False
        except BaseException:
            ended, crashed = "interrupted", True
            raise
        finally:
            with anyio.CancelScope(shield=True):
                for stage in stages:
                    if stage.aclose is not None:
                        await stage.aclose()
            journal.close(ended)
            blocks = {stage.name: stage.summary() for stage in stages if stage.summary is not None}
            summary = _build_summary(journal, manifest, complete=ended == "finished", blocks=blocks)
            if crashed and journal.broken is None:  # finish_run below will not run: keep the summary of what was done
                store.write_text_if_changed(run_dir / store.SUMMARY, json.dumps(summary, indent=2) + "\n")
        # Writes summary.json (with the verdict) and the reports, each only if it changed, so
        # resuming a finished run leaves the run directory byte- and mtime-identical.
        verdict = finish_run(run_dir, summary, config, feed=feed if journal.broken is None else None)
        return RunOutcome(run_dir, summary, flow.new, flow.skipped, flow.cut_short, verdict, journal.retrying, journal.pending_retries())
    finally:
        lock.release()


def preflight(config: RunConfig) -> None:
    """Raise `ConfigError` for what would stop the run's stages, before anything is created.

    Checked: the target (`tracejudge.stages.target.check_target`: an import,
    header variables, a program, a traces file) and the judge's API key
    variable. The config's own files were checked when it loaded.
    """
    if config.target is not None:
        from tracejudge.stages.target import check_target

        check_target(config.target)
    if config.judge is not None:
        from tracejudge.stages.judge.stage import api_key

        api_key(config)


def _per_case(metrics: list[Any]) -> list[Any]:
    # Metrics over trials (PassAtK) are computed by the aggregate, not per case.
    return [m for m in metrics if not getattr(m, "over_trials", False)]


def _run_dir(run_dir: Path) -> Path:
    # One line naming the directory and why, not a traceback: the path is the user's to fix.
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise TracejudgeError(f"run.dir: {run_dir} exists and is not a directory") from None
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(run_dir) else ""
        raise TracejudgeError(f"run.dir: cannot create {run_dir}: {exc.strerror or type(exc).__name__}{where}") from None
    return run_dir


def _write_manifest(run_dir: Path, config: RunConfig, source: MemorySource | None, force: bool) -> tuple[dict[str, Any], list[str]]:
    # Refuses (ManifestMismatch) a directory of another config or dataset unless forced.
    manifest = manifest_for(config, source)
    previous = store.read_manifest(run_dir, strict=False)
    if not store.has_results(run_dir):
        # No result was computed with the recorded config: nothing to protect, nothing to diff against.
        previous = None
        recorded = None
    else:  # A lost or garbled manifest does not hide a config change: configs.jsonl (never derived) records every config,
        # the checkpoint's segments and summary.json their hashes; a directory where none says is refused (unproven).
        recorded = None if previous else recorded_config_hash(run_dir)
    journaled = config_journal.last(run_dir) if previous is None and store.has_results(run_dir) else None
    if manifest_mod.known_config(previous, manifest):
        changes: list[str] = []  # a config this directory's results were already computed with (its history)
    elif journaled is not None:
        changes = manifest_mod.check(run_dir, journaled, manifest, force)
    else:
        unproven = previous is None and recorded is None and store.has_results(run_dir)
        changes = manifest_mod.check(run_dir, previous, manifest, force, recorded, unproven=unproven)
    manifest = manifest_mod.with_history(previous, manifest, changes)
    config_journal.append(run_dir, manifest)
    if previous is None or changes or previous.get("config_hash") != manifest["config_hash"] or previous.get("history") != manifest["history"]:
        store.atomic_write_text(run_dir / store.MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return manifest, changes


def _open_journal(run_dir: Path, config: RunConfig, metrics: list[Any], manifest: dict[str, Any], changes: list[str]) -> RunJournal:
    from tracejudge.stages.aggregate.fold import aggregator_for

    journal = RunJournal.open(
        run_dir,
        metric_keys=[m.key for m in metrics],
        new_aggregator=lambda: aggregator_for(config, metrics),
        config_hash=manifest["config_hash"],
        dataset_fingerprint=manifest.get("dataset_fingerprint"),
        forced=bool(changes),
        flush_every=config.run.flush_every,
        max_retries=config.run.max_resume_retries,
    )
    if journal.finished or journal.segments:
        log.info("resuming", run_dir=str(run_dir), finished=journal.finished, segment=journal.segment["segment"],
                 forced_changes=changes, **journal.recovery)
    return journal


def _records(config: RunConfig, fmt: Any, source: MemorySource | None, run_dir: Path) -> AsyncIterator[Any]:
    if source is not None:
        return source.records()
    dataset = fmt.bind(config.dataset, run_dir) if fmt.bind is not None else config.dataset
    return _athread(fmt.read(dataset)) if fmt.remote else _aiter(fmt.read(dataset))


async def _athread(items: Iterable[Any]) -> AsyncGenerator[Any, None]:
    """`items` advanced in a worker thread: a server's pages are fetched without stopping the event loop."""
    it = iter(items)
    done = object()
    while (item := await anyio.to_thread.run_sync(next, it, done)) is not done:
        yield item


class _Flow:
    """The pipeline's shape: load → executor (extract, score) → admit → stages (target, score, judge) → sink.

    Consecutive steps are joined by bounded memory object streams carrying
    small chunks (one hop per chunk keeps the loop's share of a case low); a
    stream feeding a concurrent (I/O) stage carries single items, so that
    stage's `workers` is its true concurrency.
    """

    def __init__(self, config: RunConfig, journal: RunJournal, stop: anyio.Event, on_result: Callable[[CaseResult], None] | None,
                 stages: list[Stage], peek: Callable[[Any], str | None] | None, shard: Shard | None = None, live: LiveStatus | None = None,
                 resume: cursor.Resume | None = None) -> None:
        self.config, self.journal, self.stop, self.on_result, self.stages, self.peek = config, journal, stop, on_result, stages, peek
        self.live = live if live is not None else LiveStatus()
        self.shard = shard
        self.trials = config.run.trials
        self.chunk = min(config.run.chunk_size, config.run.queue_size)
        self.capacity = max(2, config.run.queue_size // self.chunk)
        self.raw_chunk = self.chunk
        seen = resume.seen if resume is not None else FirstSeen(size_hint=len(journal.done))
        self.admission = Admission(journal.done, journal.is_done, seen, self.trials)
        self.new = 0
        # The resume cursor (`tracejudge.engine.cursor`) notes every record read and is saved with each checkpoint;
        # the records it skipped count as the full read would have counted them.
        self.tracker = resume.tracker if resume is not None else None
        self.read_skipped = resume.skipped if resume is not None else 0
        if resume is not None:
            resume.tracker.added = self.admission.added
            journal.on_checkpoint = lambda: resume.save(journal.done, journal.provisional)
        self.cut_short = False

    @property
    def skipped(self) -> int:
        return self.read_skipped + self.admission.skipped

    async def run(self, executor: Executor, records: AsyncIterator[Any]) -> None:
        # An executor that pays a hop per chunk (a pipe to a worker) asks for larger chunks of raw records;
        # so does a run with no stage after the executor, whose every hop is pure overhead (no I/O waits on it).
        self.raw_chunk = max(self.chunk, getattr(executor, "min_chunk", 0), 0 if self.stages else _PLAIN_CHUNK)
        sink_done = anyio.Event()
        async with anyio.create_task_group() as tg:
            raw_send, raw_recv = anyio.create_memory_object_stream[list[Any]](self.capacity)
            tg.start_soon(self.load, records, raw_send)
            mapped_send, mapped_recv = anyio.create_memory_object_stream[Mapped](self.capacity)
            tg.start_soon(ordered_map, executor, raw_recv, mapped_send, self.stop)
            send, recv = anyio.create_memory_object_stream[list[Work]](self.capacity)
            tg.start_soon(self.admit, mapped_recv, send, self.feeds_concurrent(0))
            for i, stage in enumerate(self.stages):
                nxt_send, nxt_recv = anyio.create_memory_object_stream[list[Work]](self.capacity)
                async with recv, nxt_send:
                    for _ in range(stage.workers):
                        tg.start_soon(self.worker, stage, recv.clone(), nxt_send.clone(), self.feeds_concurrent(i + 1))
                recv = nxt_recv
            tg.start_soon(self.sink, recv, sink_done)
            tg.start_soon(self.flusher, sink_done)

    def feeds_concurrent(self, i: int) -> bool:
        return i < len(self.stages) and (self.stages[i].workers > 1 or self.stages[i].io)

    def foreign(self, case_id: str | None) -> bool:
        # Another shard's case (`run.shard`): not scored, not written, not counted.
        return self.shard is not None and case_id is not None and shard_index(safe_text(case_id), self.shard[1]) != self.shard[0]

    def finished(self, raw: Any, pid: str | None) -> bool:
        # Resume fast path: a record whose every trial is finished is skipped unparsed,
        # unless it repeats an id seen earlier (then extract decides, as it did the first time).
        # `pid` is the record's peeked id (None: unreadable, or no id to peek).
        if pid is None:
            return False
        h = key_hash(pid)
        return all(self.journal.is_done(trial_key(h, t)) for t in range(self.trials)) and self.admission.seen.claim_first(h, raw.file, raw.line)

    async def load(self, records: AsyncIterator[Any], send: MemoryObjectSendStream[list[Any]]) -> None:
        # Nothing finished yet (a fresh run): no record can be skipped, so none is peeked and hashed for it.
        peek = self.peek if len(self.journal.done) or self.shard is not None else None
        async with send, aclosing(records):  # type: ignore[type-var]
            batch: list[Any] = []
            async for raw in records:
                if self.stop.is_set():
                    self.cut_short = True
                    break
                # One peek a record, shared by the cursor, the shard filter and the skip of finished records.
                pid = self.peek(raw.payload) if (peek is not None or self.tracker is not None) and raw.error is None else None
                if self.tracker is not None:
                    self.tracker.read(raw, pid)
                if peek is not None and self.shard is not None and self.foreign(pid):
                    continue  # known from the id alone: not even parsed
                if peek is not None and self.finished(raw, pid):
                    self.read_skipped += self.trials
                    if self.read_skipped % 512 == 0:
                        await anyio.lowlevel.checkpoint()  # let signals and flushes in
                    continue
                batch.append(raw)
                if len(batch) >= self.raw_chunk:
                    await send.send(batch)
                    batch = []
            if batch:
                await send.send(batch)

    async def admit(self, recv: MemoryObjectReceiveStream[Mapped], send: MemoryObjectSendStream[list[Work]], single: bool) -> None:
        from tracejudge.stages.extract import raw_case_id

        async with recv, send:
            async for mapped in recv:
                if self.stop.is_set():
                    # Stopping: a chunk the executor hands back now is not admitted (nothing is
                    # written for it; the resume redoes it), so a stop takes effect at once even
                    # when no stage follows the executor.
                    self.cut_short = True
                    continue
                out = mapped.out
                if out is None and mapped.broken is not None:
                    out = self.worker_died(mapped, raw_case_id)
                if out is None:  # cut short by a stop: not written, redone on resume
                    self.cut_short = True
                    continue
                works = [w for item in out if not self.foreign(_case_id(item)) for w in self.admission.works(item, mapped.started)]
                self.live.in_flight += len(works)
                await _emit(send, works, single)

    def worker_died(self, mapped: Mapped, raw_case_id: Callable[[Any], str]) -> list[Extracted] | None:
        """The results of a chunk whose worker died: provisional `worker_error`s under the cases' real ids.

        A worker's death (the OOM killer, a crash in C code) is an infrastructure fault, not the
        record's: the journal keeps these results provisional, so the next segment redoes them and
        its results supersede these lines. A record whose id cannot be read without extracting it
        is not written at all (a `file:line` key would never be superseded): the run counts as
        cut short and the resume redoes it. Returns None when nothing of the chunk is written.
        """
        out = []
        for raw in mapped.chunk:
            cid = self.peek(raw.payload) if self.peek is not None and raw.error is None else None
            if cid is None and isinstance(raw.payload, dict) and raw.error is None:
                cid = raw_case_id(raw) if isinstance(raw.payload.get("id"), (str, int)) else None
            if cid is None and raw.error is not None:
                cid = raw_case_id(raw)  # unreadable anyway: extract would report it under this key too
            if cid is None:
                self.cut_short = True
                continue
            out.append(Extracted(raw.file, raw.line, error=(cid, ErrorInfo(kind=WORKER_ERROR, message=mapped.broken or "",
                                                                           file=raw.file, line=raw.line))))
        log.warning("a worker process died; its cases are provisional and redone by the next run",
                    cases=len(out), not_written=len(mapped.chunk) - len(out), error=(mapped.broken or "")[:200])
        return out or None

    async def worker(self, stage: Stage, recv: MemoryObjectReceiveStream[list[Work]], send: MemoryObjectSendStream[list[Work]], single: bool) -> None:
        async with recv, send:
            async for works in recv:
                if self.stop.is_set():
                    # Stopping: work no stage has started is dropped, not written, so the
                    # resume redoes it; only what is already in a stage's hands finishes.
                    self.cut_short = True
                    self.live.in_flight -= len(works)
                    continue
                for work in works:
                    if not work.failed:
                        self.live.working += 1
                        try:
                            await stage.process(work)
                        except TracejudgeError:
                            raise  # the stage says no case can succeed (bad judge credentials): stop, write nothing of it
                        except Exception as exc:  # a stage bug must cost one case, not the run
                            work.result.status = Status.invalid_input if stage.name == "score" else Status.target_error
                            work.result.error = ErrorInfo(kind=f"{stage.name}_error", message=f"{type(exc).__name__}: {exc}")
                        finally:
                            self.live.working -= 1
                await _emit(send, works, single)

    async def sink(self, recv: MemoryObjectReceiveStream[list[Work]], sink_done: anyio.Event) -> None:
        async with recv:
            async for works in recv:
                batch: list[Finished] = []  # results rendered where they were scored: recorded together, in order
                for work in works:
                    self.live.in_flight -= 1
                    if work.scratch.get("unfinished"):
                        # A stage cut this work short (a stop's grace ran out): not written, so the resume redoes it.
                        self.cut_short = True
                        continue
                    result = work.result
                    result.duration_s = round(time.perf_counter() - work.started, 6)
                    if type(result) is Finished:
                        batch.append(result)
                        continue
                    await self.record_finished(batch)
                    try:
                        written = self.journal.record(result)
                    except ValueError as exc:  # text JSON cannot carry (a lone surrogate)
                        result = _unencodable(result, exc)
                        written = self.journal.record(result)
                    if written:
                        self._after_write(result)
                await self.record_finished(batch)
        sink_done.set()

    async def record_finished(self, batch: list[Finished]) -> None:
        """Record `batch` (results rendered where they were scored, in arrival order), then empty it.

        In pieces that fill the writer's pending group up to `run.flush_every`, each recorded at once and
        flushed (its fsync off the event loop) when due: groups are what one `record` per result makes.
        """
        journal, at = self.journal, 0
        while at < len(batch):
            piece = batch[at:at + journal.room()]
            at += len(piece)
            try:
                due = journal.record_finished(piece)
            except ValueError:  # (nothing of the piece was recorded) text JSON cannot carry: each takes the general path
                for done in piece:
                    try:
                        journal.record(done)
                        result: Any = done
                    except ValueError as exc:
                        result = _unencodable(done, exc)  # type: ignore[arg-type]
                        journal.record(result)
                    self._after_write(result)
                continue
            if due:
                await journal.aflush()
            for done in piece:
                self._after_write(done)
        batch.clear()

    def _after_write(self, result: CaseResult | Finished) -> None:
        """What follows the writing of one new result: warnings for its timed-out metrics, the count, `on_result`."""
        timed_out = result.rendered.timed_out if type(result) is Finished else (
            k for k, s in result.scores.items() if s.value is None and s.reason.startswith("metric_timeout:"))
        for key in timed_out:
            log.warning("metric timed out; the case goes on without its score", metric=key, case_id=result.case_id,
                        trial=result.trial, limit_s=self.config.run.metric_timeout_s)
        self.new += 1
        if self.on_result is not None:
            self.on_result(result)

    async def flusher(self, sink_done: anyio.Event) -> None:
        # Results that trickle in (a slow judge) still reach the disk within flush_seconds.
        while not sink_done.is_set():
            with anyio.move_on_after(0.1):
                await sink_done.wait()
            self.journal.tick()


def _case_id(item: Extracted) -> str:
    if item.rendered is not None:
        return item.rendered.id
    return item.case.id if item.case is not None else item.error[0]  # type: ignore[index]


async def _emit(send: MemoryObjectSendStream[list[Any]], items: list[Any], single: bool) -> None:
    if single:
        for item in items:
            await send.send([item])
    elif items:
        await send.send(items)


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
    config: RunConfig, metrics: list[Any], run_dir: Path | None = None, prior_judge: dict[str, Any] | None = None, score: bool = True,
    judge_resources: Callable[[RunConfig, dict[str, Any]], Any] | None = None, stop: anyio.Event | None = None,
    target_attempt: Callable[..., Any] | None = None,
) -> list[Stage]:
    """The stages between extract and aggregate that this config needs, in order.

    Unconfigured stages (no target, no judge metric) are left out, so their
    neighbours are joined directly. `run_dir` is where stages keep their own
    files (the target's `traces.jsonl`); without it they keep none.
    `prior_judge` is the judge block of an earlier segment of the same run
    (its spending counts against the budget). `score: false` leaves the
    score stage out (the executor scores while extracting). `judge_resources`
    gives the judge's limiter, budget and cache (default: in-process ones,
    `tracejudge.stages.judge.stage.local_resources`). `stop` is the run's stop
    event: the judge cuts requests still in flight `judge.stop_grace_s` after
    it is set. `target_attempt(case, trial)` runs the live target elsewhere
    (the Ray executor's workers) instead of on the event loop. Raises
    `ConfigError` when the judge's API key variable is unset.
    """
    from tracejudge.stages.judge import JudgeMetric
    from tracejudge.stages.score import score_stage

    plain = [m for m in metrics if not isinstance(m, JudgeMetric)]
    judged = [m for m in metrics if isinstance(m, JudgeMetric)]
    # A case's own judge metrics need the judge stage even when the run lists none; without a
    # `judge:` section they stay in the score stage, whose evaluate() says that they need one.
    with_judge = bool(judged) or config.judge is not None

    def deterministic(run_metrics: Any, specs: list[dict[str, Any]]) -> list[Any]:
        return [m for m in _merge_case_metrics(run_metrics, specs) if not (with_judge and isinstance(m, JudgeMetric))]

    stages: list[Stage] = []
    if config.target is not None:
        from tracejudge.stages.target import target_stage

        stages.append(target_stage(config, run_dir, remote=target_attempt))
    if score:
        stages.append(score_stage(plain, deterministic))
    if with_judge:
        # Imported only here: the judge's HTTP client (aiohttp) and simulator cost a deterministic run ~0.4 s of start-up.
        from tracejudge.stages.judge.stage import judge_stage

        stages.append(judge_stage(config, judged, _merge_case_metrics, prior_judge, run_dir=run_dir, stop=stop, resources=judge_resources))
    return stages


def _prior_judge(run_dir: Path, spent: dict[str, int]) -> dict[str, Any]:
    """What earlier segments spent on the judge: their summary block, corrected by the results.

    A segment killed with SIGKILL never wrote its summary, but its results carry
    the tokens each score cost, and the spend journal (`judge_spend.jsonl`,
    `tracejudge.llm.spend_journal`) every answer paid for, including those
    whose case had no result line yet at the kill; the larger is what was
    spent, so the budget and the summary hold across a kill (only requests
    in flight at the kill are unseen).
    """
    from tracejudge.llm.spend_journal import spend_totals

    block = dict(_prior_block(run_dir, "judge") or {})

    def tokens(d: dict[str, Any]) -> int:
        return int(d.get("input_tokens") or 0) + int(d.get("output_tokens") or 0)

    if tokens(spent) > tokens(block):
        block["input_tokens"], block["output_tokens"] = spent["input_tokens"], spent["output_tokens"]
        block["requests"] = max(int(block.get("requests", 0)), spent["requests"])
        block["answered"] = max(int(block.get("answered", 0)), spent.get("answered", 0))
        for k in ("grouped_requests", "parts_reasked_alone"):
            block[k] = max(int(block.get(k, 0)), spent.get(k, 0))
        block["cost_usd"] = block["sync_equivalent_usd"] = None  # unknown here: the judge stage prices the tokens
    paid = spend_totals(run_dir)
    if paid is not None and tokens(paid) > tokens(block):
        block["input_tokens"], block["output_tokens"] = paid["input_tokens"], paid["output_tokens"]
        block["requests"] = max(int(block.get("requests", 0)), paid["requests"])
        block["cost_usd"], block["sync_equivalent_usd"] = paid["cost_usd"], None  # the journal has the dollars paid
    return block


def _prior_block(run_dir: Path, name: str) -> dict[str, Any] | None:
    try:
        block = json.loads((run_dir / "summary.json").read_text()).get(name)
    except (OSError, ValueError, AttributeError):
        return None
    return block if isinstance(block, dict) else None


def _merge_case_metrics(run_metrics: Sequence[Any], specs: list[dict[str, Any]]) -> list[Any]:
    # Case-level metrics add to the run's; one with the same key replaces the run's for this case.
    # A spec that does not validate costs only itself: it scores null with the error as reason.
    from tracejudge.stages.score.base import InvalidSpec

    extra = []
    for i, spec in enumerate(specs):
        try:
            extra.append(registry.build_metric(spec))
        except registry.SpecError as exc:
            named = spec if isinstance(spec, dict) else {}
            key = next((v for v in (named.get("name"), named.get("type")) if isinstance(v, str) and v), f"metrics[{i}]")
            field = ".".join(map(str, ("metrics", i, *exc.loc)))
            extra.append(InvalidSpec(name=key, problem=f"case metric spec {field} does not validate: {exc.msg}"))
    keys = {m.key for m in extra}
    return [m for m in run_metrics if m.key not in keys] + extra


def _merge_without_judge_metrics(run_metrics: Sequence[Any], specs: list[dict[str, Any]]) -> list[Any]:
    # With a judge stage, a case's own judge metrics are the judge's to score, not the workers'.
    # Module-level so a worker process can unpickle it.
    from tracejudge.stages.judge import JudgeMetric

    return [m for m in _merge_case_metrics(run_metrics, specs) if not isinstance(m, JudgeMetric)]


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
    if blocks and "judge" in blocks:  # the gate's counts, rebuilt from results.jsonl (true after a kill)
        blocks = {**blocks, "judge": journal.fix_judge_block(blocks["judge"])}
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
        **({"configs": mixed} if (mixed := manifest_mod.configs_by_segment(manifest, journal.segments)) else {}),
    }
