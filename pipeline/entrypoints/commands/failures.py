"""What the command line does with an exception that escaped a command: each function returns an exit status.

Tried in order by `cli.main`: a closed stdout (141), a full disk (3, with the
command that resumes), a path that cannot be used as given (2), anything else
(3, the traceback in a crash log).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import mmap
import os
import shlex
import sys
import tempfile
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tracejudge.core.regular_file import NotRegularFile
from tracejudge.core.errors import FULL_DISK, full_disk, leaves, text_of
from tracejudge.core.out_of_memory import free_frames, out_of_memory
from tracejudge.core.version import __version__
from tracejudge.entrypoints.commands.exits import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERNAL

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["broken_pipe", "crash", "hold_reserve", "storage_full", "unusable_path"]


def broken_pipe(exc: BaseException) -> int:
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
_PATH_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, NotRegularFile)


def _path_error(leaf: BaseException) -> bool:
    # A read-only file system (EROFS: a read-only mount, a snapshot) refuses writes as a missing permission
    # does, but raises a plain OSError; root, whom file modes do not stop, meets only this one.
    return isinstance(leaf, _PATH_ERRORS) or (isinstance(leaf, OSError) and leaf.errno == errno.EROFS)


def unusable_path(exc: BaseException, err: Console) -> int | None:
    """Exit 2 with one line per path if every error in `exc` is a file or folder the user named that cannot be used; else None."""
    found = leaves(exc)
    if not found or not all(_path_error(leaf) for leaf in found):
        return None
    lines = []
    for leaf in found:
        assert isinstance(leaf, OSError)
        where = leaf.filename if leaf.filename is not None else ""
        lines.append(f"error: {where}: {leaf.strerror or type(leaf).__name__}")
    for line in dict.fromkeys(lines):  # one file met by two tasks at once (the run and its count for the ETA) is said once
        err.print(line, highlight=False, markup=False, soft_wrap=True)
    return EXIT_BAD_INPUT


def storage_full(args: argparse.Namespace, exc: BaseException, err: Console) -> int:
    """One line for a write that failed for want of space (exit 3: the run did not finish, or finished without writing
    its summary or reports: not a verdict); 0 if not that."""
    leaf = full_disk(exc)
    if leaf is None:
        return 0
    if getattr(args, "command", None) == "report":
        return _report_full(args, leaf, err)
    run_dir = Path(getattr(args, "crash_dir", None) or ".")
    results = run_dir / "results.jsonl"
    try:
        with open(results, "rb") as fh:
            count: int | None = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        count = None
    what = leaf.filename or run_dir
    from tracejudge.engine.run_state import finished_here

    if getattr(args, "crash_dir", None) and count is not None and finished_here(run_dir):
        # The segment closed `finished` before its summary or a report failed: nothing is left to redo, and `report`
        # writes what is missing from the results, as a resume with nothing to do would.
        unwritten = f"{leaf.filename} could not be written" if leaf.filename else f"its summary and reports could not all be written in {run_dir}"
        err.print(f"disk full: the run is complete, its {count} results all in {results}, but {unwritten} ({FULL_DISK[leaf.errno]}). "
                  f"Free space, then write them with: tracejudge report {shlex.quote(str(run_dir))}", highlight=False, markup=False,
                  soft_wrap=True)
        return EXIT_INTERNAL
    kept = f"the {count} results in {results} are intact" if count is not None else "nothing already written is lost"
    resume = getattr(args, "resume_command", None) or "the same command"
    err.print(f"disk full: cannot write {what} ({FULL_DISK[leaf.errno]}); {kept}, and only unwritten results will be redone. "
              f"Free space, then resume with: {resume}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_INTERNAL


def _report_full(args: argparse.Namespace, leaf: OSError, err: Console) -> int:
    # `report` redoes no result and resumes nothing: what it could not write, and the same `report` once space is freed.
    what = leaf.filename or f"the summary and reports of {', '.join(str(d) for d in args.run_dirs)}"
    again = ["tracejudge", "report", *map(str, args.run_dirs)]
    again += [*(["--out", str(args.out)] if args.out else []), *(["--baseline", str(args.baseline)] if args.baseline else [])]
    err.print(f"disk full: cannot write {what} ({FULL_DISK[leaf.errno]}); the results are untouched (report only reads them). "
              f"Free space, then run again: {shlex.join(again)}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_INTERNAL


def _crash_log_path(args: argparse.Namespace) -> Path:
    run_dir = getattr(args, "crash_dir", None)
    if run_dir is not None and Path(run_dir).is_dir():
        return Path(run_dir) / "crash.log"
    fd, name = tempfile.mkstemp(prefix="tracejudge-crash-", suffix=".log")
    os.close(fd)
    return Path(name)


# Address space set aside when a command starts and given back on a MemoryError, so the crash log can still be
# written: without it, formatting the traceback ran out of memory too and Python printed a bare MemoryError, exit 1.
_reserve: mmap.mmap | None = None


def hold_reserve(size: int = 32 << 20) -> None:
    """Set aside `size` bytes of address space (untouched anonymous pages: no resident memory) for `crash`."""
    global _reserve
    if _reserve is None:
        with contextlib.suppress(OSError, ValueError):
            _reserve = mmap.mmap(-1, size)


def _free_memory(exc: BaseException) -> None:
    # What the failing frames still hold (the half-built list that ran out) goes with their locals;
    # the traceback keeps every file and line.
    global _reserve
    if _reserve is not None:
        _reserve.close()
        _reserve = None
    free_frames(exc)


def crash(args: argparse.Namespace, exc: BaseException, err: Console) -> int:
    """Exit 3: the traceback goes to `RUN_DIR/crash.log` (or a temporary file), one line on stderr names the error and that file.

    On a MemoryError, or an error raised while one was handled (`core.out_of_memory`: the one line names the MemoryError), the
    failing frames' locals and the start-up reserve are freed first; if writing the log still fails, it is tried once
    more, then the one line says so, and the exit status is 3 all the same (never Python's bare traceback and 1).
    """
    oom = out_of_memory(exc)
    if oom is not None:
        _free_memory(exc)
        for last in (False, True):
            try:
                return _crash(args, exc, err, oom)
            # Out of memory again, or CPython's own SystemError ("error return without exception set") from an allocation
            # that failed deep inside C code the log's writing reached: the memory that failed is often back a moment later.
            except Exception:
                if last:
                    with contextlib.suppress(Exception):
                        err.print("internal error: MemoryError: out of memory (the traceback could not be written)", highlight=False, markup=False)
                    return EXIT_INTERNAL
                gc.collect()
    return _crash(args, exc, err)


def _crash(args: argparse.Namespace, exc: BaseException, err: Console, oom: MemoryError | None = None) -> int:
    leaf = oom if oom is not None else leaves(exc)[0]
    text = "".join(traceback.format_exception(exc))
    header = f"{datetime.now(UTC).isoformat(timespec='seconds')} tracejudge {__version__}: {' '.join(map(shlex.quote, ['tracejudge', *args.argv]))}\n"
    try:
        path = _crash_log_path(args)
        # backslashreplace: the error may be about text UTF-8 cannot carry (a path holding a byte that is not UTF-8), which
        # must not make the crash log itself fail with a second traceback.
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(header + text + "\n")
        where = f"traceback in {path}"
    except OSError as write_error:
        where = f"traceback could not be written ({write_error.strerror}); run with --log-level debug"
    text = text_of(leaf)
    message = text.splitlines()[0] if text else "out of memory" if isinstance(leaf, MemoryError) else ""
    from tracejudge.core.utf8 import safe_text

    err.print(f"internal error: {type(leaf).__name__}: {safe_text(message[:300])} ({where})", highlight=False, markup=False, soft_wrap=True)
    return EXIT_INTERNAL
