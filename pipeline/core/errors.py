"""Errors that end a command before any work starts (exit status 2)."""

from __future__ import annotations

import errno
import sys

__all__ = [
    "FULL_DISK", "ConfigError", "ManifestError", "ParameterError", "TracejudgeError", "UnguardedScript", "Unreachable", "describe", "for_command", "full_disk", "leaves", "os_error", "refuse_in_worker_import",
    "text_of",
]


class TracejudgeError(Exception):
    """Base class of tracejudge's own errors; `exit_status` is the CLI's exit status for it (2: bad config or input)."""

    exit_status = 2


class ConfigError(TracejudgeError):
    """A config or its overrides are invalid.

    `str(error)` names the file, the key path (and line when known) and what
    was expected, one problem per line.
    """


class ParameterError(ConfigError, ValueError):
    """A metric built in Python (`tracejudge.ToolCalls(argument="exact")`) was given a parameter it does not take, or a
    value it refuses.

    `str(error)` has one line a mistake, `Type: key: what is wrong`, with the nearest valid name or value as a config's
    error gives it (`ToolCalls: argument: unknown parameter; did you mean arguments?`). It is a `ConfigError`, as
    `evaluate` raises for a bad `{"type": …}` spec, and a `ValueError`, as pydantic's `ValidationError` it replaces was.
    """


class ManifestError(TracejudgeError):
    """A run directory's `manifest.json` is not a JSON object (a hand edit, a file cut short).

    `str(error)` names the file and what is wrong, then what to do about it, which depends on the command that read it:
    `run`'s advice (move the directory aside, or `--fresh`) by default; `for_command("compare")` gives the one a
    command that only reads the run can follow (restore the file, or run the config on the run again to rewrite it).
    """

    def __init__(self, path: str, problem: str, command: str = "run") -> None:
        self.path, self.problem, self.command = path, problem, command
        super().__init__(str(self))

    def __str__(self) -> str:
        # (a FIFO, a device or a socket in its place (`regular_file.NotRegularFile`) was never JSON to be invalid)
        what = self.problem if self.problem.startswith("not a regular file") else f"not valid JSON ({self.problem})"
        return f"{self.path}: manifest is {what}; {self._advice()}"

    def for_command(self, command: str) -> ManifestError:
        """The same error, advising what `command` (`report`, `compare`, `export`; `run`) can do about it."""
        return ManifestError(self.path, self.problem, command)

    def _advice(self) -> str:
        if self.command == "run":
            return "move the run directory aside or use --fresh"
        # `run` reads a manifest that is not JSON as missing and rewrites it from the config, keeping the results; the
        # reading commands take the run's config from it (metrics, trials, the dataset's identity), so they cannot.
        import os

        run_dir = os.path.dirname(self.path) or "."
        return (f"{self.command} reads the run's config from it: restore it from a copy, or run the config the run was made "
                f"with on it again (tracejudge run CONFIG --run-dir {run_dir}), which rewrites it and keeps the results")


def for_command(exc: BaseException, command: str) -> str:
    """The message of `exc` as `command` prints it: a `ManifestError` with that command's advice, any other as it is."""
    return str(exc.for_command(command)) if isinstance(exc, ManifestError) else text_of(exc)


class Unreachable(TracejudgeError):
    """A trace store or sink (Phoenix, MLflow), the Ray cluster or a live http target is down or refused us: exit status 3, not 2.

    The message names the URL and what failed, never a credential.
    """

    exit_status = 3


class UnguardedScript(TracejudgeError):
    """A run was started while a worker process was importing the user's script.

    Worker processes (tracejudge's `run.processes`, like `multiprocessing`'s
    spawn) import the parent's script under the name `__mp_main__` so that
    functions defined there can travel; a run started at its top level would
    run again in every worker.
    """


def refuse_in_worker_import(what: str) -> None:
    """Raise `UnguardedScript` when called while a worker process imports the parent's script.

    `what` names what was started, for the message (`"a tracejudge run"`).
    """
    main = sys.modules.get("__main__")
    # anyio's worker removes __main__ while it re-runs the script; multiprocessing's spawn renames it.
    if main is None or getattr(main, "__name__", "") == "__mp_main__":
        raise UnguardedScript(
            f"{what} was started while a worker process imported your script: worker processes re-run a script's "
            "top level, so put the call under `if __name__ == \"__main__\":` (or set run.processes: 1)"
        )


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside `exc`, exception groups flattened (depth first), or `[exc]` itself."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaves(sub)]
    return [exc]


_DESCRIBED = 3  # leaves of an exception group named in `describe`; the rest are counted


def describe(exc: BaseException) -> str:
    """`"ValueError: bad input"`: `exc`'s type and message, for a result's error or a score's reason.

    An exception group (from a task group: an agent or metric that runs things concurrently) is
    described by what it holds, not by its own message (`unhandled errors in a TaskGroup (1
    sub-exception)`, which says nothing of what went wrong): its leaves (`leaves`), up to three,
    joined by `"; "`, then `"; and N more"`.
    """
    found = leaves(exc)
    if len(found) == 1 and found[0] is exc:
        return _named(exc)
    parts = [_named(e) for e in found[:_DESCRIBED]]
    if len(found) > _DESCRIBED:
        parts.append(f"and {len(found) - _DESCRIBED} more")
    return "; ".join(parts) if parts else _named(exc)


def text_of(exc: BaseException) -> str:
    """`str(exc)`, never raising: user code's exception whose `__str__` is broken must not turn the description of one
    failure (a metric's, an agent's, an adapter's, the crash line) into a second one. Such a text reads
    `(its message could not be read: its __str__ raised RuntimeError)`."""
    try:
        return str(exc)
    except Exception as failed:
        return f"(its message could not be read: its __str__ raised {type(failed).__name__})"


def _named(exc: BaseException) -> str:
    text = text_of(exc)  # (one without a message reads as Python's traceback shows it: `GeneratorExit`, not `GeneratorExit: `)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def os_error(exc: OSError) -> str:
    """`OSError: [Errno 28] No space left on device`: class, errno and text, without the file name (said apart)."""
    return f"{type(exc).__name__}: [Errno {exc.errno}] {exc.strerror}" if exc.errno else f"{type(exc).__name__}: {exc}"


# A write refused for want of room, in the words every command says it with (`disk full: cannot write FILE (…)`).
FULL_DISK = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded", errno.EFBIG: "file size limit reached"}


def full_disk(exc: BaseException) -> OSError | None:
    """The first error in `exc` (a group's leaves too) that is a write refused for want of room (`FULL_DISK`), or None."""
    return next((e for e in leaves(exc) if isinstance(e, OSError) and e.errno in FULL_DISK), None)
