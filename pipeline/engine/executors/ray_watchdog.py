"""The local Ray cluster's watchdog: when the head dies without stopping Ray, its raylet's children die at once.

A local cluster (`run.executor: ray` without `run.ray_address`) is started by
`ray.init` in the head. On Linux Ray ties the cluster's own processes (GCS,
raylet, monitors) to the head with a parent-death signal, so a SIGKILLed head
takes them along; the raylet's children do not go with them: actor workers
notice within seconds, but Ray's agents (`ray::DashboardAgent`,
`ray::RuntimeEnvAgent`) first try to report the raylet's death to the dead GCS
and linger a minute or more (Ray 2.60: a fixed 60 s timeout).

`start` runs this file as a small separate process (`python -I -u
ray_watchdog.py RAYLET_PID...`, no tracejudge import) that reads a pipe from
the head and, every `RESCAN_S` seconds, notes the raylets' children (process
id and start time: they are reparented, so unknowable, once the raylet is
dead). `stop` (the run ended and Ray was shut down) writes `stop` and it exits
quietly; an end of file without `stop` means the head died, and it SIGKILLs
the children it noted that still run (same start time), and any process whose
environment still names one of the raylets (`RAY_RAYLET_PID`: a worker
started since the last look). Linux only (it reads `/proc`); elsewhere
`start` returns None and Ray's own clean-up applies.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["RESCAN_S", "children_of", "raylet_children", "raylets_of", "start", "stop"]

PROC = Path("/proc")
RESCAN_S = 5.0
"""Seconds between two looks at the raylets' children (a look reads `/proc/*/stat`: tens of milliseconds)."""


def _stats() -> dict[int, tuple[str, int, int]]:
    """`{pid: (name, parent pid, start time in clock ticks)}` of every process now."""
    out = {}
    for entry in PROC.iterdir() if PROC.is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended while we looked
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        out[int(entry.name)] = (stat[stat.index("(") + 1:stat.rindex(")")], int(rest[1]), int(rest[19]))
    return out


def raylets_of(parent: int) -> list[int]:
    """Process ids of the `raylet` processes whose parent is `parent` (the head, after `ray.init` started a cluster)."""
    return [pid for pid, (name, ppid, _) in _stats().items() if name == "raylet" and ppid == parent]


def children_of(raylets: list[int], known: dict[int, int] | None = None) -> dict[int, int]:
    """`{pid: start time}` of the processes whose parent is one of `raylets` (workers, actors, agents), and of
    those in `known` that still run with the same start time (reparented once their raylet died)."""
    now = _stats()
    kept = {pid: started for pid, started in (known or {}).items() if pid in now and now[pid][2] == started}
    kept.update({pid: started for pid, (_, ppid, started) in now.items() if ppid in raylets})
    return kept


def raylet_children(raylets: list[int]) -> list[int]:
    """Process ids whose environment has `RAY_RAYLET_PID` equal to one of `raylets`.

    Ray sets it for the workers it starts; an agent's environment may be
    overwritten by its process title, so agents are found by `children_of`.
    """
    wanted = {f"RAY_RAYLET_PID={pid}".encode() for pid in raylets}
    me, out = os.getpid(), []
    for entry in PROC.iterdir() if PROC.is_dir() else []:
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:  # ended, or not ours to read
            continue
        if wanted.intersection(env.split(b"\0")):
            out.append(int(entry.name))
    return out


def start(head: int) -> subprocess.Popen[bytes] | None:
    """Watch the raylets the head `head` started; None when there is none to watch (or no `/proc`).

    The watchdog is in its own session, so a Ctrl-C at the terminal reaches
    the head (which stops Ray itself) and not the watchdog.
    """
    raylets = raylets_of(head)
    if not raylets:
        return None
    return subprocess.Popen([sys.executable, "-I", "-u", __file__, *map(str, raylets)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def stop(proc: subprocess.Popen[bytes] | None) -> None:
    """End the watchdog without it killing anything (call after `ray.shutdown`)."""
    if proc is None:
        return
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"stop\n")
        proc.stdin.close()
    except OSError:  # it already ended
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _main(raylets: list[int]) -> None:
    known, said = children_of(raylets), b""
    while True:  # until `stop` and close, or the head's death closes the pipe
        ready, _, _ = select.select([sys.stdin.buffer], [], [], RESCAN_S)
        if not ready:
            known = children_of(raylets, known)
            continue
        data = os.read(sys.stdin.buffer.fileno(), 64)
        if not data:
            break
        said += data
    if said.strip() == b"stop":
        return
    for pid in set(children_of(raylets, known)) | set(raylet_children(raylets)):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


if __name__ == "__main__":
    _main([int(a) for a in sys.argv[1:]])
