"""What every benchmark shares: start processes it always stops, time them from outside, and report a failed run.

- `started(cmd)` / `stop(proc)`: a process runs in its own session (process group), and is stopped
  with SIGTERM to the whole group, then SIGKILL after `grace` seconds — so a server that ignores
  SIGTERM, or workers its parent left behind, do not outlive the benchmark.
- `timed(cmd)`: a fresh process run to exit, its wall seconds and CPU seconds (its own and those of
  the descendants it waited for), stopped the same way if anything interrupts the wait.
- `guarded(measure, report)`: run the measurements, print the table of whatever was measured,
  and when a step failed print the error after it and exit 1.
- `precompile()`: write the project's bytecode before anything is timed.
- `sized_args(doc)`, `tau_cases(n)`, `medians(runs)`: a benchmark of repeated runs over N generated
  τ-bench cases: its command line, its dataset in a folder removed afterwards, its figures' medians.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GRACE_S = 10.0

REPO = Path(__file__).resolve().parent.parent


def stop(proc: subprocess.Popen[Any], grace: float | None = None) -> None:
    """Stop `proc` (started by `started` or `timed`) and its process group: SIGTERM, then SIGKILL after `grace` seconds (default `GRACE_S`).

    Safe to call on a process that already exited (its leftover group members are still signalled).
    """
    grace = GRACE_S if grace is None else grace
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(wait)
            if sig == signal.SIGTERM:
                # The leader is gone; take its group's stragglers (workers) with it.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            return
        except subprocess.TimeoutExpired:
            print(f"note: process {proc.pid} ({proc.args[0] if isinstance(proc.args, list) else proc.args}) did not exit "
                  f"{grace:g} s after SIGTERM: killed", file=sys.stderr)


@contextmanager
def started(cmd: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """`subprocess.Popen(cmd, **popen)` in its own session, stopped (`stop`) when the block ends, however it ends."""
    proc = subprocess.Popen(list(cmd), start_new_session=True, **popen)
    try:
        yield proc
    finally:
        stop(proc)


@dataclass
class Finished:
    """A process run to exit: `returncode`, `stdout`, `stderr` (text), `wall` and `cpu` in seconds."""

    returncode: int
    stdout: str
    stderr: str
    wall: float
    cpu: float

    def check(self, what: str) -> "Finished":
        """Return self, or raise `RuntimeError` naming `what` with the end of stderr when the process failed."""
        if self.returncode != 0:
            raise RuntimeError(f"{what} exited {self.returncode}: {self.stderr[-2000:].strip()}")
        return self


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: Sequence[str], timeout: float | None = None, **popen: Any) -> Finished:
    """Run `cmd` to exit, measured from outside: wall seconds from start to exit, CPU seconds user + system.

    CPU is the growth of this process's `RUSAGE_CHILDREN` across the run, so it counts the child
    and every descendant it waited for (worker processes), and only them as long as the caller runs
    one child at a time. Raises `subprocess.TimeoutExpired` after `timeout` seconds (the process is stopped).
    """
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    with started(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen) as proc:
        out, err = proc.communicate(timeout=timeout)
    return Finished(proc.returncode, out, err, time.perf_counter() - t0, _children_cpu() - cpu0)


def guarded(measure: Callable[[], None], report: Callable[[], None]) -> None:
    """Run `measure()`, then `report()` whatever happened; if either failed, print the error and exit 1.

    `measure` stores each result as it gets it where `report` reads it, so a failed step still
    leaves the table of what came before it. Ctrl-C counts as a failure.
    """
    error: BaseException | None = None
    try:
        measure()
    except (Exception, KeyboardInterrupt) as exc:
        error = exc
    try:
        report()
    except Exception as exc:
        print(f"\nthe report itself failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        error = error or exc
    if error is not None:
        print("\nBENCHMARK FAILED (the table above is partial):", file=sys.stderr)
        traceback.print_exception(error, file=sys.stderr, limit=-3)
        sys.exit(1)


def precompile() -> None:
    """Write the project's bytecode (`pipeline/`, `stages/`) before anything is timed, as an installed package has its own.

    An editable install is never compiled by pip, and where the environment sets
    PYTHONDONTWRITEBYTECODE no run writes it either: every timed tracejudge process would compile
    the project's sources again (0.45 to 0.9 CPU-s), a cost of the environment, not of the run.
    Only reading needs the bytecode, so it is written once here (`__pycache__` is git-ignored).
    """
    import compileall

    for folder in ("pipeline", "stages"):
        compileall.compile_dir(str(REPO / folder), quiet=1, force=False)


def sized_args(doc: str | None, repeats: str = "--repeats") -> argparse.Namespace:
    """Parse the command line of a benchmark over generated cases: `--n` cases (default 10,000) and the flag
    `repeats` (default `--repeats`; 3 runs), with `doc` (the script's docstring) as its help."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument(repeats, type=int, default=3)
    return ap.parse_args()


@contextmanager
def tau_cases(n: int, prefix: str) -> Iterator[tuple[Path, Path]]:
    """`(a new temporary folder, its cases.jsonl)`: `n` τ-bench cases as `pipeline_throughput.py` makes them
    (its 200 GPT-4o airline runs under new ids). The folder is removed when the block ends, however it ends."""
    import pipeline_throughput as pt  # (not at the top: it imports this module)

    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        cases = work / "cases.jsonl"
        pt.write_dataset(cases, n, pt.base_cases())
        yield work, cases
    finally:
        shutil.rmtree(work, ignore_errors=True)


def medians(runs: Sequence[Mapping[str, float]], keys: Iterable[str] | None = None) -> dict[str, float]:
    """`{key: median over runs}` for each of `keys` (default: every key of any run, in first-seen order); a run
    without a key counts 0 for it. Raises `statistics.StatisticsError` when `runs` is empty."""
    keys = list(dict.fromkeys(k for r in runs for k in r)) if keys is None else keys
    return {k: statistics.median(r.get(k, 0.0) for r in runs) for k in keys}
