"""The `tracejudge` command line.

Exit status: 0 when the run finished and every assertion held, 1 when an
assertion failed or the run was interrupted, 2 for a bad config or input
(nothing was run).
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import time
from pathlib import Path

import anyio
from rich.console import Console
from rich.markup import escape

from pipeline import log
from pipeline.config import load_config
from pipeline.errors import ConfigError, TracejudgeError

__all__ = ["main"]

EXIT_OK, EXIT_ASSERTION, EXIT_BAD_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tracejudge", description="Evaluate AI agents by what they did.")
    p.add_argument("--log-level", default="warning", help="structlog level (debug, info, warning, error)")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a config's pipeline; resumes the run directory if it holds results")
    run.add_argument("config", type=Path)
    run.add_argument("--run-dir", type=Path, help="run directory (default: run.dir of the config)")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a config key")
    run.add_argument("--force", action="store_true", help="resume even if the config or dataset changed (results already there are kept)")
    run.add_argument("--fresh", action="store_true", help="start over in a new run directory (RUN_DIR-2, -3, ...) if RUN_DIR already holds a run")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")

    ext = sub.add_parser("extract", help="write any input format as native cases (traces included)")
    ext.add_argument("config", type=Path)
    ext.add_argument("-o", "--output", type=Path, required=True, help="JSONL file to write ('-' for stdout)")
    ext.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    args = _parser().parse_args(argv)
    log.configure(args.log_level)
    err = Console(stderr=True)
    try:
        config = load_config(args.config, args.overrides)
    except ConfigError as exc:
        err.print(f"[bold red]config error[/]\n{exc}", highlight=False, markup=True)
        return EXIT_BAD_INPUT
    try:
        if args.command == "run":
            return _cmd_run(args, config, err)
        if args.command == "extract":
            return _cmd_extract(args, config, err)
    except (TracejudgeError, BaseExceptionGroup) as exc:
        # Errors raised inside the task group arrive wrapped in an exception group.
        leaves = _leaves(exc)
        if not all(isinstance(leaf, TracejudgeError) for leaf in leaves):
            raise
        for leaf in leaves:
            err.print(f"[bold red]error[/] {escape(str(leaf))}", highlight=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    return EXIT_BAD_INPUT


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _resume_command(args: argparse.Namespace, run_dir: Path | None) -> str:
    """The command line that resumes this run, from the parsed arguments.

    `--force` and `--fresh` are dropped (the run directory now holds this
    config), and `--run-dir` names the directory actually used when it is
    not the config's default. Paths are as typed, so the command is meant for
    the same working directory.
    """
    parts = ["tracejudge"]
    if args.log_level != "warning":
        parts += ["--log-level", args.log_level]
    parts += ["run", str(args.config)]
    if run_dir is not None:
        parts += ["--run-dir", str(run_dir)]
    for item in args.overrides:
        parts += ["--set", item]
    if args.no_progress:
        parts.append("--no-progress")
    return " ".join(shlex.quote(p) for p in parts)


def _cmd_run(args: argparse.Namespace, config, err: Console) -> int:
    from pipeline import runner, store
    from stages.report import print_summary

    run_dir = args.run_dir
    if args.fresh:
        run_dir = store.fresh_run_dir(Path(args.run_dir or config.run.dir))
        err.print(f"fresh run directory: {run_dir}", highlight=False, markup=False, soft_wrap=True)
    resume = _resume_command(args, run_dir)
    show_progress = not args.no_progress and err.is_terminal
    outcome_box: dict[str, runner.RunOutcome] = {}

    async def main_task() -> None:
        stop = anyio.Event()
        progress = _Progress(err) if show_progress else None

        async def watch_signals(scope: anyio.CancelScope) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                count = 0
                async for signum in signals:
                    count += 1
                    if count == 1:
                        err.print(f"\n{signal.Signals(signum).name}: finishing cases in flight, then stopping (again to abort)")
                        stop.set()
                    else:
                        scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_signals, tg.cancel_scope)
            try:
                outcome_box["o"] = await runner.run(
                    config, run_dir=run_dir, force=args.force, stop=stop,
                    on_result=progress.update if progress else None,
                )
            finally:
                if progress:
                    progress.close()
                tg.cancel_scope.cancel()

    anyio.run(main_task)
    outcome = outcome_box.get("o")
    if outcome is None:
        err.print("aborted; results already written are kept. Resume with:\n  " + resume, highlight=False, markup=False, soft_wrap=True)
        return EXIT_ASSERTION
    print_summary(outcome.summary)
    Console().print(f"run directory: {outcome.run_dir}  ({outcome.new_results} new results, {outcome.skipped_finished} already finished)", highlight=False, soft_wrap=True)
    if outcome.interrupted:
        err.print("interrupted; results so far are saved. Resume with:\n  " + resume, highlight=False, markup=False, soft_wrap=True)
        return EXIT_ASSERTION
    return EXIT_OK


class _Progress:
    """A rich progress bar over results (cases done, rate, elapsed)."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._p = Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=console, transient=True)
        self._task = self._p.add_task("run", total=None, rate="")
        self._n = 0
        self._t0 = time.perf_counter()
        self._p.start()

    def update(self, result) -> None:
        self._n += 1
        if self._n % 25 == 0:
            rate = self._n / max(time.perf_counter() - self._t0, 1e-9)
            self._p.update(self._task, completed=self._n, rate=f"{rate:,.0f} cases/s")

    def close(self) -> None:
        self._p.stop()


def _cmd_extract(args: argparse.Namespace, config, err: Console) -> int:
    from pipeline import registry
    from pipeline.records import Case
    from stages.extract import extract_record

    fmt = registry.format_for(config.dataset.format)
    ctx = fmt.prepare(config.dataset)
    out = sys.stdout if str(args.output) == "-" else open(args.output, "w", encoding="utf-8")
    written = bad = 0
    try:
        for raw in fmt.read(config.dataset):
            got = extract_record(raw, fmt, ctx)
            if isinstance(got, Case):
                out.write(got.model_dump_json(exclude_defaults=True) + "\n")
                written += 1
            else:
                cid, info = got
                bad += 1
                where = f"{info.file}:{info.line}" + (f": {info.field}" if info.field else "")
                err.print(f"invalid input {where} ({cid}): {info.message}", highlight=False, markup=False)
    finally:
        if out is not sys.stdout:
            out.close()
    err.print(f"wrote {written} cases to {args.output}" + (f"; {bad} records were invalid (listed above)" if bad else ""), highlight=False)
    return EXIT_OK
