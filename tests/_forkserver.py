"""`run` and `popen`: `subprocess.run` and `subprocess.Popen` for the suite's `tracejudge` commands, each one a real
process forked from an interpreter that has already imported tracejudge.

The suite runs about 1,300 `tracejudge` commands as processes. A fresh interpreter spends most of a short command's CPU
importing (about 0.5 of the 0.7 CPU-s a three-case `run` costs); forked from a server that imported every module once,
the same command costs what its work costs. The command is still a process of its own: its own pid, standard streams,
working folder, environment, signals, exit status and exit handlers, entered as the console script or `python -m
tracejudge` enters it (`runpy`, so `sys.argv`, `sys.path[0]` and `__main__` are what a fresh interpreter has).

What a fork cannot reproduce goes to `subprocess` unchanged: a command that is not `tracejudge` (or is another
interpreter's), an environment whose interpreter settings differ from the server's (`PYTHONPATH` and the other
variables a fresh interpreter reads as it starts, the locale), and options this module does not implement. Tests about
a command's start-up itself (Ctrl-C while importing, the import time) use `subprocess` directly.

One server per test process (a pytest-xdist worker; `_forkserver_server.py`), started on first use and ended with it;
it exits on its own when the process that started it ends (its stdin reaches end of file).
"""

from __future__ import annotations

import atexit
import io
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

__all__ = ["popen", "run"]

_SCRIPT = Path(sys.executable).with_name("tracejudge")
# Read by a fresh interpreter as it starts (Python's documented environment variables, less those read when used, such
# as PYTHONBREAKPOINT, which Ray's driver sets, and PYTHONASYNCIODEBUG), and the locale: a command asking for other
# values than the server's gets a fresh interpreter.
_STARTUP_VARS = frozenset({
    "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONEXECUTABLE",
    "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONLEGACYWINDOWSSTDIO", "PYTHONWARNINGS", "PYTHONDEVMODE",
    "PYTHONFAULTHANDLER", "PYTHONMALLOC", "PYTHONMALLOCSTATS", "PYTHONTRACEMALLOC", "PYTHONOPTIMIZE", "PYTHONDEBUG",
    "PYTHONVERBOSE", "PYTHONINSPECT", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX",
    "PYTHONPROFILEIMPORTTIME", "PYTHONINTMAXSTRDIGITS", "PYTHONWARNDEFAULTENCODING", "PYTHONNODEBUGRANGES", "PYTHONSTARTUP",
    "PYTHONCOERCECLOCALE", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE"})
_POPEN_OPTIONS = {"text", "universal_newlines", "cwd", "env", "stdin", "stdout", "stderr", "encoding", "errors", "start_new_session"}
_RUN_OPTIONS = _POPEN_OPTIONS | {"capture_output", "timeout", "input", "check"}
_MAX_MESSAGE = 1 << 20


def run(args: Any, **options: Any) -> subprocess.CompletedProcess[Any]:
    """As `subprocess.run(args, **options)`; a `tracejudge` command (`[sys.executable, "-m", "tracejudge", ...]` or the
    console script) runs forked from the server when nothing in `options` needs a fresh interpreter.

    Returns `subprocess.CompletedProcess` (stdout/stderr as `subprocess.run` gives them: bytes, or text with universal
    newlines); raises `subprocess.TimeoutExpired` (the process killed) and `subprocess.CalledProcessError` (`check`) as
    `subprocess.run` does.
    """
    started = _start(args, options, _RUN_OPTIONS)
    if started is None:
        return subprocess.run(args, **options)
    proc = ForkedProcess(args, *started, options)
    with proc:
        try:
            out, err = proc.communicate(options.get("input"), options.get("timeout"))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    done = subprocess.CompletedProcess(args, proc.returncode, out, err)
    if options.get("check"):
        done.check_returncode()
    return done


def popen(args: Any, **options: Any) -> Any:
    """As `subprocess.Popen(args, **options)`; a `tracejudge` command runs forked from the server (`ForkedProcess`, with
    Popen's `pid`, `returncode`, `stdin`/`stdout`/`stderr`, `poll`, `wait`, `communicate`, `send_signal`, `terminate`,
    `kill` and its use as a context manager) when nothing in `options` needs a fresh interpreter."""
    started = _start(args, options, _POPEN_OPTIONS)
    if started is None:
        return subprocess.Popen(args, **options)
    return ForkedProcess(args, *started, options)


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


def _startup_differences(env: Any) -> list[str]:
    """The start-up variables (`_STARTUP_VARS`) whose values in `env` are not the server's."""
    return sorted(k for k in _STARTUP_VARS if env.get(k) != _SERVER_ENV.get(k))


_SERVER_ENV: dict[str, str] = {}
# The environment the test process had when its test modules were imported: the server starts with it, not with what a
# test running at that moment set (a test setting PYTHONPATH would otherwise send every later command to a fresh process).
_BASELINE_ENV = dict(os.environ)
_STATE: dict[str, Any] = {}
_LOCK = threading.Lock()


def _server() -> str:
    """The socket path of this process's server, started on first use."""
    with _LOCK:
        if _STATE.get("pid") == os.getpid():
            if _STATE["proc"].poll() is None:
                return _STATE["path"]
            _fresh(["(server)"], f"the server had ended ({_STATE['proc'].returncode}): started again")
            _stop(_STATE["proc"], _STATE["folder"])
        folder = tempfile.mkdtemp(prefix="tj-forkserver-")
        path = os.path.join(folder, "s")
        env = dict(_BASELINE_ENV)
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


def _start(args: Any, options: dict[str, Any], allowed: set[str]) -> tuple[socket.socket, int, dict[str, int]] | None:
    """Ask the server to fork the command: (connection, pid, this side's pipe ends by stream name), or None where a fork
    cannot stand for a fresh process (see the module docstring)."""
    entry = _entry(args)
    if entry is None or _conflicting(options):
        return None
    if set(options) - allowed:
        return _fresh(args, f"options {sorted(set(options) - allowed)}")
    try:
        path = _server()
    except OSError as exc:
        return _fresh(args, f"no server: {exc}")
    env = dict(os.environ if options.get("env") is None else options["env"])
    if differ := _startup_differences(env):
        return _fresh(args, f"environment {differ}")
    cwd = os.path.abspath(os.fspath(options.get("cwd") or os.getcwd()))
    if not os.path.isdir(cwd):  # (`subprocess` raises the error a test may expect: FileNotFoundError, NotADirectoryError)
        return _fresh(args, f"cwd {cwd} is no folder")
    capture = options.get("capture_output", False)
    wanted = {"stdin": subprocess.PIPE if options.get("input") is not None else options.get("stdin"),
              "stdout": subprocess.PIPE if capture else options.get("stdout"),
              "stderr": subprocess.PIPE if capture else options.get("stderr")}
    theirs: list[int] = []  # the child's stdin, stdout, stderr
    opened: list[int] = []  # of those, the ones opened here (closed once sent)
    ends: dict[str, int] = {}  # this side's pipe ends
    try:
        for fd, (name, opt) in enumerate(wanted.items()):
            if opt is None:
                theirs.append(fd)
            elif opt == subprocess.PIPE:
                r, w = os.pipe()
                child, ends[name] = (r, w) if name == "stdin" else (w, r)
                theirs.append(child)
                opened.append(child)
            elif opt == subprocess.DEVNULL:
                theirs.append(os.open(os.devnull, os.O_RDWR))
                opened.append(theirs[-1])
            elif opt == subprocess.STDOUT and name == "stderr":
                theirs.append(theirs[1])
            else:
                theirs.append(opt if isinstance(opt, int) else opt.fileno())
        request = {"entry": entry, "argv": [os.fspath(a) for a in args], "env": env, "session": bool(options.get("start_new_session")),
                   "cwd": cwd, "umask": _umask()}
        payload = json.dumps(request).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            if len(payload) > _MAX_MESSAGE:
                raise OSError("too long")
            conn.connect(path)
            socket.send_fds(conn, [payload], theirs)
            reply = json.loads(conn.recv(4096) or b"{}")
        except (OSError, ValueError):
            reply = {}
        if "pid" not in reply:
            _fresh(args, f"the server did not fork it: {reply}")
            conn.close()
            for fd in ends.values():
                os.close(fd)
            return None
        return conn, reply["pid"], ends
    finally:
        for fd in opened:
            os.close(fd)


def _conflicting(options: dict[str, Any]) -> bool:
    """True for the combinations `subprocess.run` refuses with a ValueError (it is left to raise it)."""
    given = {k for k, v in options.items() if v is not None}
    return ("input" in given and "stdin" in given) or (bool(options.get("capture_output")) and bool(given & {"stdout", "stderr"}))


def _umask() -> int | None:
    """This process's umask, which a command it starts inherits (read, not set and restored: other threads create files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next((int(line.split()[1], 8) for line in fh if line.startswith("Umask:")), None)
    except OSError:
        return None


def _fresh(args: Any, why: str) -> None:
    """None: `args` runs as a fresh process; `why` is appended to the file `TJ_FORKSERVER_LOG` names, if set (to see
    which commands of a suite run pay a fresh interpreter, and why)."""
    log = _BASELINE_ENV.get("TJ_FORKSERVER_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{os.environ.get('PYTEST_CURRENT_TEST', '?')}\t{why}\t{[os.fspath(a) for a in args][:4]}\n")
    return None


def _encoding() -> str:
    import locale

    return locale.getpreferredencoding(False)


class ForkedProcess:
    """A command forked by the server, used as a `subprocess.Popen` is (the subset the suite uses).

    `returncode` is the exit status as Popen gives it (a negative signal number for a death by signal), learned from the
    server, which reaped the process; `stdin`/`stdout`/`stderr` are file objects over the pipes asked for, text or
    bytes as Popen opens them.
    """

    def __init__(self, args: Any, conn: socket.socket, pid: int, ends: dict[str, int], options: dict[str, Any]) -> None:
        self.args, self.pid, self.returncode = args, pid, None
        self._conn = conn
        self._chunks: dict[str, list[bytes]] | None = None  # what `communicate` read, kept across a TimeoutExpired
        self._input = memoryview(b"")  # the part of communicate's input not yet written
        self._text = bool(options.get("text") or options.get("universal_newlines") or options.get("encoding") or options.get("errors"))
        self._encoding, self._errors = options.get("encoding") or _encoding(), options.get("errors") or "strict"
        streams = {}
        for name, fd in ends.items():
            mode = "wb" if name == "stdin" else "rb"
            streams[name] = open(fd, mode)
            if self._text:  # (as Popen wraps its pipes: stdin written through, universal newlines read)
                streams[name] = io.TextIOWrapper(streams[name], encoding=self._encoding, errors=self._errors, write_through=name == "stdin")
        self.stdin, self.stdout, self.stderr = streams.get("stdin"), streams.get("stdout"), streams.get("stderr")

    def poll(self) -> int | None:
        """The exit status if the process has ended, else None."""
        if self.returncode is None:
            try:
                self._status(self._conn.recv(4096, socket.MSG_DONTWAIT))
            except BlockingIOError:
                pass
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the process to end; raises `subprocess.TimeoutExpired` after `timeout` seconds."""
        if self.returncode is None:
            ready = selectors.DefaultSelector()
            ready.register(self._conn, selectors.EVENT_READ)
            try:
                if not ready.select(timeout):
                    raise subprocess.TimeoutExpired(self.args, timeout)
            finally:
                ready.close()
            self._status(self._conn.recv(4096))
        assert self.returncode is not None
        return self.returncode

    def _status(self, message: bytes) -> None:
        # (an empty message: the server ended before the process did; it is killed, as the pytest worker ends)
        self.returncode = json.loads(message)["status"] if message else -signal.SIGKILL
        self._conn.close()

    def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[Any, Any]:
        """Send `input`, read stdout and stderr to their end, wait for the exit: as `Popen.communicate` (its one-stream
        case reads the stream object, what a test already read into its buffer included; after a `TimeoutExpired`,
        whose output is the bytes read so far, a later call goes on and returns all of it)."""
        if self._chunks is None and timeout is None and [self.stdin, self.stdout, self.stderr].count(None) >= 2:
            return self._communicate_one(input)
        if self._chunks is not None and input:
            raise ValueError("Cannot send input after starting communication")
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._chunks is None:
            self._chunks = {n: [] for n in ("stdout", "stderr") if getattr(self, n) is not None}
            if self.stdin is not None:
                self.stdin.flush()
                if input:
                    self._input = memoryview(input.encode(self._encoding, self._errors) if isinstance(input, str) else input)
                else:
                    self._close("stdin")
        chunks = self._chunks
        sel = selectors.DefaultSelector()
        if self.stdin is not None and not self.stdin.closed and self._input:
            os.set_blocking(self.stdin.fileno(), False)
            sel.register(self.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
        for name in chunks:
            if not getattr(self, name).closed:
                sel.register(getattr(self, name).fileno(), selectors.EVENT_READ, name)
        try:
            while sel.get_map():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:  # (Popen's: the bytes read so far, undecoded; None for nothing)
                    out, err = (b"".join(chunks[n]) if chunks.get(n) else None for n in ("stdout", "stderr"))
                    raise subprocess.TimeoutExpired(self.args, timeout, out, err)
                for key, _ in sel.select(left):
                    if key.data == "stdin":
                        try:
                            self._input = self._input[os.write(key.fd, self._input[:65536]):]
                        except BrokenPipeError:
                            self._input = self._input[:0]
                        if not self._input:
                            sel.unregister(key.fd)
                            self._close("stdin")
                    else:
                        block = os.read(key.fd, 65536)
                        chunks[key.data].append(block)
                        if not block:
                            sel.unregister(key.fd)
                            self._close(key.data)
        finally:
            sel.close()
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return tuple(self._decoded(b"".join(chunks[n])) if n in chunks else None for n in ("stdout", "stderr"))  # type: ignore[return-value]

    def _communicate_one(self, input: Any) -> tuple[Any, Any]:
        out = err = None
        if self.stdin is not None:
            try:
                if input:
                    self.stdin.write(input)
            except BrokenPipeError:
                pass
            self._close("stdin")
        elif self.stdout is not None:
            out = self.stdout.read()
            self._close("stdout")
        elif self.stderr is not None:
            err = self.stderr.read()
            self._close("stderr")
        self.wait()
        return out, err

    def _decoded(self, data: bytes) -> Any:
        if not self._text:
            return data
        return data.decode(self._encoding, self._errors).replace("\r\n", "\n").replace("\r", "\n")

    def _close(self, name: str) -> None:
        stream = getattr(self, name)
        if stream is not None and not stream.closed:
            try:
                stream.close()
            except BrokenPipeError:
                pass

    def send_signal(self, sig: int) -> None:
        """Send `sig` to the process, unless it is known to have ended."""
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __enter__(self) -> ForkedProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        for name in ("stdout", "stderr", "stdin"):
            self._close(name)
        self.wait()
