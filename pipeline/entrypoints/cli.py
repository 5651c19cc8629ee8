"""The `tracejudge` command line.

Exit statuses, so CI can tell "the agent regressed" from "the tool broke":

- 0 PASS: the run finished and every assertion held;
- 1 FAIL: an assertion (the gate) failed;
- 2 bad config or input: nothing was run;
- 3 internal error (out of memory too): one line on stderr names the error and the file holding
  the traceback (`RUN_DIR/crash.log`, or a temporary file before a run
  directory is known); or a full disk (ENOSPC, a quota, a file-size limit):
  one line says what could not be written, that the results already written
  are intact, and the command that resumes. Not 2: something was run and
  the input is fine; like an internal error, it says "the tool's machine
  failed", never a verdict on the agent;
- 75 `report` on a run that another `tracejudge run` still writes: the
  figures so far, verdict IN PROGRESS naming the process, nothing written;
- 130 interrupted (Ctrl-C, SIGTERM): the verdict line says INTERRUPTED and
  gives the command that resumes the run (so does `report` on such a run);
- 141 stdout was closed early (`... -o - | head -1`): the reader took what
  it wanted; no message, no crash log (128 + SIGPIPE, what a shell reports).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING

from tracejudge.core.errors import ConfigError, TracejudgeError, for_command, leaves
from tracejudge.entrypoints.commands.exits import (
    EXIT_ASSERTION,
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
)

if TYPE_CHECKING:
    import argparse

    from rich.console import Console

# Each command is a module of `tracejudge.entrypoints.commands`, imported by `_dispatch` when it is the one asked for, and it
# imports what it needs in its own function (rich, anyio, the config models, the engine, the stages): `tracejudge --help`
# and every subprocess a test suite starts pay only for the command they run. The parser and the failure handling are
# imported when used too: importing this module alone (a spawned worker re-importing a user's script that imports it)
# loads only the exit statuses.

__all__ = ["EXIT_ASSERTION", "EXIT_BROKEN_PIPE", "EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_OK", "console_main", "main"]


def _parser() -> argparse.ArgumentParser:
    """The command line's parser (`tracejudge.entrypoints.commands.parser.build_parser`)."""
    from tracejudge.entrypoints.commands.parser import build_parser

    return build_parser()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status (see the module docstring).

    Never raises, except `SystemExit` from argument parsing (`--help`,
    `--version`, a usage error: status 0 or 2).
    """
    from tracejudge.core.errors import refuse_in_worker_import

    # A script calling `main` at its top level is imported again by each spawned worker; without this the
    # worker's own argv made argparse exit there, and the run went in-process without the advice.
    refuse_in_worker_import("tracejudge's command line (`entrypoints.cli.main`)")
    from tracejudge.core.lazy_numpy import single_blas_thread

    single_blas_thread()  # a run uses numpy only for small arrays: no BLAS threads spinning beside it
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    args.argv = argv
    from tracejudge.core import log
    from tracejudge.core.console import plain_console

    log.configure(args.log_level)
    # Messages on stderr are never hard-wrapped: a path or `file:line` cut in two cannot be copied or grepped.
    err = plain_console(stderr=True, soft_wrap=True)
    from tracejudge.entrypoints.commands import failures

    failures.hold_reserve()
    try:
        code = _dispatch(args, err)
        sys.stdout.flush()  # a closed pipe shows here at the latest, not at interpreter exit
        return code
    except KeyboardInterrupt:
        # Ctrl-C outside a run's own signal handling (loading a config, a report), or user code (a metric, an
        # agent) raising it.
        return _interrupted(err)
    except Exception as exc:  # the tool broke: say so in one line, keep the traceback in a file
        from tracejudge.entrypoints.launch import interrupted_at_startup

        if interrupted_at_startup():  # (a Ctrl-C a library turned into its own error: `launch.interrupted_at_startup`)
            return _interrupted(err)
        return _failed(args, exc, err)
    except BaseExceptionGroup as group:
        # User code that raises KeyboardInterrupt inside a task group of its own arrives wrapped: still an interrupt,
        # whatever sits beside it (the run's other tasks break on the streams it closed; asyncio's TaskGroup lets a
        # KeyboardInterrupt override its siblings' errors too).
        if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves(group)):
            return _interrupted(err)
        return _failed(args, group, err)
    except BaseException as exc:
        import asyncio

        if not isinstance(exc, asyncio.CancelledError):
            raise  # (SystemExit, GeneratorExit: as Python ends on them)
        # A cancellation no stop made (a run's stop ends without raising, or as 130: `commands.run`): user code (a
        # metric, the agent) cancelled tasks it does not own. An internal error, not an interrupt.
        return _failed(args, exc, err)
    finally:
        log.reset()  # called in-process (tests, a wrapper script): the caller's logging is as it was


def _interrupted(err: Console) -> int:
    """Exit 130 with the one line `interrupted`, whichever way the KeyboardInterrupt arrived."""
    # A second Ctrl-C while the process exits must not turn the exit into a traceback or a death by SIGINT.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    err.print("interrupted", highlight=False)
    return EXIT_INTERRUPTED


def _failed(args: argparse.Namespace, exc: BaseException, err: Console) -> int:
    """The exit status of an exception that escaped a command: a closed stdout, a full disk, an unusable path, else a crash."""
    from tracejudge.entrypoints.commands import failures

    return failures.broken_pipe(exc) or failures.storage_full(args, exc, err) or failures.unusable_path(exc, err) or failures.crash(args, exc, err)


def _dispatch(args: argparse.Namespace, err: Console) -> int:
    from rich.markup import escape

    if args.command != "run":
        gc.enable()  # paused for start-up (`entrypoints.launch`); a run turns it on itself when it starts (`engine.runner`)

    if args.command in ("init", "list", "explain"):
        from tracejudge.entrypoints.commands import discover

        return discover.command(args, err)
    if args.command in ("simulate", "view") and not 0 <= args.port <= 65535:
        err.print(f"error: --port {args.port}: a TCP port is 0 to 65535 (0 picks a free one)", highlight=False)
        return EXIT_BAD_INPUT
    if args.command == "simulate":
        from tracejudge.entrypoints.commands import simulate

        return simulate.command(args, err)
    if args.command == "view":
        from tracejudge.viewer.command import serve_command

        return serve_command(args.run_dirs, args.port, args.baseline)
    if args.command == "bench":
        from tracejudge.entrypoints import bench

        return bench.command(args, err)
    if args.command == "calibrate":
        from tracejudge.entrypoints import calibrate

        return calibrate.command(args, err)
    if args.command == "export":
        from tracejudge.entrypoints import export_cmd

        return export_cmd.command(args, err)
    if args.command in ("report", "compare"):
        from tracejudge.entrypoints.commands import compare, report

        try:
            return report.command(args, err) if args.command == "report" else compare.command(args, err)
        except TracejudgeError as exc:
            err.print(f"[bold red]error:[/] {escape(for_command(exc, args.command))}", highlight=False, markup=True, soft_wrap=True)
            return EXIT_BAD_INPUT
    from tracejudge.core.config_source import read_config

    overrides, typed = list(args.overrides), {}
    if args.command == "run" and args.shard is not None:
        overrides.append(f"run.shard={args.shard}")
        typed[overrides[-1]] = f"--shard {args.shard}"  # an error names the option the user typed
    ahead = None
    try:
        source = read_config(args.config, overrides, typed=typed)
        if args.command == "run" and args.rescore is None:
            from tracejudge.engine.fingerprint_ahead import ahead_of_source

            # The dataset is hashed for the manifest while pydantic, the config models and the run's modules load and
            # the config is validated (`engine.fingerprint_ahead`); `run.command` takes the hash over.
            ahead = ahead_of_source(source.data)
        from tracejudge.core.config import require_metrics, validate_config

        # extract only converts: questions without traces are still worth writing out as native cases.
        config = validate_config(source.data, source=source.source, lines=source.lines, overridden=source.overridden,
                                 scoring=args.command != "extract")
        if args.command == "run":
            require_metrics(config, str(args.config), overrides)
    except BaseException as exc:
        if ahead is not None:
            ahead.close()
        if not isinstance(exc, ConfigError):
            raise
        err.print(f"[bold red]config error[/]\n{escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
        return EXIT_BAD_INPUT
    if args.command == "run" and config.run.shard is not None and args.run_dir is None:
        from tracejudge.engine.shards import parse_shard, shard_run_dir

        args.run_dir = shard_run_dir(config.run.dir, parse_shard(config.run.shard))
    if args.command == "run":
        args.crash_dir = args.run_dir or config.run.dir
    try:
        if args.command == "run":
            from tracejudge.entrypoints.commands import run

            if args.rescore is not None:
                config, args.run_dir = run.rescore(args, config, err)
            return run.command(args, config, err, ahead)
        if args.command == "extract":
            from tracejudge.entrypoints.commands import extract

            return extract.command(args, config, err)
        if args.command == "estimate":
            from tracejudge.entrypoints.commands import estimate

            return estimate.command(args, config, err)
    except ConfigError as exc:
        from tracejudge.core.config_source import locate

        # (raised once the config is read, about the dataset it names: where the key is said as for the config's own errors)
        err.print(f"[bold red]config error[/]\n{escape(locate(str(exc), source))}", highlight=False, markup=True, soft_wrap=True)
        return EXIT_BAD_INPUT
    except (TracejudgeError, BaseExceptionGroup) as exc:
        # Errors raised inside the task group arrive wrapped in an exception group.
        found = leaves(exc)
        if not all(isinstance(leaf, TracejudgeError) for leaf in found):
            raise  # an internal error: `main` reports it (exit 3)
        for leaf in found:
            err.print(f"[bold red]error:[/] {escape(for_command(leaf, args.command))}", highlight=False, markup=True, soft_wrap=True)
        # A trace store that is down is no verdict on the config: the same command works once it is up.
        return max(getattr(leaf, "exit_status", EXIT_BAD_INPUT) for leaf in found)
    return EXIT_BAD_INPUT


def console_main() -> None:
    """The console script: `main()`, then exit even if an abandoned worker thread lingers.

    A sync python target that ignores its timeout keeps running in a worker
    thread that cannot be killed; its result is already discarded, so the
    process must not wait for it (CI would hang and lose the exit status).
    """
    code = main()
    if _lingering():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    # The process ends here: the collection the interpreter makes on its way out would only walk every object
    # still alive (modules, their pydantic schemas, what the run kept) to free memory the OS takes back anyway,
    # about 0.05 CPU-s after a run of 10,000 cases. Everything the command wrote is closed by now.
    gc.freeze()
    _exit_without_teardown(code)
    raise SystemExit(code)


def _exit_without_teardown(code: int) -> None:
    """End the process with `code` as `SystemExit(code)` would, less the interpreter's teardown; return if it cannot.

    The standard streams are flushed and the exit handlers run (atexit: logging's, a coverage tool's, a user's), as
    the interpreter runs them; what is left is freeing every object still alive one by one (modules, pydantic schemas,
    the run's report material), about 20 ms of wall time after a 10,000-case run, for memory the OS takes back at
    once. A stream that cannot be flushed (a closed pipe) returns, so the usual exit reports it as it does.
    """
    import atexit

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()  # (each handler runs once: the call empties the list)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


_WIND_DOWN_S = 0.5
"""How long the command waits, in all, for threads still ending after a run before it exits without them."""


def _lingering() -> bool:
    """True when a non-daemon thread other than this one is still alive after up to `_WIND_DOWN_S` seconds (in all) of
    waiting for such threads to end.

    An event loop's idle worker threads are told to stop when the loop closes and end a moment later; on a loaded
    machine one was sometimes still alive here, and the command left through `os._exit`, skipping atexit handlers
    (a coverage tool's, a user's) for no thread that needed abandoning.
    """
    deadline = time.monotonic() + _WIND_DOWN_S
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon and t.is_alive():
            t.join(max(0.0, deadline - time.monotonic()))
    return any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread())


if __name__ == "__main__":
    console_main()
