"""The `tracejudge` command line.

Exit statuses, so CI can tell "the agent regressed" from "the tool broke":

- 0 PASS: the run finished and every assertion held;
- 1 FAIL: an assertion (the gate) failed;
- 2 bad config or input: nothing was run;
- 3 internal error: one line on stderr names the error and the file holding
  the traceback (`RUN_DIR/crash.log`, or a temporary file before a run
  directory is known); or a full disk (ENOSPC, a quota, a file-size limit):
  one line says what could not be written, that the results already written
  are intact, and the command that resumes. Not 2: something was run and
  the input is fine; like an internal error, it says "the tool's machine
  failed", never a verdict on the agent;
- 130 interrupted (Ctrl-C, SIGTERM): the verdict line says INTERRUPTED and
  gives the command that resumes the run;
- 141 stdout was closed early (`... -o - | head -1`): the reader took what
  it wanted; no message, no crash log (128 + SIGPIPE, what a shell reports).
"""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.core.errors import ConfigError, TracejudgeError, leaves
from tracejudge.core.version import __version__
from tracejudge.entrypoints import bench_args, calibrate, export_cmd

if TYPE_CHECKING:
    from rich.console import Console

# Each command imports what it needs in its own function (rich, anyio, the config models, the engine, the stages):
# `tracejudge --help` and every subprocess a test suite starts pay only for the command they run.

__all__ = ["EXIT_ASSERTION", "EXIT_BROKEN_PIPE", "EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_OK", "console_main", "main"]

EXIT_OK, EXIT_ASSERTION, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # 141: what a shell reports for a writer killed by SIGPIPE

_EPILOG = """exit status:
  0    PASS: the run finished and every assertion held
  1    FAIL: an assertion (the CI gate) failed
  2    bad config or input; nothing was run
  3    internal error (stderr names the file holding the traceback, RUN_DIR/crash.log),
       or a full disk (one line: what is full, what is kept, how to resume)
  130  interrupted (Ctrl-C or SIGTERM); the verdict line says how to resume
  141  stdout was closed early (e.g. piped into head); nothing is reported
"""


_CONFIG_HELP = "the run config (YAML); relative paths in it resolve from its folder"
_SET_HELP = ("override a config key, e.g. --set dataset.limit=20 (repeatable; the value is YAML). A relative path value "
             "(run.dir, dataset.path, dataset.tasks, cache.dir, target.*) resolves from the config's folder, like the same value in the file")


_LOG_LEVELS = ("debug", "info", "warning", "error")


def _examples(*lines: str) -> dict[str, Any]:
    """The keyword arguments giving a subcommand's --help its examples."""
    return {"epilog": "examples:\n" + "\n".join(f"  {line}" for line in lines), "formatter_class": argparse.RawDescriptionHelpFormatter}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tracejudge", description="Evaluate AI agents by what they did.", epilog=_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"tracejudge {__version__}")
    p.add_argument("--log-level", default="warning", type=str.lower, choices=_LOG_LEVELS, help="structlog level (debug, info, warning, error)")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a config's pipeline; resumes the run directory if it holds results",
                         description="Run a config's pipeline; resumes the run directory if it holds results.",
                         **_examples("tracejudge run configs/demo.yaml", "tracejudge run configs/demo.yaml --set dataset.limit=20 --run-dir runs/try",
                                     "tracejudge run configs/demo.yaml --shard 2/4        # one CI job of four"))
    run.add_argument("config", type=Path, help=_CONFIG_HELP)
    run.add_argument("--run-dir", type=Path, help="run directory, relative to the current directory "
                     "(default: the config's run.dir, else runs/<config file stem> beside the config)")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help=_SET_HELP)
    run.add_argument("--force", action="store_true", help="resume even if the config or dataset changed (results already there are kept; "
                     "the manifest's history and the summary record which segments used which config)")
    run.add_argument("--fresh", action="store_true", help="start over in a new run directory (RUN_DIR-2, -3, ...) if RUN_DIR already holds a run")
    run.add_argument("--rescore", type=Path, metavar="RUN_DIR", help="re-score the live traces recorded in RUN_DIR instead of calling the target")
    run.add_argument("--shard", metavar="I/N", help="score only shard I of N (1-based; by a stable hash of the case id) into RUN_DIR-shard-I-of-N")
    run.add_argument("--no-progress", action="store_true", help="no progress bar (and no progress log lines)")
    run.add_argument("--explain-cache", action="store_true", help="record why each judge request missed the cache (score.judge.cache_miss)")
    run.add_argument("--progress-every", type=float, default=10.0, metavar="SECONDS", help="interval of progress log lines when not on a terminal")

    rep = sub.add_parser("report", help="rebuild summary.json, report.md, junit.xml and report.html from a run's results.jsonl "
                                        "(several shard directories: merged into one run)",
                         **_examples("tracejudge report runs/demo", "tracejudge report runs/demo --baseline runs/last-night",
                                     "tracejudge report runs/demo-shard-*             # merge shards into runs/demo"))
    rep.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                     help="a run directory; several (or the unsharded name of shard directories) are merged into --out")
    rep.add_argument("--out", type=Path, help="where the merged run goes (default: the shards' name without -shard-I-of-N)")
    rep.add_argument("--baseline", type=Path, help="baseline run directory to compare with (overrides the config's)")

    cmp = sub.add_parser("compare", help="compare two runs result by result (paired by case and trial)",
                         **_examples("tracejudge compare runs/last-night runs/demo", "tracejudge compare runs/prev runs/demo --metric writes_exact --json",
                                     "tracejudge compare runs/base-shard-* --vs runs/demo-shard-*"))
    cmp.add_argument("runs", type=Path, nargs="+", metavar="RUN",
                     help="RUN_A RUN_B: baseline and current run directory (deltas are B - A); with --vs, every RUN is a shard of the baseline")
    cmp.add_argument("--vs", type=Path, nargs="+", metavar="RUN_B", help="the current run's shard directories (the positional ones are the baseline's)")
    cmp.add_argument("--metric", dest="metrics", action="append", help="compare only this metric (repeatable)")
    cmp.add_argument("--top", type=int, default=10, help="cases listed per metric as most regressed / improved")
    cmp.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the randomization test")
    cmp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cmp.add_argument("--judge", type=Path, metavar="CONFIG", help="ask CONFIG's judge which run served the user better, per shared case, "
                     "in both orders (pairwise; README \"Is the judge right?\")")
    cmp.add_argument("--min-win-rate", type=float, metavar="X", help="with --judge: FAIL (exit 1) when B's win rate is below X")

    ext = sub.add_parser("extract", help="write any input format as native cases (traces included)",
                         description="Write any input format as native cases. Invalid records are listed on stderr and left out; "
                                     "the exit status is then 1 (0 when every record is valid).",
                         **_examples("tracejudge extract configs/demo.yaml -o cases.jsonl", "tracejudge extract my.yaml -o - | head -1"))
    ext.add_argument("config", type=Path, help=_CONFIG_HELP)
    ext.add_argument("-o", "--output", type=Path, required=True, help="JSONL file to write ('-' for stdout)")
    ext.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help=_SET_HELP)

    est = sub.add_parser("estimate", help="print the expected judge requests, tokens and dollars per metric, before any call",
                         **_examples("tracejudge estimate configs/demo.yaml", "tracejudge estimate configs/demo.yaml --set judge.model=gpt-4o"))
    est.add_argument("config", type=Path, help=_CONFIG_HELP + " (with LLM-judge metrics)")
    est.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help=_SET_HELP)

    bench_args.add_parser(sub)
    calibrate.add_parser(sub)
    sub.choices["bench"].epilog = _examples("tracejudge bench configs/demo.yaml --requests 200 --max-cost-usd 1",
                                            "tracejudge bench --synthetic --provider openai --base-url http://gpu-box:8000/v1 --model my-judge")["epilog"]
    sub.choices["bench"].formatter_class = argparse.RawDescriptionHelpFormatter

    export_cmd.add_parser(sub)

    init = sub.add_parser("init", help="write a commented starter config for an input format (run dir, metrics, assertions)",
                          **_examples("tracejudge init                                   # native cases, to tracejudge.yaml",
                                      "tracejudge init --format otel --dataset traces/ -o otel.yaml && tracejudge run otel.yaml",
                                      "tracejudge init --format tau-bench --dataset gpt-4o-airline.json --tasks tasks_airline_test.json"))
    init.add_argument("--format", default="native", type=_init_format, choices=sorted(_starter().FORMATS), help="the input format (default: native; "
                      "`tracejudge list formats` says what each reads)")
    init.add_argument("--dataset", type=Path, metavar="PATH", help="the data to score (default: a placeholder path to replace)")
    init.add_argument("--tasks", type=Path, metavar="PATH", help="tau-bench only: the tasks file the trajectories ran on")
    init.add_argument("-o", "--output", type=Path, default=Path("tracejudge.yaml"), help="where to write the config (default: tracejudge.yaml)")
    init.add_argument("--force", action="store_true", help="overwrite the output file if it exists")

    lst = sub.add_parser("list", help="list the metrics or the input formats, one line each",
                         **_examples("tracejudge list metrics", "tracejudge list formats"))
    lst.add_argument("what", choices=("metrics", "formats"), help="metrics (config `type:` values) or formats (`dataset.format:` values)")

    exp = sub.add_parser("explain", help="print a metric's documentation: what it counts, its options, the source of its definition",
                         **_examples("tracejudge explain ToolCalls", "tracejudge explain TaskCompletion"))
    exp.add_argument("metric", help="a metric type, as in `tracejudge list metrics`")

    sim = sub.add_parser("simulate", help="serve the judge simulator on 127.0.0.1 (OpenAI and Anthropic protocols; verdicts say nothing about quality)",
                         **_examples("tracejudge simulate --port 8787", "tracejudge simulate --rpm 500 --tpm 400000 --latency-ms 400 --window strict"))
    sim.add_argument("--port", type=int, default=8787, help="TCP port (0 picks a free one; the URL is printed)")
    sim.add_argument("--latency-ms", type=float, default=0.0, help="delay before each answer, milliseconds")
    sim.add_argument("--rpm", type=int, default=None, help="requests per minute before 429 (default: unlimited)")
    sim.add_argument("--tpm", type=int, default=None, help="tokens per minute before 429 (default: unlimited)")
    sim.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered with a 500, a hang or truncated JSON")
    sim.add_argument("--seed", type=int, default=0, help="seed of the verdicts and of the injected errors")
    sim.add_argument("--batch-completion-s", type=float, default=1.0, help="seconds until a submitted batch (files/batches, message batches) ends")
    sim.add_argument("--window", choices=("bucket", "strict"), default="bucket",
                     help="how --rpm/--tpm are counted: a continuously refilling bucket, or a strict 60-second sliding window")
    sim.add_argument("--window-s", type=float, default=60.0, metavar="S", help="length of the strict window, seconds (limits count per window)")
    sim.add_argument("--book", choices=("arrival", "reply"), default="arrival", help="a strict window books a request when it arrives, or when it is answered")
    sim.add_argument("--limit-count", choices=("usage", "chars"), default="usage",
                     help="the limits count tokens as usage reports them, or as a gateway does: ceil(characters/4) + 3 per message")
    sim.add_argument("--no-rate-headers", action="store_true", help="send no rate-limit headers (a vLLM-like server)")
    sim.add_argument("--max-concurrency", type=int, default=None, metavar="C", help="slow down past C requests in flight (a GPU server)")
    sim.add_argument("--agreement", type=float, default=1.0, metavar="P", help="each answer equals the simulator's truth with probability P")
    sim.add_argument("--noise", type=float, default=0.0, metavar="Q", help="each answer flipped with probability Q, afresh per repeat of a request")
    sim.add_argument("--position-bias", type=float, default=0.0, metavar="B", help="a pairwise request answers 'the first run' with probability B")
    sim.add_argument("--json-object-only", action="store_true",
                     help="answer a json_schema response_format with HTTP 500, as llama-cpp-python's server does (json_object only)")
    sim.add_argument("--tokenizer-factor", type=float, default=1.0, metavar="F", help="count prompt tokens as tiktoken's × F (a local model's tokenizer)")
    sim.add_argument("--context-tokens", type=int, default=None, metavar="N", help="refuse (400) a request whose prompt plus max_tokens exceed N")
    view = sub.add_parser("view", help="look at runs in a local, read-only web app on 127.0.0.1 (prints its URL)",
                          **_examples("tracejudge view                                   # every run under runs/",
                                      "tracejudge view runs/demo --baseline runs/last-night --port 8765"))
    view.add_argument("run_dirs", type=Path, nargs="*", metavar="RUN_DIR", help="run directories (default: every one under runs/)")
    view.add_argument("--port", type=int, default=8765, help="TCP port (0 picks a free one)")
    view.add_argument("--baseline", type=Path, metavar="RUN_DIR", help="run shown beside each case and diffed against")
    # Also after the command (`tracejudge run x.yaml --log-level debug`, as users type it); SUPPRESS keeps
    # a value given before the command when none follows it.
    for command in sub.choices.values():
        command.add_argument("--log-level", default=argparse.SUPPRESS, type=str.lower, choices=_LOG_LEVELS,
                             help="structlog level (debug, info, warning, error)")
    return p


def _init_format(value: str) -> str:
    """`init --format`: a format that holds no model output is refused with where to start instead (exit 2)."""
    starter = _starter()
    if value in starter.LIVE_ONLY_FORMATS:
        raise argparse.ArgumentTypeError(
            f"{value} carries no model output to score (only the questions and what is expected), so it needs a live "
            f"target that answers them: start from {starter.LIVE_EXAMPLE} (a live target on format tau-bench-tasks) "
            f"and set dataset.format: {value} and dataset.path (README, \"Live targets\")")
    return value


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status (see the module docstring).

    Never raises, except `SystemExit` from argument parsing (`--help`,
    `--version`, a usage error: status 0 or 2).
    """
    from tracejudge.core.errors import refuse_in_worker_import

    # A script calling `main` at its top level is imported again by each spawned worker; without this the
    # worker's own argv made argparse exit there, and the run went in-process without the advice.
    refuse_in_worker_import("tracejudge's command line (`entrypoints.cli.main`)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    args.argv = argv
    from tracejudge.core import log
    from tracejudge.core.console import plain_console

    log.configure(args.log_level)
    # Messages on stderr are never hard-wrapped: a path or `file:line` cut in two cannot be copied or grepped.
    err = plain_console(stderr=True, soft_wrap=True)
    try:
        code = _dispatch(args, err)
        sys.stdout.flush()  # a closed pipe shows here at the latest, not at interpreter exit
        return code
    except KeyboardInterrupt:
        # Ctrl-C outside a run's own signal handling (loading a config, a report). A second one
        # while the process exits must not turn the exit into a traceback or a death by SIGINT.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        err.print("interrupted", highlight=False)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the tool broke: say so in one line, keep the traceback in a file
        return _broken_pipe(exc) or _storage_full(args, exc, err) or _unusable_path(exc, err) or _crash(args, exc, err)
    except BaseExceptionGroup as group:
        return _broken_pipe(group) or _storage_full(args, group, err) or _unusable_path(group, err) or _crash(args, group, err)
    finally:
        log.reset()  # called in-process (tests, a wrapper script): the caller's logging is as it was


def _broken_pipe(exc: BaseException) -> int:
    """141 if stdout's reader went away (`| head -1`), else 0.

    Not a failure: the reader has what it wanted. Following the Python docs
    (signal module, "Note on SIGPIPE"), stdout is pointed at /dev/null so the
    flush at interpreter exit cannot raise again and print a traceback.
    """
    if not any(isinstance(leaf, BrokenPipeError) for leaf in leaves(exc)):
        return 0
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout replaced by an object without a descriptor (in-process callers)
        pass
    return EXIT_BROKEN_PIPE


# A file or folder the user named that cannot be used as given (a folder where a file is
# expected, a missing parent, no permission) is bad input, not a broken tool.
_PATH_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def _path_error(leaf: BaseException) -> bool:
    # A read-only file system (EROFS: a read-only mount, a snapshot) refuses writes as a missing permission
    # does, but raises a plain OSError; root, whom file modes do not stop, meets only this one.
    return isinstance(leaf, _PATH_ERRORS) or (isinstance(leaf, OSError) and leaf.errno == errno.EROFS)


def _unusable_path(exc: BaseException, err: Console) -> int | None:
    found = leaves(exc)
    if not found or not all(_path_error(leaf) for leaf in found):
        return None
    for leaf in found:
        assert isinstance(leaf, OSError)
        where = leaf.filename if leaf.filename is not None else ""
        err.print(f"error: {where}: {leaf.strerror or type(leaf).__name__}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_BAD_INPUT


_FULL = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded", errno.EFBIG: "file size limit reached"}


def _storage_full(args: argparse.Namespace, exc: BaseException, err: Console) -> int:
    """One line for a write that failed for want of space (exit 3: the run did not finish, not a verdict); 0 if not that."""
    leaf = next((e for e in leaves(exc) if isinstance(e, OSError) and e.errno in _FULL), None)
    if leaf is None:
        return 0
    run_dir = Path(getattr(args, "crash_dir", None) or ".")
    results = run_dir / "results.jsonl"
    try:
        with open(results, "rb") as fh:
            count = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
        kept = f"the {count} results in {results} are intact"
    except OSError:
        kept = "nothing already written is lost"
    what = leaf.filename or run_dir
    resume = getattr(args, "resume_command", None) or "the same command"
    err.print(f"disk full: cannot write {what} ({_FULL[leaf.errno]}); {kept}, and only unwritten results will be redone. "
              f"Free space, then resume with: {resume}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_INTERNAL


def _crash_log_path(args: argparse.Namespace) -> Path:
    run_dir = getattr(args, "crash_dir", None)
    if run_dir is not None and Path(run_dir).is_dir():
        return Path(run_dir) / "crash.log"
    fd, name = tempfile.mkstemp(prefix="tracejudge-crash-", suffix=".log")
    os.close(fd)
    return Path(name)


def _crash(args: argparse.Namespace, exc: BaseException, err: Console) -> int:
    leaf = leaves(exc)[0]
    text = "".join(traceback.format_exception(exc))
    header = f"{datetime.now(UTC).isoformat(timespec='seconds')} tracejudge {__version__}: {' '.join(map(shlex.quote, ['tracejudge', *args.argv]))}\n"
    try:
        path = _crash_log_path(args)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(header + text + "\n")
        where = f"traceback in {path}"
    except OSError as write_error:
        where = f"traceback could not be written ({write_error.strerror}); run with --log-level debug"
    message = str(leaf).splitlines()[0] if str(leaf) else ""
    err.print(f"internal error: {type(leaf).__name__}: {message[:300]} ({where})", highlight=False, markup=False, soft_wrap=True)
    return EXIT_INTERNAL


def _starter():
    from tracejudge.entrypoints import starter

    return starter


def _dispatch(args: argparse.Namespace, err: Console) -> int:
    from rich.markup import escape

    if args.command in ("init", "list", "explain"):
        return _cmd_discover(args, err)
    if args.command in ("simulate", "view") and not 0 <= args.port <= 65535:
        err.print(f"error: --port {args.port}: a TCP port is 0 to 65535 (0 picks a free one)", highlight=False)
        return EXIT_BAD_INPUT
    if args.command == "simulate":
        return _cmd_simulate(args, err)
    if args.command == "view":
        from tracejudge.viewer.app import serve_command

        return serve_command(args.run_dirs, args.port, args.baseline)
    if args.command == "bench":
        from tracejudge.entrypoints import bench

        return bench.command(args, err)
    if args.command == "calibrate":
        return calibrate.command(args, err)
    if args.command == "export":
        return export_cmd.command(args, err)
    if args.command in ("report", "compare"):
        try:
            return _cmd_report(args, err) if args.command == "report" else _cmd_compare(args, err)
        except TracejudgeError as exc:
            err.print(f"[bold red]error[/] {escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
            return EXIT_BAD_INPUT
    from tracejudge.core.config import load_config, require_metrics

    overrides, typed = list(args.overrides), {}
    if args.command == "run" and args.shard is not None:
        overrides.append(f"run.shard={args.shard}")
        typed[overrides[-1]] = f"--shard {args.shard}"  # an error names the option the user typed
    try:
        config = load_config(args.config, overrides, typed=typed)
        if args.command == "run":
            require_metrics(config, str(args.config))
    except ConfigError as exc:
        err.print(f"[bold red]config error[/]\n{escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
        return EXIT_BAD_INPUT
    if args.command == "run" and config.run.shard is not None and args.run_dir is None:
        from tracejudge.engine.shards import parse_shard, shard_run_dir

        args.run_dir = shard_run_dir(config.run.dir, parse_shard(config.run.shard))
    if args.command == "run":
        args.crash_dir = args.run_dir or config.run.dir
    try:
        if args.command == "run":
            if args.rescore is not None:
                config, args.run_dir = _rescore(args, config, err)
            return _cmd_run(args, config, err)
        if args.command == "extract":
            return _cmd_extract(args, config, err)
        if args.command == "estimate":
            return _cmd_estimate(args, config, err)
    except ConfigError as exc:
        err.print(f"[bold red]config error[/]\n{escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
        return EXIT_BAD_INPUT
    except (TracejudgeError, BaseExceptionGroup) as exc:
        # Errors raised inside the task group arrive wrapped in an exception group.
        found = leaves(exc)
        if not all(isinstance(leaf, TracejudgeError) for leaf in found):
            raise  # an internal error: `main` reports it (exit 3)
        for leaf in found:
            err.print(f"[bold red]error[/] {escape(str(leaf))}", highlight=False, markup=True, soft_wrap=True)
        # A trace store that is down is no verdict on the config: the same command works once it is up.
        return max(getattr(leaf, "exit_status", EXIT_BAD_INPUT) for leaf in found)
    return EXIT_BAD_INPUT


def _rescore(args: argparse.Namespace, config, err: Console):
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


def _stdout_console() -> Console:
    from tracejudge.core.console import stdout_console

    return stdout_console()


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
    if getattr(args, "shard", None) is not None:
        parts += ["--shard", args.shard]
    if getattr(args, "rescore", None) is not None:
        parts += ["--rescore", str(args.rescore)]
    if getattr(args, "explain_cache", False):
        parts.append("--explain-cache")
    if args.no_progress:
        parts.append("--no-progress")
    return " ".join(shlex.quote(p) for p in parts)


def _cmd_run(args: argparse.Namespace, config, err: Console) -> int:
    import anyio
    from rich.markup import escape
    from tracejudge.core import registry
    from tracejudge.engine import runner, store
    from tracejudge.engine.live import LiveStatus
    from tracejudge.engine.progress import make_progress
    from tracejudge.stages.aggregate.gate import print_verdict
    from tracejudge.stages.reports.terminal import print_summary

    if args.explain_cache:
        config = config.model_copy(update={"cache": config.cache.model_copy(update={"explain": True})})
    run_dir = args.run_dir
    if args.fresh:
        runner.preflight(config)  # a config error must not leave a new, empty run directory behind
        run_dir = store.fresh_run_dir(Path(args.run_dir or config.run.dir))
        err.print(f"fresh run directory: {run_dir}", highlight=False, markup=False, soft_wrap=True)
        args.crash_dir = run_dir
    resume = args.resume_command = _resume_command(args, run_dir)
    outcome_box: dict[str, runner.RunOutcome] = {}
    error_box: list[TracejudgeError] = []

    async def main_task() -> None:
        stop = anyio.Event()
        live = LiveStatus()

        async def watch_signals(scope: anyio.CancelScope, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                task_status.started()
                count = 0
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
                    index = Path(run_dir or config.run.dir) / store.INDEX
                    prior = index.stat().st_size // 8 if index.exists() else 0  # 8 bytes per finished result
                    records = sum(1 for _ in fmt.read(config.dataset))
                    if config.run.shard:  # about 1/N of the records are this shard's: an estimate for the ETA
                        records = -(-records // int(config.run.shard.split("/")[1]))
                    return max(records * config.run.trials - prior, 0)

                n = await anyio.to_thread.run_sync(count, abandon_on_cancel=True)
                if progress is not None:
                    progress.set_total(n)

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
                )
            except TracejudgeError as exc:
                # Raised past the task group it would arrive wrapped in an ExceptionGroup.
                error_box.append(exc)
            finally:
                if progress:
                    progress.close(finished=not error_box)  # a config error is one line, not a progress report
                tg.cancel_scope.cancel()

    anyio.run(main_task)
    if error_box:
        raise error_box[0]
    outcome = outcome_box.get("o")
    out = _stdout_console()
    if outcome is None:
        print("aborted; results already written are kept. Resume with:\n  " + resume, file=sys.stderr)
        out.print(f"[bold yellow]verdict: INTERRUPTED[/] (aborted; resume with: {escape(resume)})", highlight=False, markup=True, soft_wrap=True)
        return EXIT_INTERRUPTED
    print_summary(outcome.summary, out)
    _print_configs(outcome.summary, out)
    retried = f", {outcome.retried} retried after a transient failure" if outcome.retried else ""
    out.print(f"run directory: {Path(outcome.run_dir).resolve()}  ({outcome.new_results} new results, {outcome.skipped_finished} already finished{retried})",
              highlight=False, soft_wrap=True)
    out.print("reports: summary.json, report.md, junit.xml, report.html", highlight=False)
    if outcome.pending_retries:
        print(f"{outcome.pending_retries} results ended in a transient failure (judge, target or provider); "
              f"the same command retries them (at most run.max_resume_retries={config.run.max_resume_retries} times each):\n  {resume}", file=sys.stderr)
    if outcome.interrupted:
        print("interrupted; results so far are saved. Resume with:\n  " + resume, file=sys.stderr)
    print_verdict(outcome.verdict, out, resume=resume)
    return outcome.verdict.exit_code


def _print_configs(summary: dict, out: Console) -> None:
    # A run resumed with --force mixes configs: say which segments used which, so no figure is read as one config's.
    for entry in summary.get("configs") or []:
        segs = ", ".join(map(str, entry["segments"]))
        how = "forced: " + "; ".join(entry["forced_changes"]) if entry.get("forced_changes") else "the config the run started with"
        out.print(f"segments {segs} used config {entry['config_hash'][:12]} ({how})", highlight=False, markup=False, soft_wrap=True)


def _cmd_extract(args: argparse.Namespace, config, err: Console) -> int:
    from tracejudge.core import registry
    from tracejudge.core.records import Case, ErrorInfo
    from tracejudge.stages.extract import extract_record

    from tracejudge.engine.admit import duplicate_error, safe_text
    from tracejudge.engine.keyset import FirstSeen

    fmt = registry.format_for(config.dataset.format)
    ctx = fmt.prepare(config.dataset)
    out = sys.stdout if str(args.output) == "-" else open(args.output, "w", encoding="utf-8")
    written = bad = 0
    spans_seen: dict[str, dict[str, dict[str, int]]] = {}  # file -> convention -> used/ignored span counts
    seen = FirstSeen()  # as a run does: an id's first record (valid or not) owns it; a repeat is reported once, never written
    try:
        for raw in fmt.read(config.dataset):
            got = extract_record(raw, fmt, ctx)
            cid = safe_text(got.id if isinstance(got, Case) else got[0])
            first = seen.claim(cid, raw.file, raw.line)
            if first != f"{raw.file}:{raw.line}":
                got = (cid, duplicate_error(cid, first, raw.file, raw.line, None if isinstance(got, Case) else got[1].message))
            if isinstance(got, Case):
                _tally_conventions(spans_seen, raw.file, got)
                try:
                    out.write(got.model_dump_json(exclude_defaults=True) + "\n")
                    written += 1
                    continue
                except ValueError as exc:  # text JSON cannot carry (a lone surrogate)
                    got = (got.id.encode("utf-8", "backslashreplace").decode(), ErrorInfo(
                        kind="invalid_input", message=f"the record holds text that UTF-8 cannot encode: {str(exc)[:120]}",
                        file=raw.file, line=raw.line))
            cid, info = got
            bad += 1
            where = f"{info.file}:{info.line}" + (f": {info.field}" if info.field else "")
            err.print(f"invalid input {where} ({cid}): {info.message}", highlight=False, markup=False)
    finally:
        if out is not sys.stdout:
            out.close()
    for file, counts in spans_seen.items():
        parts = [f"{name} {c['used']} used" + (f", {c['ignored']} ignored" if c["ignored"] else "") for name, c in counts.items() if name != "unrecognised"]
        if "unrecognised" in counts:
            parts.append(f"{counts['unrecognised']['ignored']} spans of no known convention ignored")
        err.print(f"{file}: spans by convention: " + ("; ".join(parts) or "none"), highlight=False, markup=False, soft_wrap=True)
    err.print(f"wrote {written} cases to {args.output}" + (f"; {bad} records were invalid (listed above)" if bad else ""), highlight=False)
    return EXIT_ASSERTION if bad else EXIT_OK  # the valid cases are written; a script still learns that some records were not


def _tally_conventions(into: dict[str, dict[str, dict[str, int]]], file: str, case) -> None:
    """Add a span-export case's per-convention span counts (`metadata.otel.conventions`) to its file's tally."""
    counts = (case.metadata.get("otel") or {}).get("conventions") if isinstance(case.metadata.get("otel"), dict) else None
    if not isinstance(counts, dict):
        return
    per_file = into.setdefault(file, {})
    for name, c in counts.items():
        entry = per_file.setdefault(name, {"used": 0, "ignored": 0})
        entry["used"] += int(c.get("used", 0))
        entry["ignored"] += int(c.get("ignored", 0))


def _cmd_report(args: argparse.Namespace, err: Console) -> int:
    from tracejudge.engine import shards
    from tracejudge.stages.aggregate.gate import print_verdict
    from tracejudge.stages.reports import rebuild
    from tracejudge.stages.reports.terminal import print_summary

    if args.baseline is not None:
        shards.expand(args.baseline)  # refused before anything is rebuilt: the run's files stay as they are
    dirs = shards.expand(args.run_dirs)
    if len(dirs) == 1 and args.out is None and not shards.is_shard(dirs[0]):
        run_dir = dirs[0]
    else:
        run_dir = shards.merge_runs(dirs, args.out or shards.merged_name(dirs))
        err.print(f"merged {len(dirs)} shard directories into {run_dir}", highlight=False, markup=False, soft_wrap=True)
    results = run_dir / "results.jsonl"

    def skipped(lineno: int, reason: str) -> None:
        err.print(f"warning: {results}:{lineno}: not a valid result, left out of the summary and reports ({reason})",
                  highlight=False, markup=False, soft_wrap=True)

    summary, verdict = rebuild(run_dir, baseline=args.baseline, on_skipped=skipped)
    out = _stdout_console()
    print_summary(summary, out)
    out.print(f"rebuilt from {run_dir / 'results.jsonl'}: summary.json, report.md, junit.xml, report.html", highlight=False)
    print_verdict(verdict, out)
    return verdict.exit_code


def _cmd_compare(args: argparse.Namespace, err: Console) -> int:
    import json

    from tracejudge.stages.comparison.runs import compare_runs
    from tracejudge.stages.comparison.view import print_comparison

    if args.judge is not None:
        from tracejudge.entrypoints.calibrate import pairwise_command

        return pairwise_command(args, _stdout_console())
    if args.vs is not None:
        run_a, run_b = args.runs, args.vs
    elif len(args.runs) == 2:
        run_a, run_b = args.runs
    else:
        raise TracejudgeError("compare takes two runs (RUN_A RUN_B), or the baseline's shards then --vs and the current run's shards")
    cmp = compare_runs(run_a, run_b, metrics=args.metrics, top=args.top, seed=args.seed)
    if args.json:
        sys.stdout.write(json.dumps(cmp.as_dict(), indent=2) + "\n")
    else:
        print_comparison(cmp, _stdout_console())
    return EXIT_OK


def _cmd_simulate(args: argparse.Namespace, err: Console) -> int:
    import anyio
    from tracejudge.entrypoints.serve import until_signal
    from tracejudge.simulator.server import SimConfig, start_simulator

    for flag in ("error_rate", "agreement", "noise", "position_bias"):
        if not 0 <= getattr(args, flag) <= 1:
            err.print(f"--{flag.replace('_', '-')} must be between 0 and 1")
            return EXIT_BAD_INPUT
    config = SimConfig(latency_ms=args.latency_ms, rpm=args.rpm, tpm=args.tpm, error_rate=args.error_rate, seed=args.seed,
                       batch_completion_s=args.batch_completion_s, window=args.window, rate_headers=not args.no_rate_headers,
                       max_concurrency=args.max_concurrency, agreement=args.agreement, noise=args.noise, position_bias=args.position_bias,
                       json_object_only=args.json_object_only, tokenizer_factor=args.tokenizer_factor, context_tokens=args.context_tokens,
                       window_s=args.window_s, book=args.book, limit_count=args.limit_count)

    async def serve() -> None:
        try:
            runner, url = await start_simulator(config, args.port)
        except OSError as exc:  # in use, or not allowed (a port below 1024 without privileges)
            bind_error.append(f"error: --port {args.port}: cannot listen on 127.0.0.1:{args.port} ({exc.strerror or exc}); "
                              "pick another port, or 0 for a free one")
            return
        print(f"judge simulator listening on {url}  (OpenAI: {url}/v1/chat/completions, Anthropic: {url}/v1/messages)", flush=True)
        await until_signal(runner)

    bind_error: list[str] = []
    anyio.run(serve)
    if bind_error:
        err.print(bind_error[0], highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _cmd_estimate(args: argparse.Namespace, config, err: Console) -> int:
    from rich import box
    from rich.table import Table
    from tracejudge.core.console import cell, fitted, stdout_console
    from tracejudge.stages.judge.estimate import estimate, judge_metrics

    if not judge_metrics(config):
        err.print(f"error: {args.config}: no LLM-judge metric in `metrics:` (`tracejudge list metrics` marks them), "
                  "so a run sends nothing to a judge and costs nothing", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    got = estimate(config)
    rows = [*got["metrics"].items(), ("total", got["total"])]

    def build(level: int, name: Callable[[str], str]) -> Table:
        table = Table(title=f"judge estimate ({got['model']}; before any call)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                      collapse_padding=True)
        table.add_column("metric", no_wrap=True)  # names wrap between words (`fitted`), never mid-word: a cut one looked like its neighbour
        for col in ("cases", "requests", "cache\nhits", "input\ntokens", "cached\n(provider)", "output\ntokens\n(est.)", "dollars"):
            table.add_column(col, justify="right", no_wrap=True)
        for key, e in rows:
            dollars = f"${e.cost_usd:,.4f}" if got["priced"] else "no price"
            table.add_row(cell(name(key)), f"{e.cases:,}", f"{e.requests:,}", f"{e.cache_hits:,}", f"{e.input_tokens:,}", f"{e.cached_input_tokens:,}",
                          f"{e.output_tokens:,}", dollars)
        return table

    console = stdout_console()
    table = fitted(console, build, 1)
    console.print(table)
    console.print(f"judge.group: {got['group']} (a row naming several metrics is one request per case asking them all); "
                  f"mode: {got['mode']}; items per request: {got['items_per_request']}", highlight=False)
    lo, hi = got["range"]["low"], got["range"]["high"]
    why = (f"high: at the re-ask/repair rate of the last run in {got['run_dir']} ({got['reask_rate']:.2f} extra requests per request)"
           if got["reask_rate"] is not None else f"no earlier run in {got['run_dir']}: low assumes no repair or re-ask, high that every reply needs them")
    money = f", ${lo['cost_usd']:,.4f}–${hi['cost_usd']:,.4f}" if got["priced"] else ""
    console.print(f"range: {lo['requests']:,}–{hi['requests']:,} requests, {lo['input_tokens']:,}–{hi['input_tokens']:,} input and "
                  f"{lo['output_tokens']:,}–{hi['output_tokens']:,} output tokens{money} ({why})", highlight=False)
    b, t = got["budget"], got["total"]
    if b["max_judge_tokens"] is not None or b["max_cost_usd"] is not None:
        tokens = t.input_tokens + t.output_tokens
        console.print(f"budget: {tokens:,} of {format(b['max_judge_tokens'], ',') if b['max_judge_tokens'] is not None else 'unlimited'} tokens, "
                      f"${t.cost_usd:,.4f} of {('$' + format(b['max_cost_usd'], ',.2f')) if b['max_cost_usd'] is not None else 'unlimited'}", highlight=False)
    if t.truncated or t.too_long:
        console.print(f"too long for the judge's context (judge.too_long: {config.judge.too_long if config.judge else 'truncate'}): {t.truncated:,} requests "
                      f"priced as fitted (steps left out or fields cut, as the run sends them), {t.too_long:,} left out (the run sends nothing for them)",
                      highlight=False)
    if got["invalid_cases"]:
        console.print(f"{got['invalid_cases']} records are invalid and were left out (`tracejudge extract` lists them)", highlight=False)
    return EXIT_OK


def _cmd_discover(args: argparse.Namespace, err: Console) -> int:
    """`init`, `list` and `explain` (see `tracejudge.entrypoints.starter`)."""
    starter = _starter()
    if args.command == "list":
        if args.what == "formats":
            rows = {name: (summary, False) for name, summary in starter.format_summaries().items()}
        else:
            rows = starter.metric_summaries()
        width = max(map(len, rows)) + 2
        for name, (summary, judge) in rows.items():
            print(f"{name:<{width}}{'[judge] ' if judge else ''}{summary}")
        if args.what == "metrics":
            print("\n[judge]: an LLM judge (needs a judge: section). `tracejudge explain METRIC` for options and sources.")
        return EXIT_OK
    if args.command == "explain":
        try:
            print(starter.describe_metric(args.metric))
        except KeyError as exc:
            err.print(f"error: {exc.args[0]}", highlight=False, markup=False, soft_wrap=True)
            return EXIT_BAD_INPUT
        return EXIT_OK
    out: Path = args.output
    if out.exists() and not args.force:
        err.print(f"error: {out} exists; give another -o, or --force to overwrite it", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    for flag, path in (("--dataset", args.dataset), ("--tasks", args.tasks)):
        if path is not None and not path.exists():
            err.print(f"error: {flag} {path}: no such file or folder", highlight=False, markup=False, soft_wrap=True)
            return EXIT_BAD_INPUT
    text = starter.starter_config(args.format, out, args.dataset, args.tasks)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    todo = "" if args.dataset is not None else " (point dataset.path at your data first)"
    err.print(f"wrote {out}{todo}; run it with: tracejudge run {out}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_OK


def console_main() -> None:
    """The console script: `main()`, then exit even if an abandoned worker thread lingers.

    A sync python target that ignores its timeout keeps running in a worker
    thread that cannot be killed; its result is already discarded, so the
    process must not wait for it (CI would hang and lose the exit status).
    """
    code = main()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)


if __name__ == "__main__":
    console_main()
