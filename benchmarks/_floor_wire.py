"""The floor's wire to its workers (`_floor_run.py --processes 2`): chunks of lines to forked workers over a socket pair
each, their rendered lines and values back, in input order (`forked`)."""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import struct
import threading
import traceback
from array import array
from collections.abc import Callable, Iterator
from typing import Any


# With workers. To a worker: _TASK, the lines' lengths (uint32), the lines. Back: _DONE, the rendered lines, the
# values (float64). `multiprocessing.Pool` (pickles through one shared 64 KB pipe) left the workers waiting for lines
# a third of the time: 1.0 s wall at 10,000 cases against 0.55 s with a socket pair per worker.
_TASK = struct.Struct("<QII")  # first line's number, lines, bytes of the lines (no lines: stop)
_DONE = struct.Struct("<BQII4d")  # status (0 result, 1 stopped, 2 failed: text follows), bytes of lines, of values, errors, CPU s
_BUFFER = 4 << 20  # socket buffer each way: a chunk in flight (the kernel caps it at net.core.wmem_max)


def _recv(sock: socket.socket, n: int) -> memoryview:
    """Exactly `n` bytes from `sock` (EOFError if it closes first)."""
    view, got = memoryview(bytearray(n)), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            raise EOFError("the other end closed its socket")
        got += k
    return view


def _send(sock: socket.socket, parts: list[bytes]) -> None:
    """`parts` in order, by one scatter-gather write when the kernel takes them all (nearly always), else the rest joined."""
    sent = sock.sendmsg(parts) if len(parts) <= 1024 else 0  # (Linux takes up to 1024 buffers a call)
    if sent < sum(map(len, parts)):
        sock.sendall(b"".join(parts)[sent:])


def _serve(sock: socket.socket, name: str, work: Callable[..., tuple[Any, Any, int, list[float]]]) -> None:
    """A worker: chunks in, `work`, results out, until told to stop. The lines are decoded where they were received (slices)."""
    while True:
        first, count, size = _TASK.unpack(_recv(sock, _TASK.size))
        if not count:
            sock.sendall(_DONE.pack(1, 0, 0, 0, 0, 0, 0, 0))
            return
        sizes = _recv(sock, 4 * count).cast("I")
        data, at, lines = _recv(sock, size), 0, []
        for n in sizes:
            lines.append(data[at : at + n])
            at += n
        blob, values, errors, spent = work((name, first, lines))
        _send(sock, [_DONE.pack(0, len(blob), len(values), errors, *spent), blob, values])


def forked(tasks: Iterator[tuple[str, int, list[bytes]]], processes: int, name: str,
           work: Callable[..., tuple[Any, Any, int, list[float]]]) -> Iterator[tuple[Any, Any, int, list[float]]]:
    """`map(work, tasks)` by `processes` forked workers, in input order (chunk i to worker i mod `processes`); `name` is
    the file's, for error lines. A thread feeds the workers while this one takes their results, so neither waits on
    the other. The workers are reaped before the end: their CPU and peak RSS are then in RUSAGE_CHILDREN."""
    socks: list[socket.socket] = []
    pids: list[int] = []
    for _ in range(processes):
        head, child = socket.socketpair()
        for s in (head, child):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _BUFFER)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _BUFFER)
        pid = os.fork()
        if pid == 0:  # the worker: everything it needs was imported before the fork, and no thread runs yet
            code = 0
            try:
                for s in (head, *socks):
                    s.close()
                _serve(child, name, work)
            except BaseException:  # told to the head, which raises it
                code, text = 1, traceback.format_exc().encode()
                with contextlib.suppress(OSError):
                    child.sendall(_DONE.pack(2, len(text), 0, 0, 0, 0, 0, 0) + text)
            os._exit(code)  # no interpreter teardown: nothing is left to flush
        child.close()
        socks.append(head)
        pids.append(pid)
    failed: list[BaseException] = []

    def feed() -> None:
        try:
            for i, (_, first, lines) in enumerate(tasks):
                sizes = array("I", map(len, lines))
                _send(socks[i % processes], [_TASK.pack(first, len(lines), sum(sizes)), sizes.tobytes(), *lines])
            for s in socks:
                s.sendall(_TASK.pack(0, 0, 0))
        except BaseException as exc:  # the workers then stop, and the reader raises it
            failed.append(exc)
            for s in socks:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_WR)

    threading.Thread(target=feed, daemon=True).start()
    try:
        for i in itertools.count():
            sock = socks[i % processes]
            status, size, n_values, errors, *spent = _DONE.unpack(_recv(sock, _DONE.size))  # (n_values: in bytes)
            if status == 2:
                raise RuntimeError("a worker failed:\n" + bytes(_recv(sock, size)).decode())
            if status == 1:  # the first to stop had no chunk i: every chunk is in
                break
            blob = _recv(sock, size)
            yield blob, _recv(sock, n_values), errors, spent
        if failed:
            raise failed[0]
    finally:
        for s in socks:  # (shutdown first: it wakes a feeder blocked in a send, which close would not)
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for pid in pids:
            os.waitpid(pid, 0)
