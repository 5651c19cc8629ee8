"""`tracejudge run`: the run under signal handling and a progress display, then its summary and verdict."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tracejudge.core.errors import ConfigError, TracejudgeError
from tracejudge.entrypoints.commands.exits import EXIT_INTERRUPTED
from tracejudge.entrypoints.commands.retry_causes import pending_note as _pending  # noqa: F401  (named here by callers)
from tracejudge.entrypoints.commands.retry_causes import retried_note

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command", "rescore", "resume_command"]


def rescore(args: argparse.Namespace, config, err: Console):
    """The config and run directory of `run --rescore RUN_DIR`.

    The output goes to `--run-dir`, else the config's `run.dir`, else (when
    that is the recorded run itself) to `RUN_DIR-rescore`: a recorded run is
    never written into.
    """
    from tracejudge.stages.target import rescore_config

    recorded = args.rescore.resolve()
    out = (args.run_dir or config.run.dir).resolve()
    if out == recorded:
        if args.run_dir is not None:
            raise ConfigError(f"--run-dir {args.run_dir}: cannot re-score into the recorded run itself; give another directory")
        out = recorded.with_name(recorded.name + "-rescore")
    err.print(f"re-scoring the traces recorded in {recorded} into {out}", highlight=False)
    return rescore_config(config, recorded), out


def resume_command(args: argparse.Namespace, run_dir: Path | None) -> str:
    """The command line that resumes this run, from the parsed arguments.

    `--force` and `--fresh` are dropped (the run directory now holds this
    config, and `--fresh` again would start over in yet another directory,
    leaving this run's results behind), and `--run-dir` names the directory
    actually used when it is not the config's default; every other option
    given is kept. Paths are as typed, so the command is meant for the same
    working directory. Its `--set` values are masked as the run's recorded
    config masks them (`redact_command.redact_argv`: every place that prints or
    records the command gets this text), and a line that had one masked ends
    saying so (`MASKED_NOTE`): it cannot be run as printed.
    """
    from tracejudge.llm.redact_command import redact_argv

    parts = ["tracejudge"]
    if args.log_level != "warning":
        parts += ["--log-level", args.log_level]
    parts += ["run", str(args.config)]
    if run_dir is not None:
        parts += ["--run-dir", str(run_dir)]
    for item in args.overrides:
        parts += ["--set", item]
    if getattr(args, "shard", None) is not None:
        parts += ["--shard", args.shard]
    if getattr(args, "rescore", None) is not None:
        parts += ["--rescore", str(args.rescore)]
    if getattr(args, "explain_cache", False):
        parts.append("--explain-cache")
    if args.no_progress:
        parts.append("--no-progress")
    if getattr(args, "progress_every", _PROGRESS_EVERY) != _PROGRESS_EVERY:
        parts += ["--progress-every", f"{args.progress_every:g}"]
    return redact_argv(parts)


_PROGRESS_EVERY = 10.0  # `--progress-every`'s default (`commands.parser`): left out of the command when unchanged

# How an error that stops a run says to resume it (`reports.stopped.SAME_COMMAND`): true of the command typed, unless that
# started over (`--fresh`), which would start over again. Such a run's errors name the command that resumes instead
# (`_resume_hint`), as its saved summary does (`reports.finish_stopped`).


def _resume_hint(exc: BaseException, resume: str) -> None:
    """Make each of tracejudge's own errors in `exc` that says to run the same command name `resume` instead."""
    from tracejudge.core.errors import leaves
    from tracejudge.stages.reports.stopped import SAME_COMMAND

    for leaf in leaves(exc):
        if isinstance(leaf, TracejudgeError) and len(leaf.args) == 1 and SAME_COMMAND in str(leaf.args[0]):
            leaf.args = (str(leaf.args[0]).replace(SAME_COMMAND, f"resume with: {resume}"),)


def command(args: argparse.Namespace, config, err: Console, ahead=None) -> int:
    """`tracejudge run`: run (or resume) the config's pipeline, print the summary and the verdict; the exit status is the verdict's.

    `ahead`: the hash of the dataset started from the config's text (`engine.fingerprint_ahead.ahead_of_source`), or
    None; this command owns it from here (it stops it, unless the run takes it over).
    """
    from tracejudge.engine.fingerprint_ahead import FingerprintAhead

    # The dataset is hashed for the manifest while this command imports and sets up the run (`engine.fingerprint_ahead`);
    # the run takes the hash over, and a command that starts no run stops it.
    if ahead is not None and not ahead.hashes(config):
        ahead.close()  # (the validated config names other files)
        ahead = None
    fingerprints = ahead if ahead is not None else FingerprintAhead(config)
    try:
        return _command(args, config, err, fingerprints)
    finally:
        fingerprints.close()


def _command(args: argparse.Namespace, config, err: Console, fingerprints) -> int:
    import anyio
    from rich.markup import escape
    from tracejudge.core import registry
    from tracejudge.core.console import stdout_console
    from tracejudge.engine import runner, store
    from tracejudge.engine.live import LiveStatus
    from tracejudge.engine.progress import make_progress
    from tracejudge.stages.load.framing import count_quietly
    from tracejudge.entrypoints.launch import interrupted_at_startup
    from tracejudge.stages.aggregate.gate import baseline_note, print_verdict
    from tracejudge.stages.reports.terminal import print_summary

    if args.explain_cache:
        config = config.model_copy(update={"cache": config.cache.model_copy(update={"explain": True})})
    run_dir = args.run_dir
    if args.fresh:
        runner.preflight(config)  # a config error must not leave a new, empty run directory behind
        if args.rescore is None:
            from tracejudge.stages.extract.first_records import check_dataset

            check_dataset(config)  # nor a dataset the run refuses (an empty one, the wrong format, another domain's tasks)
        run_dir = store.fresh_run_dir(Path(args.run_dir or config.run.dir))
        err.print(f"fresh run directory: {run_dir}", highlight=False, markup=False, soft_wrap=True)
        args.crash_dir = run_dir
    resume = args.resume_command = resume_command(args, run_dir)
    outcome_box: dict[str, runner.RunOutcome] = {}
    error_box: list[TracejudgeError] = []
    stop_box: list[anyio.Event] = []

    async def main_task() -> None:
        _quiet_about_interrupted_tasks()
        stop = anyio.Event()
        stop_box.append(stop)
        live = LiveStatus()

        async def watch_signals(scope: anyio.CancelScope, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                task_status.started()
                count = 0
                if interrupted_at_startup():  # a Ctrl-C an import's callback swallowed (its second was ignored): `launch`
                    count = 1
                    live.mark_stop()
                    stop.set()
                async for signum in signals:
                    count += 1
                    if count == 1:
                        live.mark_stop()
                        err.print(f"\n{signal.Signals(signum).name}: no new cases; {live.stop_text()}, "
                                  "then the run stops (again to abort)", highlight=False, markup=False, soft_wrap=True)
                        stop.set()
                    else:
                        scope.cancel()

        async with anyio.create_task_group() as tg:
            # Signals are received from here on, before anything slow starts (the run's set-up is synchronous up to
            # its first await): a Ctrl-C during set-up stops the run as soon as it looks, a second one aborts it.
            await tg.start(watch_signals, tg.cancel_scope)
            progress = make_progress(err, enabled=not args.no_progress, every_s=args.progress_every)
            if progress is not None:
                progress.attach(live)

            async def tick() -> None:
                # Figures that change without a new result: a stalled bar says what it waits on, a stop drains.
                assert progress is not None
                while True:
                    await anyio.sleep(0.5)
                    progress.tick()

            async def count_total() -> None:
                # The total is for the ETA (a terminal's bar and the log lines alike): count records in a thread while the run goes.
                def count() -> int:
                    fmt = registry.format_for(config.dataset.format)
                    records = fmt.count(config.dataset) if fmt.count else count_quietly(lambda: fmt.read(config.dataset))  # (its warnings are the run's read's)
                    if config.run.shard:  # about 1/N of the records are this shard's: an estimate for the ETA
                        records = -(-records // int(config.run.shard.split("/")[1]))
                    return records * config.run.trials

                try:
                    n = await anyio.to_thread.run_sync(count, abandon_on_cancel=True)
                except OSError:
                    # Only the ETA is lost: the run reads the same file and says once what is wrong with it (a dataset
                    # deleted under the run was reported twice, by this count and by the run), or reads it to the end
                    # from the file it opened before the deletion.
                    return
                # Less the results the run found final: a provisional one (a judge error, a worker's death) is redone
                # and counted in `done`, so it stays in the total (the index's line count took it out: done > total).
                while live.settled is None:
                    await anyio.sleep(0.02)
                if progress is not None:
                    progress.set_total(max(n - live.settled, 0))

            if progress is not None and not registry.format_for(config.dataset.format).remote:
                tg.start_soon(count_total)  # a server's traces are not read twice for an ETA
            if progress is not None:
                tg.start_soon(tick)
            try:
                if stop.is_set():
                    return  # stopped before the run began: nothing started, nothing to write
                outcome_box["o"] = await runner.run(
                    config, run_dir=run_dir, force=args.force, stop=stop,
                    on_result=progress.update if progress else None, live=live,
                    command={"line": resume, "cwd": os.getcwd()},  # `report` on this run, if it stops, gives the same command
                    fingerprints=fingerprints, cancel_after_stop=True,  # (a second signal cancels: `watch_signals`)
                )
            except TracejudgeError as exc:
                # Raised past the task group it would arrive wrapped in an ExceptionGroup.
                error_box.append(exc)
            finally:
                if progress:
                    progress.close(finished=not error_box)  # a config error is one line, not a progress report
                tg.cancel_scope.cancel()

    try:
        anyio.run(main_task)
    except BaseException as exc:
        if args.fresh:
            _resume_hint(exc, resume)
        if not _cancelled(exc):
            raise
        if not (stop_box and stop_box[0].is_set()):
            # No stop was asked for (a second signal cancels the run's own scope, which ends it without raising): user
            # code cancelled tasks it does not own. An internal error (`cli.main`: exit 3, crash.log), as summary.json says.
            import asyncio

            from tracejudge.stages.reports.stopped import STRAY_CANCEL

            raise asyncio.CancelledError(STRAY_CANCEL) from exc
        outcome_box.clear()  # (asked to stop, then cancelled anyway: aborted, as summary.json says)
    if error_box:
        if args.fresh:
            _resume_hint(error_box[0], resume)
        raise error_box[0]
    outcome = outcome_box.get("o")
    out = stdout_console()
    if outcome is None:
        print("aborted; results already written are kept. Resume with:\n  " + resume, file=sys.stderr)
        out.print(f"[bold yellow]verdict: INTERRUPTED[/] (aborted; resume with: {escape(resume)})", highlight=False, markup=True, soft_wrap=True)
        return EXIT_INTERRUPTED
    # The gate compared with a baseline another run still writes: as it stood, with figures that may still move.
    reg = config.assertions.regression
    again = f"compare again with `tracejudge report {shlex.quote(str(outcome.run_dir))}` when it has finished"
    if (note := baseline_note(reg.baseline if reg else None, again)) is not None:
        err.print(note, highlight=False, markup=False, soft_wrap=True)
    from tracejudge.stages.judge.error_note import with_first_error

    print_summary(with_first_error(outcome.summary, outcome.run_dir), out)  # (its judge errors line names the first's message)
    _print_configs(outcome.summary, out)
    _print_unscored(outcome.summary, out)
    out.print(f"run directory: {Path(outcome.run_dir).resolve()}  ({outcome.new_results} new results, {outcome.skipped_finished} already finished"
              f"{retried_note(outcome.retried, outcome.retried_raised, outcome.retried_died, outcome.retried_refused, outcome.retried_oversized)}"
              f"{_budget_skips(outcome.summary)})",
              highlight=False, soft_wrap=True)
    out.print("reports: summary.json, report.md, junit.xml, report.html", highlight=False)
    if outcome.pending_retries:
        what = _pending(outcome.pending_retries, outcome.raised, outcome.died, outcome.refused, outcome.oversized)
        print(f"{what}; {'this' if args.fresh else 'the same'} command retries them "
              f"(at most run.max_resume_retries={config.run.max_resume_retries} times each):\n  {resume}", file=sys.stderr)
    if outcome.spent_retries:
        print(_spent(args, run_dir, outcome.spent_retries, config.run.max_resume_retries, outcome.most_failures), file=sys.stderr)
    if outcome.interrupted:
        print("interrupted; results so far are saved. Resume with:\n  " + resume, file=sys.stderr)
    if args.explain_cache:  # asked for: said here, not only in summary.json and each score
        from tracejudge.entrypoints.commands.cache_explained import explain_lines

        print("\n".join(explain_lines(outcome.summary, config.cache.enabled, outcome.new_results)), file=sys.stderr)
    print_verdict(outcome.verdict, out, resume=resume)
    return outcome.verdict.exit_code


def _cancelled(exc: BaseException) -> bool:
    """Whether `exc` is a cancellation alone (asyncio's `CancelledError`, bare or grouped)."""
    import asyncio

    from tracejudge.core.errors import leaves

    return all(isinstance(leaf, asyncio.CancelledError) for leaf in leaves(exc))


def _budget_skips(summary: dict) -> str:
    # A resume that met the same cap reads "0 new results": the results it left unjudged are not finished work.
    skipped = int((summary.get("judge") or {}).get("skipped_budget") or 0)
    return f", {skipped} still skipped for the judge budget" if skipped else ""


def _spent(args: argparse.Namespace, run_dir: Path | None, spent: int, limit: int, most: int) -> str:
    """The line saying how many failed results the same command does not retry, their `run.max_resume_retries` spent, and
    the command that retries them anyway: the same one with the setting raised to `most`, the most failures one has had
    (the setting is not in the config hash, so the resume needs no --force)."""
    setting = "run.max_resume_retries"
    raised = argparse.Namespace(**{**vars(args), "overrides": [o for o in args.overrides if not o.startswith(setting + "=")] + [f"{setting}={most}"]})
    return (f"{spent} failed results are not retried: {setting} ({limit}) retries of each are spent; "
            f"to retry them anyway, raise it:\n  {resume_command(raised, run_dir)}")


def _print_configs(summary: dict, out: Console) -> None:
    # A run resumed with --force mixes configs: say which segments used which, so no figure is read as one config's.
    for entry in summary.get("configs") or []:
        segs = ", ".join(map(str, entry["segments"]))
        how = "forced: " + "; ".join(entry["forced_changes"]) if entry.get("forced_changes") else "the config the run started with"
        out.print(f"segments {segs} used config {entry['config_hash'][:12]} ({how})", highlight=False, markup=False, soft_wrap=True)


def _print_unscored(summary: dict, out: Console) -> None:
    """Name each metric of the config that results already kept were not scored with.

    A metric of the run's own list is carried by every result scored with it, so a
    result without it was written under an earlier config (a resume with --force keeps
    them as they are: `written_before` in the summary); without this line a metric added
    that way read as scored.
    """
    for key, m in (summary.get("metrics") or {}).items():
        missing = int(m.get("written_before") or 0)
        if missing:
            out.print(f"{key}: {missing} result(s) were written before this metric was in the config and are not scored with it "
                      "(--force keeps results as they are); --fresh scores every case with the current config",
                      highlight=False, markup=False, soft_wrap=True)


def _quiet_about_interrupted_tasks() -> None:
    """Keep asyncio from printing the run's tasks that a KeyboardInterrupt from user code (a metric, an agent) stopped.

    That interrupt leaves the event loop at once (asyncio lets none catch it), and the tasks it cut short end as
    `asyncio.run` shuts down, where asyncio printed each one's exception, a traceback of a hundred lines, before the
    command's one line `interrupted`. Any other exception is reported as asyncio does.
    """
    import asyncio

    from tracejudge.core.errors import leaves

    loop = asyncio.get_running_loop()
    before = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        exc = context.get("exception")
        if isinstance(exc, BaseException) and any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves(exc)):
            return
        if before is not None:
            before(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
