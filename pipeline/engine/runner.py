"""The staged pipeline: load → (target) → extract → score → (judge) → aggregate.

Each stage is a pool of anyio tasks; consecutive stages are joined by a
bounded memory object stream (`run.queue_size`), so a slow stage holds back
the ones before it and memory stays flat however many cases stream through.
Stages that are not configured are not started: their neighbours are joined
directly (`engine.stage_plan` says which run). The runner wires stages by the names in the config; it never names
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
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from tracejudge.core import registry
from tracejudge.core.config import RunConfig, run_warnings
from tracejudge.core.errors import TracejudgeError, refuse_in_worker_import
from tracejudge.core.lazy_numpy import blas_env, numpy
from tracejudge.core.log import get_logger
from tracejudge.core.records import CaseResult
from tracejudge.engine import config_journal, cursor, manifest_history, run_state, store
from tracejudge.engine import manifest as manifest_mod
from tracejudge.engine.case_metrics import merge_case_metrics as _merge_case_metrics  # noqa: F401  (named here by callers)
from tracejudge.engine.case_metrics import merge_unjudged as _merge_unjudged
from tracejudge.engine.case_metrics import merge_without_judge_metrics as _merge_without_judge_metrics
from tracejudge.engine.checkpoint import RunJournal, recorded_config_hash
from tracejudge.engine.executors import STOP_GRACE_S, CpuJob, open_executor
from tracejudge.engine.executors.base import deterministic_metrics
from tracejudge.engine.fingerprint_ahead import FingerprintAhead
from tracejudge.engine.flow import _Flow
from tracejudge.engine.journal_counts import agent_raised, judge_oversized, judge_refused, worker_died
from tracejudge.engine.live import LiveStatus
from tracejudge.engine.read_ahead import read_ahead
from tracejudge.engine.rendered import Finished
from tracejudge.engine.run_scope import run_scope
from tracejudge.engine.run_summary import _build_summary, _prior_judge
from tracejudge.engine.segment_end import close_segment
from tracejudge.engine.shards import parse_shard, shard_run_dir
from tracejudge.engine.stage_plan import _per_case, build_stages
from tracejudge.stages.score import time_limit

if TYPE_CHECKING:
    from tracejudge.engine.case_digests import CaseDigests
    from tracejudge.stages.load.memory import MemorySource

__all__ = ["RunOutcome", "manifest_for", "preflight", "run"]

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
    retried: int = 0  # provisional failures of earlier segments this one redid
    pending_retries: int = 0  # transient failures standing now, which the same command would redo
    retried_raised: int = 0  # of `retried`, results whose python agent had raised (a bug, not a transient failure)
    raised: list[str] = field(default_factory=list)  # of `pending_retries`, the messages of those whose agent raised
    retried_died: int = 0  # of `retried`, results whose worker process had died (not a transient failure either)
    died: int = 0  # of `pending_retries`, those whose worker process died
    spent_retries: int = 0  # failures standing final: `run.max_resume_retries` retries of each are spent
    most_failures: int = 0  # the most failures one of those has had (the setting that retries them all once more)
    retried_refused: int = 0  # of `retried`, results the judge model had refused to judge (its answer, not a transient failure)
    refused: int = 0  # of `pending_retries`, those the judge model refused to judge
    oversized: dict[str, int] = field(default_factory=dict)  # of `pending_retries`, those refused as too large, by kind
    retried_oversized: int = 0  # of `retried`, results the judge server had refused as too large (`journal_counts.OVERSIZED`)


def manifest_for(config: RunConfig, source: MemorySource | None = None, files: dict[str, Any] | None = None,
                 salt: str | None = None) -> dict[str, Any]:
    """The manifest a run directory records for `config` (see `tracejudge.engine.manifest`); `files`: the dataset
    files' fingerprints when already computed (`engine.fingerprint_ahead`); `salt`: the run directory's (`config_secrets`)."""
    return manifest_mod.manifest_for(config, None if source is None else source.fingerprint, files, salt)


@run_scope
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
    command: dict[str, str] | None = None,
    fingerprints: FingerprintAhead | None = None,
    cancel_after_stop: bool = False,
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
        metrics: metric instances to use instead of building `config.metrics` (the Python API passes metrics that a
            spec cannot rebuild, such as a custom metric defined inside a function); `config.metrics` still names them in the manifest.
        live: filled in as the run goes (cases in flight, the stop grace, what stages wait on) for a display.
        command: `{"line": the command line that resumes the run, "cwd": the folder it is meant for}`, kept on
            this segment's record in `checkpoint.json` (and in `manifest.json` when the run writes it, for a run killed
            before its first checkpoint) so that `tracejudge report` on an interrupted run can give it.
        fingerprints: the hash of `config.dataset`'s files already under way (`engine.fingerprint_ahead`), started by the
            caller as soon as it had the config; the run takes it over and closes it. Without it the run starts its own.
        cancel_after_stop: the caller cancels the run only after setting `stop` (the command line: a first Ctrl-C or
            SIGTERM sets it, a second cancels the run). A cancellation with `stop` unset is then user code's (a metric
            cancelling every task of the loop), and `summary.stopped` says an internal error (exit status 3), not an abort.

    Raises:
        store.LockedError: another process holds the run directory.
        store.ManifestMismatch: the directory holds a run of another config or dataset.
    """
    refuse_in_worker_import("a tracejudge run")
    # The dataset files are hashed in a thread while the run sets up; the manifest takes their fingerprints where
    # it always did (`engine.fingerprint_ahead`). Left by any exit before that, the hash is stopped.
    ahead = fingerprints if fingerprints is not None and source is None and fingerprints.hashes(config) else None
    if fingerprints is not None and ahead is None:
        fingerprints.close()
    if ahead is None and source is None:
        ahead = FingerprintAhead(config)
    try:
        from tracejudge.stages.reports import ReportFeed, finish_run, finish_stopped
        from tracejudge.stages.reports.stopped import stopped_gracefully

        for note in run_warnings(config):
            log.warning(note)
        shard = parse_shard(config.run.shard) if config.run.shard else None
        # Everything that can fail on the config is checked before the run directory is created
        # or its manifest touched: a config error leaves nothing behind.
        fmt = source.format if source is not None else registry.format_for(config.dataset.format)
        given = metrics is not None
        metrics = list(metrics) if metrics is not None else [registry.build_metric(spec) for spec in config.metrics]
        preflight(config)
        ctx = fmt.prepare(config.dataset)
        if source is None:
            from tracejudge.stages.extract.first_records import check_first_records

            check_first_records(fmt, config.dataset, ctx)  # a wrong format is one config error, not a result per line
        run_dir = Path(run_dir or (shard_run_dir(config.run.dir, shard) if shard else config.run.dir))
        if config.assertions.regression is not None:
            from tracejudge.stages.aggregate.gate_regression import refuse_own_baseline

            refuse_own_baseline(config.assertions.regression, run_dir)
        run_dir = _run_dir(run_dir)
        lock = store.RunLock(run_dir)
        try:
            lock.acquire()
        except OSError as exc:  # (a `LockedError`, another process's run, is no OSError: it says who holds the directory)
            raise TracejudgeError(f"run.dir: cannot write in {run_dir}: {exc.strerror or type(exc).__name__} ({lock.path.name})") from None
    except BaseException:
        if ahead is not None:
            ahead.close()
        raise
    journal: RunJournal | None = None
    limit_before = time_limit.seconds()  # (this run's limit is the process's while it runs, then the caller's again)
    try:
        try:
            manifest, changes = _write_manifest(run_dir, config, source, force, ahead, command)
        finally:
            if ahead is not None:
                ahead.close()
        journal = _open_journal(run_dir, config, metrics, manifest, changes)
        if live is not None:  # (the progress display's total: what this segment has left to write)
            live.settled = max(len(journal.done) - len(journal.provisional), 0)
        digests = None if source is None or not source.fingerprinted else _case_digests(run_dir, journal, source, config.run.trials, force)
        if command is not None:
            journal.segment["command"] = dict(command)
        journal.announce()  # before the first result: a run killed before it is still seen as interrupted
        retried_raised, retried_died = len(agent_raised(journal.provisional.values())), worker_died(journal.provisional.values())
        retried_refused, retried_oversized = judge_refused(journal.provisional.values()), sum(judge_oversized(journal.provisional.values()).values())
        resume = None if source is not None else cursor.prepare(run_dir, config, fmt, journal.recovery, journal.done, forced=bool(changes))
        # A run on an empty results file collects its reports' material as it writes, instead of re-reading.
        feed = ReportFeed(list(journal.agg.metrics), config.run.trials) if journal.fresh else None
        journal.on_record = feed.feed if feed is not None else None
        journal.on_records = feed.feed_finished if feed is not None else None
        stop = stop or anyio.Event()
        job = CpuJob(
            format_name="" if source is not None else config.dataset.format, dataset=config.dataset,
            metric_specs=None if given else config.metrics, metrics=metrics if given else None,
            merge=_merge_unjudged if config.judge is None else _merge_without_judge_metrics,
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
            async with executor, anyio.create_task_group() as tg:
                if getattr(executor, "head_waits", False):
                    # numpy (the summary's bootstrap) is imported while this process mostly waits on its workers,
                    # not after the last result, when every other core is idle.
                    tg.start_soon(_import_numpy)
                await flow.run(executor, read_ahead(resume.records, stop) if resume is not None else _records(config, fmt, source, run_dir, digests, stop))
            ended, crashed = ("interrupted" if flow.cut_short else "finished"), None
        except BaseException as exc:
            ended, crashed = "interrupted", exc
            raise
        finally:
            with anyio.CancelScope(shield=True):
                for stage in stages:
                    if stage.aclose is not None:
                        await stage.aclose()
            ended, crashed = close_segment(journal, ended, crashed)  # (a failed write: recorded before the summary is tried)
            blocks = {stage.name: stage.summary() for stage in stages if stage.summary is not None}
            summary = _build_summary(journal, manifest, complete=ended == "finished", blocks=blocks)
            if crashed is not None:
                # finish_run below will not run: the summary of what was done, and reports that say the run stopped and
                # why (an error, an abort), never an earlier segment's PASS (`reports.finish_stopped`).
                finish_stopped(run_dir, summary, config, crashed, segment=journal.segment.get("segment"), results_intact=journal.broken is None,
                               resume=command.get("line") if command else None, stray_cancel=cancel_after_stop and not stop.is_set())
            elif ended == "interrupted" and command and command.get("line"):
                # Stopped without an error (a first Ctrl-C or SIGTERM): the saved reports name the command that resumes
                # the run, as the terminal does (`reports.stopped_gracefully`).
                summary["stopped"] = stopped_gracefully(journal.segment.get("segment"), command["line"], stop.is_set(), flow.cut_at_grace)
        if crashed is not None:
            raise crashed  # (the segment's last results could not be written as it closed: it stopped on that)
        # Writes summary.json (with the verdict) and the reports, each only if it changed, so
        # resuming a finished run leaves the run directory byte- and mtime-identical.
        verdict = finish_run(run_dir, summary, config, feed=feed if journal.broken is None else None)
        if summary.get("complete") and config.aggregate.group_by:
            from tracejudge.stages.aggregate.group_keys import warn_absent_group_keys

            warn_absent_group_keys(run_dir, summary, config.aggregate.group_by)
        return RunOutcome(run_dir, summary, flow.new, flow.skipped, flow.cut_short, verdict, journal.retrying, journal.pending_retries(),
                          retried_raised, agent_raised(journal.provisional.values()), retried_died, worker_died(journal.provisional.values()),
                          *journal.spent_retries(), retried_refused=retried_refused, refused=judge_refused(journal.provisional.values()),
                          oversized=judge_oversized(journal.provisional.values()), retried_oversized=retried_oversized)
    finally:
        time_limit.set_default(limit_before)
        if journal is not None:
            journal.detach()
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


async def _import_numpy() -> None:
    # On a worker thread; the environment it needs (`blas_env`) is set and restored on this one, as no other thread
    # may change it while the event loop starts processes.
    with blas_env():
        await anyio.to_thread.run_sync(_numpy_and_random)


def _numpy_and_random() -> None:
    # numpy.random too: numpy imports it on first use, which was the bootstrap's, after the last result (~8 ms).
    numpy().random  # noqa: B018


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


def _write_manifest(run_dir: Path, config: RunConfig, source: MemorySource | None, force: bool,
                    ahead: FingerprintAhead | None = None, command: dict[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    # Refuses (ManifestMismatch) a directory of another config or dataset unless forced, and a folder no run made whose
    # own files a run would overwrite.
    run_state.refuse_special_files(run_dir)  # (before the manifest is written: a refused resume leaves the directory as it was)
    if mine := run_state.foreign_files(run_dir):
        raise TracejudgeError(f"run.dir: {run_dir} is not a run directory, but holds {', '.join(mine)}, which a run writes and would overwrite: "
                              "name a new or empty folder (run.dir or --run-dir), or move those files away")
    previous = store.read_manifest(run_dir, strict=False)
    # A config's masked values are digested under the salt the directory keeps (`engine.config_secrets`).
    salt = manifest_mod.salt_of(previous if previous is not None else config_journal.last(run_dir))
    manifest = manifest_for(config, source, None if ahead is None else ahead.files(), salt)
    if command is not None:  # a run killed before its first checkpoint is resumed with this (`run_state.resume_command`)
        manifest["command"] = dict(command)
    if not store.has_results(run_dir):
        # No result was computed with the recorded config: nothing to protect, nothing to diff against.
        previous = None
        recorded = None
    else:  # A lost or garbled manifest does not hide a config change: configs.jsonl (never derived) records every config,
        # the checkpoint's segments and summary.json their hashes; a directory where none says is refused (unproven).
        recorded = None if previous else recorded_config_hash(run_dir)
    journaled = config_journal.last(run_dir) if previous is None and store.has_results(run_dir) else None
    # A config an earlier version hashed plainly (credentials and all) is read as this one hashes it, when it is this
    # config (`manifest.upgraded`); a manifest so read is written again, in the new form.
    as_read = previous
    previous, journaled, recorded = (manifest_mod.upgraded(r, manifest, config) for r in (previous, journaled, recorded))
    if manifest_history.known_config(previous, manifest):
        changes: list[str] = []  # a config this directory's results were already computed with (its history)
    elif journaled is not None:
        changes = manifest_mod.check(run_dir, journaled, manifest, force)
    else:
        unproven = previous is None and recorded is None and store.has_results(run_dir)
        changes = manifest_mod.check(run_dir, previous, manifest, force, recorded, unproven=unproven)
    manifest = manifest_history.with_history(previous, manifest, changes)
    # A config that differs only where the hash does not look (assertions, aggregate, budget, …) is written too: `report`
    # on this directory applies the manifest's config, which must be the one the last `run` used, or the two give
    # opposite verdicts (assertions tightened: `run` FAIL, then `report` PASS from the assertions the run began with).
    write = (previous is None or previous is not as_read or changes or previous.get("config_hash") != manifest["config_hash"]
             or previous.get("history") != manifest["history"] or previous.get("config") != manifest["config"])
    if write and not store.has_results(run_dir):
        # Nothing to protect yet: the manifest first, so that a run killed at any moment after it is one `report` calls
        # interrupted, with the command that resumes it (a directory holding configs.jsonl alone read as no run at all).
        store.atomic_write_text(run_dir / store.MANIFEST, json.dumps(manifest, indent=2) + "\n")
        write = False
    config_journal.append(run_dir, manifest)
    if write:
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


def _case_digests(run_dir: Path, journal: RunJournal, source: MemorySource, trials: int, force: bool) -> CaseDigests:
    # Cases from memory are fingerprinted as they are read; a list or tuple, which the run reads again, is checked whole
    # first, so a refusal names every changed case and writes nothing. (msgspec is imported by memory runs only.)
    from tracejudge.engine.case_digests import CaseDigests

    digests = CaseDigests(run_dir, journal.is_done, trials, force)
    if isinstance(source.items, (list, tuple)):
        digests.scan(source.items)
    return digests


def _records(config: RunConfig, fmt: Any, source: MemorySource | None, run_dir: Path, digests: CaseDigests | None = None,
             stop: anyio.Event | None = None) -> AsyncIterator[Any]:
    if source is not None:
        return source.records() if digests is None else digests.checked(source.records())
    dataset = fmt.bind(config.dataset, run_dir) if fmt.bind is not None else config.dataset
    return read_ahead(fmt.read(dataset), stop)  # (a server's pages, a file's records: the event loop goes on meanwhile)
