"""The fork server of `_forkserver` (run as a script: `python _forkserver_server.py SOCKET`).

It imports every tracejudge module (and the libraries commands import later) once, then for each request on its unix
socket (`SOCK_SEQPACKET`: the request as JSON, and the command's stdin, stdout and stderr as descriptors) forks a
child that becomes the command's process and runs it. The server stays single-threaded (a fork copies only the
calling thread, and any lock another thread held would stay held in the child) and waits for its children through
pidfds, answering each request with the child's pid, then its exit status. It ends when its stdin reaches end of file
(the test process that started it ended).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys
import tempfile
import threading
import time
from typing import Any

_MAX_MESSAGE = 1 << 20


def _preload() -> None:
    """Import what commands import, as a command would (one BLAS thread before numpy), and nothing that starts a thread."""
    import importlib
    import pkgutil

    from tracejudge.core.lazy_numpy import single_blas_thread

    single_blas_thread()
    import numpy  # noqa: F401  (the bootstrap's; a command imports it in the background)

    import tracejudge

    for info in pkgutil.walk_packages(tracejudge.__path__, "tracejudge."):
        if "ray" in info.name.rsplit(".", 1)[-1] or info.name.endswith("__main__"):
            continue  # Ray's modules import Ray (seconds, and only Ray's tests need it)
        importlib.import_module(info.name)
    for name in ("tiktoken", "structlog", "aiohttp", "anyio._backends._asyncio", "asyncio", "yaml", "rich.console", "diskcache"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    assert threading.active_count() == 1, "a preloaded module started a thread: forking would copy its locks"
    import gc

    gc.collect()
    gc.freeze()  # what every command shares stays out of the children's collections (and their pages unwritten)


def _serve(path: str) -> None:
    # A Ctrl-C in the terminal reaches the whole foreground group, this server too: the commands it forked take it
    # (each child sets its own handler), the server serves on; it ends with the test process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _listen(path)
    finally:
        # (the test process removes the folder too, unless it was killed: then only this leaves no folder behind)
        for gone in (lambda: os.unlink(path), lambda: os.rmdir(os.path.dirname(path))):
            try:
                gone()
            except OSError:
                pass


def _listen(path: str) -> None:
    _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, ("accept", None))
    sel.register(sys.stdin.fileno(), selectors.EVENT_READ, ("parent", None))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for key, _ in sel.select():
            kind, conn = key.data
            if kind == "parent":
                if not os.read(sys.stdin.fileno(), 4096):
                    return  # the test process ended
                continue
            try:
                if kind == "accept":
                    _fork(listener, sel)
                else:
                    _reap(sel, key.fd, *conn)
            except Exception:  # one request gone wrong (its client gone, a fork refused) is no reason to stop serving
                import traceback

                traceback.print_exc()


def _fork(listener: socket.socket, sel: selectors.BaseSelector) -> None:
    """Take one request: fork its command, answer the pid and watch for the command's exit."""
    client, _ = listener.accept()
    try:
        payload, fds, _flags, _addr = socket.recv_fds(client, _MAX_MESSAGE, 3)
    except OSError:
        client.close()
        return
    try:
        if len(fds) != 3 or not payload:
            client.close()
            return
        pid = os.fork()
        if pid == 0:
            _child(json.loads(payload), fds)
    finally:
        for fd in fds:
            os.close(fd)
    sel.register(os.pidfd_open(pid), selectors.EVENT_READ, ("exit", (client, pid)))
    try:
        client.send(json.dumps({"pid": pid}).encode())
    except OSError:
        pass  # (the client went away: the command runs to its end all the same, as a process whose parent died would)


def _reap(sel: selectors.BaseSelector, pidfd: int, client: socket.socket, pid: int) -> None:
    """A command ended: reap it and send its exit status to its client."""
    sel.unregister(pidfd)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    try:
        client.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
    except OSError:
        pass
    client.close()


def _child(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become the command's process (streams, folder, environment, signals, argv) and run it."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 1 << 16)  # as `subprocess` does (close_fds): the server's socket and other requests' descriptors
        if request.get("session"):
            os.setsid()  # (`start_new_session=True`)
        os.chdir(request["cwd"])
        if "numpy" in sys.modules:  # (a fresh interpreter seeds numpy's global generator from the OS; `random` reseeds at fork)
            sys.modules["numpy"].random.seed()
        if request.get("umask") is not None:
            os.umask(request["umask"])  # (the test process's: the server's is the one it had when the server started)
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()
        tempfile.tempdir = None
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # (as the interpreter sets it at start-up)
        _standard_streams()
        import gc
        import runpy

        gc.enable()
        kind, where = request["entry"]
        argv = request["argv"]
        if kind == "module":
            sys.argv = ["-m", *argv[3:]]  # runpy puts the module's file in argv[0], as `-m` does
            sys.path[0] = request["cwd"]
            code = _exit_code(lambda: runpy.run_module("tracejudge", run_name="__main__", alter_sys=True))
        else:
            sys.argv = [where, *argv[1:]]
            sys.path[0] = os.path.dirname(where)
            code = _exit_code(lambda: runpy.run_path(where, run_name="__main__"))
        threading._shutdown()  # type: ignore[attr-defined]  (non-daemon threads are waited for, as at interpreter exit)
        import atexit as _atexit

        _atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                code = 120  # (as the interpreter exits when it cannot flush stdout)
    finally:
        os._exit(code)


def _exit_code(call: Any) -> int:
    try:
        call()
    except SystemExit as stop:
        if stop.code is None:
            return 0
        if isinstance(stop.code, int):
            return stop.code & 0xFF
        print(stop.code, file=sys.stderr)
        return 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        return 1
    return 0


def _standard_streams() -> None:
    """sys.stdin/stdout/stderr over descriptors 0-2 as a fresh interpreter opens them: the encoding and error handlers
    the server's own streams got (its interpreter settings are the command's: `_forkserver._startup_differences`), buffering by
    what each descriptor is."""
    import io

    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    for fd, name, mode in ((0, "stdin", "rb"), (1, "stdout", "wb"), (2, "stderr", "wb")):
        model = getattr(sys, f"__{name}__")
        try:
            os.fstat(fd)
        except OSError:
            setattr(sys, name, None)
            continue
        raw = io.FileIO(fd, mode, closefd=False)
        tty = raw.isatty()
        if fd == 0:
            buffered: Any = io.BufferedReader(raw)
        elif unbuffered:
            buffered = raw
        else:
            buffered = io.BufferedWriter(raw)
        # (stderr is line-buffered whatever it is, since Python 3.9)
        stream = io.TextIOWrapper(buffered, encoding=model.encoding, errors=model.errors, line_buffering=(fd != 0 and tty) or fd == 2,
                                  write_through=unbuffered and fd != 0)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


if __name__ == "__main__":
    _serve(sys.argv[1])
