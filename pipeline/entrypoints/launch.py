"""The console script's entry point: Ctrl-C at any moment of start-up exits 130 without a traceback.

Importing the CLI (rich, anyio, pydantic models, the stages) takes a second
or more on a loaded machine, and Python's default SIGINT handling raises
`KeyboardInterrupt` wherever the import is. This module imports nothing of
tracejudge at its top (the `tracejudge` package itself is lazy), so the
`try` below is in place before anything slow starts; from then on a Ctrl-C
is either this `except` or, once a run's loop is up, the run's own signal
handling (`tracejudge.entrypoints.cli`).
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["console_main"]

EXIT_INTERRUPTED = 130


def console_main() -> None:
    """Run `tracejudge.entrypoints.cli.console_main`; a Ctrl-C before its own handling exits 130 with one line."""
    try:
        from tracejudge.entrypoints.cli import console_main as cli_main

        cli_main()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while exiting changes nothing
        try:
            sys.stderr.write("interrupted\n")
            sys.stderr.flush()
        except (OSError, ValueError, KeyboardInterrupt):
            pass
        os._exit(EXIT_INTERRUPTED)  # not SystemExit: a second Ctrl-C during interpreter shutdown could still print a traceback
