"""Run a command on a pseudo-terminal of a given size and collect what it drew (for terminal-specific output)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
from pathlib import Path
import _forkserver


def run_in_pty(argv: list[str], cwd: Path, *, columns: int = 80, env: dict[str, str] | None = None) -> tuple[str, int]:
    """`argv` with stdin, stdout and stderr on a `columns`-wide pty; returns (the text it drew, escapes and CRs removed; exit status)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = _forkserver.popen(argv, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env={**base, "TERM": "xterm", **(env or {})})
    os.close(slave)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            assert ready, out[-2000:]
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
        os.close(master)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace")).replace("\r", ""), code
