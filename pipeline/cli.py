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
    run.add_argument("--force", action="store_true", help="resume even if the config or dataset changed")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--rescore", type=Path, metavar="RUN_DIR", help="re-score the live traces recorded in RUN_DIR instead of calling the target")

    ext = sub.add_parser("extract", help="write any input format as native cases (traces included)")
    ext.add_argument("config", type=Path)
    ext.add_argument("-o", "--output", type=Path, required=True, help="JSONL file to write ('-' for stdout)")
    ext.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    args.argv = argv
    log.configure(args.log_level)
    err = Console(stderr=True)
    try:
        config = load_config(args.config, args.overrides)
    except ConfigError as exc:
        err.print(f"[bold red]config error[/]\n{escape(str(exc))}", highlight=False)
        return EXIT_BAD_INPUT
    try:
        if args.command == "run":
            if args.rescore is not None:
                config, args.run_dir = _rescore(args, config, err)
            return _cmd_run(args, config, err)
        if args.command == "extract":
            return _cmd_extract(args, config, err)
    except ConfigError as exc:
        err.print(f"[bold red]config error[/]\n{escape(str(exc))}", highlight=False)
        return EXIT_BAD_INPUT
    except TracejudgeError as exc:
        err.print(f"[bold red]error[/] {escape(str(exc))}", highlight=False)
        return EXIT_BAD_INPUT
    return EXIT_BAD_INPUT


def _rescore(args: argparse.Namespace, config, err: Console):
    """The config and run directory of `run --rescore RUN_DIR`.

    The output goes to `--run-dir`, else the config's `run.dir`, else (when
    that is the recorded run itself) to `RUN_DIR-rescore`: a recorded run is
    never written into.
    """
    from stages.target import rescore_config

    recorded = args.rescore.resolve()
    out = (args.run_dir or config.run.dir).resolve()
    if out == recorded:
        if args.run_dir is not None:
            raise ConfigError(f"--run-dir {args.run_dir}: cannot re-score into the recorded run itself; give another directory")
        out = recorded.with_name(recorded.name + "-rescore")
    err.print(f"re-scoring the traces recorded in {recorded} into {out}", highlight=False)
    return rescore_config(config, recorded), out


def _resume_command(argv: list[str]) -> str:
    return "tracejudge " + " ".join(shlex.quote(a) for a in argv)


def _cmd_run(args: argparse.Namespace, config, err: Console) -> int:
    from pipeline import runner
    from stages.report import print_summary

    argv = args.argv
    show_progress = not args.no_progress and err.is_terminal
    outcome_box: dict[str, runner.RunOutcome] = {}
    error_box: list[TracejudgeError] = []

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
                    config, run_dir=args.run_dir, force=args.force, stop=stop,
                    on_result=progress.update if progress else None,
                )
            except TracejudgeError as exc:
                # Raised past the task group it would arrive wrapped in an ExceptionGroup.
                error_box.append(exc)
            finally:
                if progress:
                    progress.close()
                tg.cancel_scope.cancel()

    anyio.run(main_task)
    if error_box:
        raise error_box[0]
    outcome = outcome_box.get("o")
    if outcome is None:
        print("aborted; results already written are kept. Resume with:\n  " + _resume_command(argv), file=sys.stderr)
        return EXIT_ASSERTION
    print_summary(outcome.summary)
    print(f"run directory: {outcome.run_dir}  ({outcome.new_results} new results, {outcome.skipped_finished} already finished)")
    if outcome.interrupted:
        print("interrupted; results so far are saved. Resume with:\n  " + _resume_command(argv), file=sys.stderr)
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
if __name__ == "__main__":
    raise SystemExit(main())
