"""Worker processes forked from the head, for the process executor (Linux only).

A spawned worker (`anyio.to_process`) starts a fresh interpreter and imports the
stages again: about 0.9 CPU-s per worker, most of a 10,000-case run's worker
overhead. A forked worker starts with everything the head has already
imported, in a few milliseconds. `ForkedPool` forks `processes` workers
when the executor is entered — before the run reads a record, so no reading
thread, target subprocess or judge connection exists yet — and each then
serves chunks over its own socket pair until the pool closes, one after
another: the head sends a worker its next chunk (up to `DEPTH` under way)
before the last one's results are back, so it never waits for the head.

A forked worker is what a spawned one is: it unpickles the job as it stood
when the run started and builds it itself (fresh adapter context and metric
instances), runs `CpuJob.run` on each chunk, and sends back the result (`executors.wire`) or
the exception raised. Its standard streams are `/dev/null`, it runs in a session of
its own (a Ctrl-C or a SIGTERM sent to the head's process group reaches only the head,
which stops the run and lets the chunks in flight finish), signals act by default (not
through the head's event loop), and it dies with the head (the parent-death signal). A worker
that dies is not forked again: the executor falls back to spawned workers
for its share (see `ProcessExecutor`).

Used only for jobs made of tracejudge's own adapters and metrics, when the
head's `__main__` is not a user's script (`fork_suits`): a user's code keeps
spawned workers, which import the user's script as `__mp_main__` as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import pickle
import signal
import socket
import struct
import sys
from typing import Any

import anyio
from tracejudge.engine.executors.exits import WorkerDied, ended
from tracejudge.engine.executors.wire import join_payloads, pack_results, split_payloads, unpack_chunk

__all__ = ["DEPTH", "ForkedPool", "WorkerLost", "fork_suits"]

_HEAD = struct.Struct("!BQ")  # status (0: result, 1: exception), length of what is pickled (a chunk's lines follow it)
_SOCKET_BUFFER = 4 << 20  # bytes each end may have in flight (the kernel caps it at net.core.wmem_max)
_MAX_PARTS = 512  # buffers per `sendmsg` (Linux takes up to 1024)


class WorkerLost(WorkerDied):
    """The chunk was waiting in a worker's socket, not computing, when the worker died: the death is not its doing."""


DEPTH = 2
"""Chunks a forked worker is given at once: the next waits in its socket while it computes one, so it never sits idle
while the head reads its last result and the event loop gets round to sending it more."""


def fork_suits() -> bool:
    """True where workers may be forked: Linux, and a `__main__` that a spawned worker would not re-run as a user's script.

    A script run by path (`python script.py`) is re-imported by each spawned worker, which some
    scripts rely on (and which warns an unguarded script, `UnguardedScript`); the `tracejudge`
    command, `python -m …` and `python -c …` have no such script.
    """
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return not (isinstance(path, str) and path.endswith(".py") and getattr(main, "__spec__", None) is None)


class _Worker:
    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid, self.sock = pid, sock
        self.in_flight = 0
        self.dead = False
        self.code: int | None = None  # its exit status once reaped (`kill`)
        # Set when the last call given to this worker has sent its chunk / read its reply: the calls do both in the
        # order they were made, which is the order the worker reads chunks and writes replies.
        self._sent: anyio.Event | None = None
        self._read: anyio.Event | None = None

    def kill(self) -> int | None:
        # SIGKILL and reap: a worker that lingers is never reused (its socket may hold half a message). Returns its
        # exit status as a returncode (None: it could not be reaped), which is how it died when it had died already: a
        # signal to a process that is exiting or gone changes nothing. Kept, so that the call that was computing
        # learns it even when a call queued behind it met the closed socket first.
        if self.dead:
            return self.code
        self.dead = True
        # Wake the calls waiting for this socket first (`ClosedResourceError`): closed under them, they would wait for
        # ever. The kernel drops a closed descriptor from the event loop's epoll set, so the readiness the worker's death
        # raised is never reported: a call queued behind the computing one, whose send met the death (EPIPE) before the
        # loop polled, killed the worker here while the computing call waited for its reply, and the run hung.
        with contextlib.suppress(RuntimeError):  # (`NoEventLoopError`: no loop running, so no call waiting)
            anyio.notify_closing(self.sock)
        self.sock.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        try:
            self.code = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        except ChildProcessError:
            pass
        return self.code

    def _lost(self) -> WorkerLost:
        return WorkerLost("the worker process ended before computing this chunk", self.pid)

    async def call(self, chunk: list[Any]) -> Any:
        """The chunk's result, as the worker computed it; raises what the job raised, or `WorkerDied`.

        Up to `DEPTH` calls may be under way on one worker. A call that ends without its reply (the worker died,
        or the call was cancelled) kills the worker; the calls queued behind it then raise `WorkerLost`.
        The records' lines go out as they are, after the rest of the chunk pickled (`wire.split_payloads`).
        """
        items, sizes, lines = split_payloads(chunk)
        meta = pickle.dumps((items, sizes), protocol=pickle.HIGHEST_PROTOCOL)
        prev_sent, prev_read = self._sent, self._read
        sent, read = self._sent, self._read = anyio.Event(), anyio.Event()
        self.in_flight += 1
        done = False
        try:
            try:
                if prev_sent is not None:
                    await prev_sent.wait()
                if self.dead:
                    raise self._lost()
                await self._send([_HEAD.pack(0, len(meta)), meta, *lines])
            finally:
                sent.set()
            if prev_read is not None:
                await prev_read.wait()
            if self.dead:
                raise self._lost()
            status, size = _HEAD.unpack(await self._recv(_HEAD.size))
            payload = await self._recv(size)
            done = True
        except (OSError, EOFError, anyio.ClosedResourceError) as exc:  # (closed: another call of this worker killed it)
            if prev_read is not None and not prev_read.is_set():  # the worker died on the chunk ahead of this one
                raise self._lost() from None
            code = self.kill()
            raise WorkerDied(ended(code) if code is not None else f"its socket ended ({type(exc).__name__}: {exc})", self.pid) from None
        finally:
            self.in_flight -= 1
            read.set()
            if not done:
                self.kill()  # cancelled mid-chunk: killed, as a spawned worker is
        got = pickle.loads(payload)
        if status:
            raise got
        return got

    async def _send(self, parts: list[Any]) -> None:
        # One `sendmsg` writes many parts without joining them first; a part written in part goes on where it stopped.
        i = 0
        while i < len(parts):
            try:
                n = self.sock.sendmsg(parts[i:i + _MAX_PARTS])
            except BlockingIOError:  # waited for only when the socket is full: each wait registers the socket with the loop
                await anyio.wait_writable(self.sock)
                continue
            while i < len(parts) and n >= len(parts[i]):
                n -= len(parts[i])
                i += 1
            if n:
                parts[i] = memoryview(parts[i])[n:]

    async def _recv(self, size: int) -> bytearray:
        buf = bytearray(size)
        view = memoryview(buf)
        got = 0
        while got < size:
            try:
                n = self.sock.recv_into(view[got:], size - got)
            except BlockingIOError:
                await anyio.wait_readable(self.sock)
                continue
            if n == 0:
                raise EOFError("the worker's socket closed")
            got += n
        return buf


class ForkedPool:
    """`processes` workers forked from this process, serving the job pickled as `blob`.

    `idle()` gives the live worker with the fewest chunks under way (None when every live one has `DEPTH`, or
    all died); `close()` kills and reaps them all. Raises OSError when a fork fails.
    """

    def __init__(self, blob: bytes, processes: int) -> None:
        self.workers: list[_Worker] = []
        try:
            for _ in range(processes):
                self.workers.append(self._fork(blob))
        except BaseException:
            self.close()
            raise

    def _fork(self, blob: bytes) -> _Worker:
        head = os.getpid()
        ours, theirs = socket.socketpair()
        for end in (ours, theirs):
            # Room for a whole chunk (and its results) in the socket: with the default (about 200 KiB) a chunk of
            # 128 τ-bench lines went over in several writes and reads, each a wait registered with the event loop.
            with contextlib.suppress(OSError):
                end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCKET_BUFFER)
        # The head's objects are left out of the worker's garbage collection: it would touch (and so copy) every page of them.
        gc.freeze()
        try:
            pid = os.fork()
        except BaseException:
            gc.unfreeze()
            ours.close()
            theirs.close()
            raise
        if pid == 0:  # the worker: never returns into the head's code
            code = 1
            try:
                _become_worker(head)  # first: until then a signal would reach the head's event loop
                ours.close()
                for w in self.workers:
                    w.sock.close()  # the other workers' ends: each must see its own end close with the head
                _serve(theirs, blob)
                code = 0
            finally:
                os._exit(code)
        gc.unfreeze()
        theirs.close()
        ours.setblocking(False)
        return _Worker(pid, ours)

    def idle(self) -> _Worker | None:
        """The live worker with the fewest chunks under way, if it has fewer than `DEPTH`; else None."""
        live = [w for w in self.workers if not w.dead and w.in_flight < DEPTH]
        return min(live, key=lambda w: w.in_flight, default=None)

    def live(self) -> int:
        """How many workers are alive."""
        return sum(not w.dead for w in self.workers)

    def close(self) -> None:
        """Kill and reap every worker (idle ones hold nothing that needs an orderly end)."""
        for w in self.workers:
            w.kill()


def _serve(sock: socket.socket, blob: bytes) -> None:
    # The worker's loop: one chunk in, its result (or exception) out, until the head closes its end.
    sock.setblocking(True)
    job = None
    while True:
        try:
            _, size = _HEAD.unpack(_recv_exactly(sock, _HEAD.size))
        except EOFError:
            return
        items, sizes = pickle.loads(_recv_exactly(sock, size))
        chunk = join_payloads(items, sizes, _recv_exactly(sock, sum(n for n in sizes if n > 0)))
        status = 0
        try:
            if job is None:
                job = pickle.loads(blob)
                job.build()
            data = pickle.dumps(pack_results(job.run(unpack_chunk(chunk))), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # sent back and raised in the head, as a spawned worker does
            status = 1
            try:
                data = pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:
                data = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"), protocol=pickle.HIGHEST_PROTOCOL)
        sock.sendall(_HEAD.pack(status, len(data)))
        sock.sendall(data)


def _recv_exactly(sock: socket.socket, size: int) -> bytearray:
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            raise EOFError
        got += n
    return buf


def _become_worker(head: int) -> None:
    # Detach from the head's event loop and terminal: its signal wake-up pipe and handlers are the head's.
    signal.set_wakeup_fd(-1)
    # Until it has left the head's process group (`setsid` below), a SIGTERM sent to the group is ignored, not taken by
    # default: a worker forked just before `kill -- -PGID` died of it, and its chunk was retried during the stop.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.setsid()
    for sig in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError, TypeError):
            if (callable(signal.getsignal(sig)) or sig == signal.SIGTERM) and sig != signal.SIGINT:
                signal.signal(sig, signal.SIG_DFL)
    # A terminal's Ctrl-C, and a SIGTERM sent to the process group (a CI runner's timeout, `kill -- -PGID`), reach
    # every process of the group: the head stops the run and lets the chunks in flight finish, so a worker must not
    # die of them mid-chunk (a SIGTERM killed both workers, whose chunks were then retried in fresh ones during the
    # stop, with a warning that they had died). In a session of its own, as a spawned worker is, no signal sent to
    # the head's group reaches it; it still ends with the head (below) and when its socket closes.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the head
    if os.getppid() != head:  # the head died before the signal was set
        os._exit(1)
