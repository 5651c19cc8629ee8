"""The command line's exit statuses (see `tracejudge.entrypoints.cli`'s docstring for what each means)."""

from __future__ import annotations

import signal

__all__ = ["EXIT_ASSERTION", "EXIT_BAD_INPUT", "EXIT_BROKEN_PIPE", "EXIT_INTERNAL", "EXIT_IN_PROGRESS", "EXIT_INTERRUPTED", "EXIT_OK"]

EXIT_OK, EXIT_ASSERTION, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_IN_PROGRESS = 75  # EX_TEMPFAIL (sysexits.h): `report` on a run another process still writes; ask again later
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # 141: what a shell reports for a writer killed by SIGPIPE
