"""The command line's entry point, the console script's and `python -m tracejudge`'s: Ctrl-C at any moment of start-up
exits 130 without a traceback.

Importing the CLI (rich, anyio, pydantic models, the stages) takes a second
or more on a loaded machine, and Python's default SIGINT handling raises
`KeyboardInterrupt` wherever the import is. This module imports nothing of
tracejudge at its top (the `tracejudge` package itself is lazy), so the
`try` below is in place before anything slow starts; from then on a Ctrl-C
is either this `except` or, once a run's loop is up, the run's own signal
handling (`tracejudge.entrypoints.cli`).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Callable

__all__ = ["console_main", "first_interrupt", "interrupted_at_startup"]

EXIT_INTERRUPTED = 130
_INTERRUPTED = [False]  # (set by `first_interrupt`: process state about one signal, as the SIGINT disposition itself is)


def first_interrupt(signum: int, frame: object) -> None:
    """The command's SIGINT handler until a run installs its own: `KeyboardInterrupt`, as Python's default handler raises,
    with SIGINT ignored from then on.

    With Python's own handler a second Ctrl-C could land while the first one unwound an import, inside the
    callback that drops the import's lock, where an exception is only printed: a traceback on the terminal.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _INTERRUPTED[0] = True
    raise KeyboardInterrupt


def interrupted_at_startup() -> bool:
    """True once a Ctrl-C reached `first_interrupt`. An exception raised after it is that interrupt: a library that
    catches a `KeyboardInterrupt` can raise its own error instead (pydantic-core building a model class, as it is
    imported, raises `SchemaError: … KeyboardInterrupt`), which is no crash of the tool."""
    return _INTERRUPTED[0]


def console_main() -> None:
    """Run `tracejudge.entrypoints.cli.console_main`; a Ctrl-C before its own handling exits 130 with one line."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, first_interrupt)
        sys.unraisablehook = _unraisable
    # Start-up (imports, pydantic schemas, the config) made about 90 collections, about 20 ms of CPU before a run could
    # start, over objects that all live until the process ends. The collector is on again once start-up is over: for
    # a run when it starts (`engine.runner`), for every other command before it does its work (`entrypoints.cli`).
    gc.disable()
    try:
        from tracejudge.entrypoints.cli import console_main as cli_main

        cli_main()
    except Exception:
        if not _INTERRUPTED[0]:
            raise
        _exit_interrupted()
    except KeyboardInterrupt:
        _exit_interrupted()


def _unraisable(info: sys.UnraisableHookArgs, default: Callable[[sys.UnraisableHookArgs], object] = sys.__unraisablehook__) -> None:
    """`sys.unraisablehook` while start-up runs: the `KeyboardInterrupt` of `first_interrupt` raised inside a callback
    (the one that drops an import's module lock, a weakref's) is not printed as "Exception ignored in …"; the Ctrl-C is
    not lost, `interrupted_at_startup` tells the run (`commands.run`), which stops before it begins. Others: Python's."""
    if not (_INTERRUPTED[0] and isinstance(info.exc_value, KeyboardInterrupt)):
        default(info)


def _exit_interrupted() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while exiting changes nothing
    try:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError, KeyboardInterrupt):
        pass
    os._exit(EXIT_INTERRUPTED)  # not SystemExit: a second Ctrl-C during interpreter shutdown could still print a traceback
