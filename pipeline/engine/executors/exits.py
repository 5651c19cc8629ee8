"""How a worker process ended, in words a reader can act on: `exit code 3`, `killed by signal SIGKILL (9)`.

A dead worker's chunk is reported (`worker_error` results, the log) with the reason its end
gave. The pipe or socket to it closing says only that it ended; the process's exit status
says how: a signal from outside (SIGKILL: the OOM killer), a crash in C code (SIGSEGV), or
an exit of its own (`os._exit`). A forked worker's status comes from reaping it
(`executors.forked`). A spawned one (`anyio.to_process`) is reaped by the event loop inside
anyio, which keeps no reference to it for us: `watched` wraps each such process so that
its status, once anyio has closed it, is noted for the call that was using it (`noting`).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["WorkerDied", "ended", "noting", "watched"]

# What the running call (an `anyio.to_process` call in this task) learned of worker processes that ended under it.
_NOTED: ContextVar[list[tuple[int, str]] | None] = ContextVar("worker_ends", default=None)


class WorkerDied(Exception):
    """A worker process ended while computing a chunk; the message says how (`ended`), `pid` which process."""

    def __init__(self, how: str, pid: int) -> None:
        super().__init__(how)
        self.pid = pid


def ended(returncode: int) -> str:
    """`exit code N` for a process that exited, `killed by signal SIGKILL (9)` for one a signal ended.

    `returncode` as `subprocess` and `os.waitstatus_to_exitcode` give it: negative for a signal.
    """
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:  # a real-time signal has no name
        name = "signal"
    return f"killed by signal {name} ({-returncode})"


@contextlib.contextmanager
def noting() -> Iterator[list[tuple[int, str]]]:
    """Collect `(pid, how)` for each watched worker process anyio closes while the block runs (in this task).

    Within one `anyio.to_process.run_sync` call the worker it used is closed last (an idle worker it
    stops first is closed before the call starts a chunk), so the last entry is how that one ended.
    """
    found: list[tuple[int, str]] = []
    token = _NOTED.set(found)
    try:
        yield found
    finally:
        _NOTED.reset(token)


def _has_ended(pid: int) -> bool:
    # True when the process has ended (waiting to be reaped, or reaped already), without reaping it.
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped already (by the event loop's child watcher)
        return True


class _Watched:
    """anyio's worker process, everything passed through but `kill` (which never reaps) and `aclose` (which notes how it ended).

    anyio kills a worker whose pipe broke before it collects the exit status, and `subprocess`'s kill
    first reaps a process that has died: the event loop's child watcher then found an unknown child,
    logged "Unknown child process pid …" and read 255. Signalled directly, a dead or dying process
    keeps the status it ended with (a signal changes nothing once it exits), and the watcher reads it.
    """

    def __init__(self, process: Any) -> None:
        self._process = process

    def __getattr__(self, name: str) -> Any:
        return getattr(self._process, name)

    def kill(self) -> None:
        if not hasattr(os, "waitid"):
            self._process.kill()
        elif not _has_ended(self._process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._process.pid, signal.SIGKILL)

    async def aclose(self) -> None:
        await self._process.aclose()
        found = _NOTED.get()
        if found is not None and self._process.returncode is not None:
            found.append((self._process.pid, ended(self._process.returncode)))


def watched(process: Any) -> Any:
    """`process` (an anyio `Process` started for `anyio.to_process`) noting, through `noting`, how it ended once dead."""
    return _Watched(process)
