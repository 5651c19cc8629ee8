"""Target kind `command`: one process per turn, request JSON on stdin, reply JSON on stdout.

For agents written in other languages. The process is killed when the case
times out (anyio kills it when the waiting task is cancelled).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
from tracejudge.core.errors import ConfigError
from tracejudge.stages.target.protocol import TargetError, TargetReply, TargetRequest, TransientTargetError, coerce_reply

__all__ = ["command_caller"]


def _tail(data: bytes, limit: int = 500) -> str:
    text = data.decode(errors="replace").strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def check_program(argv: Sequence[str], cwd: Path | None) -> None:
    """Raise `ConfigError` when `argv[0]` is neither a file in `cwd` (default: the current directory) nor on `PATH`."""
    program = argv[0]
    if shutil.which(program, path=None) is None and not (cwd or Path.cwd()).joinpath(program).exists():
        raise ConfigError(f"target.command: program {program!r} not found (not a file in {cwd or Path.cwd()} and not on PATH)")


def command_caller(argv: Sequence[str], cwd: Path | None, transient_exit_codes: Sequence[int]) -> Callable[[TargetRequest], Awaitable[TargetReply]]:
    """An async target call that runs `argv` in `cwd` for each turn.

    Raises `ConfigError` now when `argv[0]` is neither a path nor on `PATH`.
    Per call: an exit status in `transient_exit_codes` is a
    `TransientTargetError`; another non-zero status, or stdout that is not a
    JSON reply, is a `TargetError` quoting the end of stderr (or stdout).
    """
    program = argv[0]
    check_program(argv, cwd)
    transient = set(transient_exit_codes)

    async def call(request: TargetRequest) -> TargetReply:
        payload = request.model_dump_json().encode()
        try:
            proc = await anyio.run_process(list(argv), input=payload, check=False, cwd=cwd)
        except OSError as exc:
            raise TargetError(f"cannot start {program!r}: {exc}") from None
        if proc.returncode != 0:
            why = _tail(proc.stderr) or _tail(proc.stdout) or "(no output)"
            msg = f"{program} exited with status {proc.returncode}: {why}"
            if proc.returncode in transient:
                raise TransientTargetError(msg)
            raise TargetError(msg)
        try:
            value = json.loads(proc.stdout)
        except ValueError:
            raise TargetError(f"{program} wrote no JSON reply on stdout: {_tail(proc.stdout, 200)!r}") from None
        return coerce_reply(value)

    return call
