"""`run`: `subprocess.run` for the suite's `tracejudge` commands, each one a real process forked from an interpreter that
has already imported tracejudge.

The suite runs about 1,300 `tracejudge` commands as processes. A fresh interpreter spends most of a short command's CPU
importing (about 0.5 of the 0.7 CPU-s a three-case `run` costs); forked from a server that imported every module once,
the same command costs what its work costs. The command is still a process of its own: its own pid, standard streams,
working folder, environment, signals, exit status and exit handlers, entered as the console script or `python -m
tracejudge` enters it (`runpy`, so `sys.argv`, `sys.path[0]` and `__main__` are what a fresh interpreter has).

What a fork cannot reproduce goes to `subprocess.run` unchanged: a command that is not `tracejudge` (or is another
interpreter's), an environment whose interpreter settings differ from the server's (`PYTHON*`, the locale: a fresh
interpreter reads them before any code runs), and options this module does not implement. Tests about a command's
start-up itself (Ctrl-C while importing, the import time) use `subprocess` directly.

One server per test process (a pytest-xdist worker; `_forkserver_server.py`), started on first use and ended with it;
it exits on its own when the process that started it ends (its stdin reaches end of file).
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["run"]

_SCRIPT = Path(sys.executable).with_name("tracejudge")
# Read by a fresh interpreter before any code runs: a command asking for other values than the server's gets a fresh one.
_STARTUP_VARS = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE")
_RUN_OPTIONS = {"capture_output", "text", "universal_newlines", "cwd", "env", "timeout", "input", "check", "stdin", "stdout", "stderr",
                "encoding", "errors"}
_MAX_MESSAGE = 1 << 20


def run(args: Any, **options: Any) -> subprocess.CompletedProcess[Any]:
    """As `subprocess.run(args, **options)`; a `tracejudge` command (`[sys.executable, "-m", "tracejudge", ...]` or the
    console script) runs forked from the server when nothing in `options` needs a fresh interpreter.

    Returns `subprocess.CompletedProcess` (stdout/stderr as `subprocess.run` gives them: bytes, or text with universal
    newlines); raises `subprocess.TimeoutExpired` (the process killed) and `subprocess.CalledProcessError` (`check`) as
    `subprocess.run` does.
    """
    entry = _entry(args)
    if entry is None or set(options) - _RUN_OPTIONS:
        return subprocess.run(args, **options)
    try:
        server = _server()
    except OSError:
        return subprocess.run(args, **options)
    env = options.get("env")
    if not _same_startup(os.environ if env is None else env):
        return subprocess.run(args, **options)
    return _run_forked(server, args, entry, options)


def _entry(args: Any) -> tuple[str, str] | None:
    """("module", "tracejudge") or ("path", console script) when `args` runs tracejudge with this interpreter."""
    if not isinstance(args, (list, tuple)) or not args or not all(isinstance(a, (str, os.PathLike)) for a in args):
        return None
    first = os.fspath(args[0])
    if first == sys.executable and len(args) >= 3 and os.fspath(args[1]) == "-m" and os.fspath(args[2]) == "tracejudge":
        return ("module", "tracejudge")
    if first in (str(_SCRIPT), "tracejudge") and _SCRIPT.is_file():
        return ("path", str(_SCRIPT))
    return None


def _same_startup(env: Any) -> bool:
    names = {k for k in env if k.startswith("PYTHON") or k in _STARTUP_VARS} | {k for k in _SERVER_ENV if k.startswith("PYTHON") or k in _STARTUP_VARS}
    return all(env.get(k) == _SERVER_ENV.get(k) for k in names)


_SERVER_ENV: dict[str, str] = {}
_STATE: dict[str, Any] = {}
_LOCK = threading.Lock()


def _server() -> str:
    """The socket path of this process's server, started on first use."""
    with _LOCK:
        if _STATE.get("pid") == os.getpid():
            return _STATE["path"]
        folder = tempfile.mkdtemp(prefix="tj-forkserver-")
        path = os.path.join(folder, "s")
        env = dict(os.environ)
        proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_forkserver_server.py")), path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=folder)
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if ready.strip() != b"ready":
            proc.kill()
            proc.wait()
            raise OSError(f"the fork server did not start: {ready!r}")
        _SERVER_ENV.clear()
        _SERVER_ENV.update(env)
        _STATE.update(pid=os.getpid(), path=path, proc=proc, folder=folder)
        atexit.register(_stop, proc, folder)
        return path


def _stop(proc: subprocess.Popen[bytes], folder: str) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        os.unlink(os.path.join(folder, name))
    if os.path.isdir(folder):
        os.rmdir(folder)


def _run_forked(path: str, args: Any, entry: tuple[str, str], options: dict[str, Any]) -> subprocess.CompletedProcess[Any]:
    text = bool(options.get("text") or options.get("universal_newlines") or options.get("encoding") or options.get("errors"))
    capture = options.get("capture_output", False)
    stdout_opt = subprocess.PIPE if capture else options.get("stdout")
    stderr_opt = subprocess.PIPE if capture else options.get("stderr")
    data = options.get("input")
    stdin_opt = subprocess.PIPE if data is not None else options.get("stdin")
    if isinstance(data, str):
        data = data.encode(options.get("encoding") or _encoding(), options.get("errors") or "strict")
    timeout = options.get("timeout")
    deadline = None if timeout is None else time.monotonic() + timeout

    mine: list[int] = []  # this side's ends, read or written here
    theirs: list[int] = []  # the child's stdin, stdout, stderr (closed here once sent)
    opened: list[int] = []
    ends: dict[str, int] = {}
    try:
        for name, opt, fd in (("stdin", stdin_opt, 0), ("stdout", stdout_opt, 1), ("stderr", stderr_opt, 2)):
            if opt is None:
                theirs.append(fd)
            elif opt == subprocess.PIPE:
                r, w = os.pipe()
                child, here = (r, w) if name == "stdin" else (w, r)
                theirs.append(child)
                opened.append(child)
                ends[name] = here
                mine.append(here)
            elif opt == subprocess.DEVNULL:
                dn = os.open(os.devnull, os.O_RDWR)
                theirs.append(dn)
                opened.append(dn)
            elif opt == subprocess.STDOUT and name == "stderr":
                theirs.append(theirs[1])
            elif isinstance(opt, int):
                theirs.append(opt)
            else:
                theirs.append(opt.fileno())
        env = dict(os.environ if options.get("env") is None else options["env"])
        request = {"entry": entry, "argv": [os.fspath(a) for a in args], "cwd": os.path.abspath(os.fspath(options.get("cwd") or os.getcwd())), "env": env}
        payload = json.dumps(request).encode()
        if len(payload) > _MAX_MESSAGE:
            raise _Fallback()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.connect(path)
            socket.send_fds(conn, [payload], theirs)
        except OSError:
            conn.close()
            raise _Fallback() from None
        for fd in opened:
            os.close(fd)
        opened.clear()
        reply = json.loads(conn.recv(4096) or b"{}")
        if "pid" not in reply:
            conn.close()
            raise _Fallback()
        pid = reply["pid"]
        out, err, code = _communicate(conn, pid, ends, data, deadline, args, timeout, text, options)
    except _Fallback:
        for fd in opened + mine:
            os.close(fd)
        return subprocess.run(args, **options)
    if text:
        enc, errs = options.get("encoding") or _encoding(), options.get("errors") or "strict"
        out = None if out is None else out.decode(enc, errs).replace("\r\n", "\n").replace("\r", "\n")
        err = None if err is None else err.decode(enc, errs).replace("\r\n", "\n").replace("\r", "\n")
    done = subprocess.CompletedProcess(args, code, out, err)
    if options.get("check"):
        done.check_returncode()
    return done


class _Fallback(Exception):
    """The server cannot take this command: run it as a fresh process."""


def _encoding() -> str:
    import locale

    return locale.getpreferredencoding(False)


def _communicate(conn: socket.socket, pid: int, ends: dict[str, int], data: bytes | None, deadline: float | None, args: Any,
                 timeout: float | None, text: bool, options: dict[str, Any]) -> tuple[bytes | None, bytes | None, int]:
    """Feed stdin, read stdout/stderr to their end and the exit status from the server, as `Popen.communicate` does."""
    chunks: dict[str, list[bytes]] = {name: [] for name in ("stdout", "stderr") if name in ends}
    sel = selectors.DefaultSelector()
    pending = memoryview(data or b"")
    if "stdin" in ends:
        if pending:
            os.set_blocking(ends["stdin"], False)
            sel.register(ends["stdin"], selectors.EVENT_WRITE, "stdin")
        else:
            os.close(ends.pop("stdin"))
    for name in chunks:
        sel.register(ends[name], selectors.EVENT_READ, name)
    sel.register(conn, selectors.EVENT_READ, "status")
    code: int | None = None
    try:
        while sel.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                _kill(pid)
                out = b"".join(chunks["stdout"]) if "stdout" in chunks else None
                err = b"".join(chunks["stderr"]) if "stderr" in chunks else None
                if text:
                    out = None if out is None else out.decode(errors="replace")
                    err = None if err is None else err.decode(errors="replace")
                raise subprocess.TimeoutExpired(args, timeout, out, err)
            for key, _ in sel.select(left):
                name = key.data
                if name == "stdin":
                    try:
                        sent = os.write(ends["stdin"], pending[:65536])
                    except BrokenPipeError:
                        sent = len(pending)
                    pending = pending[sent:]
                    if not pending:
                        sel.unregister(ends["stdin"])
                        os.close(ends.pop("stdin"))
                elif name == "status":
                    msg = conn.recv(4096)
                    sel.unregister(conn)
                    code = json.loads(msg)["status"] if msg else -signal.SIGKILL
                else:
                    block = os.read(ends[name], 65536)
                    if block:
                        chunks[name].append(block)
                    else:
                        sel.unregister(ends[name])
                        os.close(ends.pop(name))
    finally:
        sel.close()
        for fd in ends.values():
            os.close(fd)
        conn.close()
        if code is None:
            _kill(pid)
    assert code is not None
    return (b"".join(chunks["stdout"]) if "stdout" in chunks else None, b"".join(chunks["stderr"]) if "stderr" in chunks else None, code)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
