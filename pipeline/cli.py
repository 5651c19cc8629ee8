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
    run.add_argument("--explain-cache", action="store_true", help="record why each judge request missed the cache (score.judge.cache_miss)")

    ext = sub.add_parser("extract", help="write any input format as native cases (traces included)")
    ext.add_argument("config", type=Path)
    ext.add_argument("-o", "--output", type=Path, required=True, help="JSONL file to write ('-' for stdout)")
    ext.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")

    est = sub.add_parser("estimate", help="print the expected judge requests, tokens and dollars per metric, before any call")
    est.add_argument("config", type=Path)
    est.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")

    sim = sub.add_parser("simulate", help="serve the judge simulator on 127.0.0.1 (OpenAI and Anthropic protocols; verdicts say nothing about quality)")
    sim.add_argument("--port", type=int, default=8787, help="TCP port (0 picks a free one; the URL is printed)")
    sim.add_argument("--latency-ms", type=float, default=0.0, help="delay before each answer, milliseconds")
    sim.add_argument("--rpm", type=int, default=None, help="requests per minute before 429 (default: unlimited)")
    sim.add_argument("--tpm", type=int, default=None, help="tokens per minute before 429 (default: unlimited)")
    sim.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered with a 500, a hang or truncated JSON")
    sim.add_argument("--seed", type=int, default=0, help="seed of the verdicts and of the injected errors")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    args = _parser().parse_args(argv)
    log.configure(args.log_level)
    err = Console(stderr=True)
    if args.command == "simulate":
        return _cmd_simulate(args, err)
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
        if args.command == "estimate":
            return _cmd_estimate(config)
    except TracejudgeError as exc:
        err.print(f"[bold red]error[/] {exc}", highlight=False)
        return EXIT_BAD_INPUT
    return EXIT_BAD_INPUT


def _resume_command(argv: list[str]) -> str:
    return "tracejudge " + " ".join(shlex.quote(a) for a in argv)


def _cmd_run(args: argparse.Namespace, config, err: Console) -> int:
    from pipeline import runner
    from stages.report import print_summary

    if args.explain_cache:
        config = config.model_copy(update={"cache": config.cache.model_copy(update={"explain": True})})

    argv = sys.argv[1:] if sys.argv and sys.argv[0].endswith("tracejudge") else ["run", str(args.config)]
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
                    config, run_dir=args.run_dir, force=args.force, stop=stop,
                    on_result=progress.update if progress else None,
                )
            finally:
                if progress:
                    progress.close()
                tg.cancel_scope.cancel()

    anyio.run(main_task)
    outcome = outcome_box.get("o")
    if outcome is None:
        err.print("aborted; results already written are kept. Resume with:\n  " + _resume_command(argv))
        return EXIT_ASSERTION
    print_summary(outcome.summary)
    Console().print(f"run directory: {outcome.run_dir}  ({outcome.new_results} new results, {outcome.skipped_finished} already finished)", highlight=False)
    if outcome.interrupted:
        err.print("interrupted; results so far are saved. Resume with:\n  " + _resume_command(argv))
        return EXIT_ASSERTION
    judge = outcome.summary.get("judge") or {}
    if judge.get("gate_failed"):
        err.print(f"judge errors: {judge['error_share']:.1%} of judged results, over judge.max_error_share {judge['max_error_share']:.1%}", highlight=False)
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


def _cmd_simulate(args: argparse.Namespace, err: Console) -> int:
    from pipeline.simulator import SimConfig, start_simulator

    if not 0 <= args.error_rate <= 1:
        err.print("--error-rate must be between 0 and 1")
        return EXIT_BAD_INPUT
    config = SimConfig(latency_ms=args.latency_ms, rpm=args.rpm, tpm=args.tpm, error_rate=args.error_rate, seed=args.seed)

    async def serve() -> None:
        runner, url = await start_simulator(config, args.port)
        print(f"judge simulator listening on {url}  (OpenAI: {url}/v1/chat/completions, Anthropic: {url}/v1/messages)", flush=True)
        try:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    break
        finally:
            await runner.cleanup()

    anyio.run(serve)
    return EXIT_OK


def _cmd_estimate(config) -> int:
    from rich.table import Table

    from stages.judge.estimate import estimate

    got = estimate(config)
    table = Table(title=f"judge estimate ({got['model']}; before any call)", title_justify="left")
    for col in ("metric", "cases", "requests", "cache hits", "input tokens", "output tokens (est.)", "dollars"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    rows = [*got["metrics"].items(), ("total", got["total"])]
    for key, e in rows:
        dollars = f"${e.cost_usd:,.4f}" if got["priced"] else "no price"
        table.add_row(key, f"{e.cases:,}", f"{e.requests:,}", f"{e.cache_hits:,}", f"{e.input_tokens:,}", f"{e.output_tokens:,}", dollars)
    console = Console()
    console.print(table)
    b, t = got["budget"], got["total"]
    if b["max_judge_tokens"] is not None or b["max_cost_usd"] is not None:
        tokens = t.input_tokens + t.output_tokens
        console.print(f"budget: {tokens:,} of {format(b['max_judge_tokens'], ',') if b['max_judge_tokens'] is not None else 'unlimited'} tokens, "
                      f"${t.cost_usd:,.4f} of {('$' + format(b['max_cost_usd'], ',.2f')) if b['max_cost_usd'] is not None else 'unlimited'}", highlight=False)
    if got["invalid_cases"]:
        console.print(f"{got['invalid_cases']} records are invalid and were left out (`tracejudge extract` lists them)", highlight=False)
    return EXIT_OK
