"""Where the wall time of a whole deterministic run goes with `processes: 2`: tracejudge beside the floor, phase by phase.

What it measures: the wall-clock timeline of one fresh process, from the moment the benchmark starts it to the moment
it has exited, cut where the work changes hands: the interpreter up to its first line of Python (start-up and `site`),
up to the fork of the worker processes (imports, the config, the run directory: one core busy, the other idle but for
the dataset's hash), up to the first chunk sent to a worker, up to the executor's exit (the workers' last result: both
cores busy), up to the end of the summary and reports (one core), and up to the process's exit (exit handlers,
teardown). The same cuts for the floor with the run's guarantees and reasons (`_floor_run.py --reasons`, the least
implementation of the same work, see `whole_floor.py`), which has no executor: its streaming ends with its workers.
So a note can say which phase holds the wall seconds tracejudge takes beyond the floor's.

How: N τ-bench cases (`pipeline_throughput.write_dataset`, default 10,000) and the six checks (`pipeline_throughput.CONFIG`),
the project's bytecode written first, then `--repeats` interleaved rounds of both. Each process is given a prelude that
notes `time.monotonic()` (one clock for every process of the machine) at each cut: `os.fork` wrapped for the first fork,
the forked executor's first chunk, `ProcessExecutor.__aexit__` and `stages.reports.finish_run` wrapped for the end of
streaming and of the reports, and an exit handler (registered first, so it runs last). The wrappers cost microseconds.
Figures are medians over the rounds; the load average is printed with the table.

    python benchmarks/run_timeline.py [--n 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import pipeline_throughput as pt  # noqa: E402
from _procs import guarded, precompile, stop  # noqa: E402

PHASES = ("interpreter", "to the fork", "to the first chunk", "streaming", "summary and reports", "exit")
_CUTS = ("python", "fork", "first_chunk", "streamed", "reported")  # the marks that end each phase but the last

# Notes each cut in a dict, written as JSON to the file named by TJ_TIMELINE when the last exit handler runs (or
# just before `os._exit`, which runs none).
_PRELUDE = """
import atexit, json, os, sys, time
_marks = {"python": time.monotonic()}
def _mark(name):
    _marks.setdefault(name, time.monotonic())
def _dump():
    with open(os.environ["TJ_TIMELINE"], "w") as fh:
        json.dump(_marks, fh)
atexit.register(_dump)  # (registered first: runs last)
_fork, _exit = os.fork, os._exit
def _forked():
    _mark("fork")
    return _fork()
def _exiting(code):
    _mark("exit_called")
    _dump()
    _exit(code)
os.fork, os._exit = _forked, _exiting
"""

_TRACEJUDGE = _PRELUDE + """
import functools
from tracejudge.engine.executors import forked, processes
import tracejudge.stages.reports as reports
def _after(fn, name, coroutine=False):
    if coroutine:
        @functools.wraps(fn)
        async def wrapped(*args, **kwargs):
            _mark(name)
            return await fn(*args, **kwargs)
    else:
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            finally:
                _mark(name)
    return wrapped
forked._Worker.call = _after(forked._Worker.call, "first_chunk", coroutine=True)
processes.ProcessExecutor.__aexit__ = _after(processes.ProcessExecutor.__aexit__, "streamed", coroutine=True)
reports.finish_run = _after(reports.finish_run, "reported")
cfg, overrides = sys.argv[1], sys.argv[2:]
sys.argv = ["tracejudge", "run", cfg, "--no-progress", *[part for o in overrides for part in ("--set", o)]]
from tracejudge.entrypoints.launch import console_main
console_main()
"""

# The floor has no executor and no chunk call: its streaming ends when it reaps its workers (`os.waitpid`, after their
# last result), its summary and reports when its `main` asks for the processes' usage (`resource.getrusage`).
_FLOOR = _PRELUDE + """
import resource, runpy
_waitpid, _getrusage = os.waitpid, resource.getrusage
def _reaped(*args):
    _mark("streamed")
    return _waitpid(*args)
def _usage(*args):
    _mark("reported")
    return _getrusage(*args)
os.waitpid, resource.getrusage = _reaped, _usage
script, rest = sys.argv[1], sys.argv[2:]
sys.argv = [script, *rest]
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name="__main__")
"""


def one(cmd: list[str], work: Path) -> dict[str, float]:
    """Run `cmd` (a prelude's process) to exit; its cuts as seconds since it was started, with `gone` its exit."""
    marks = work / "timeline.json"
    marks.unlink(missing_ok=True)
    env = {**os.environ, "TJ_TIMELINE": str(marks)}
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=600)
    finally:
        stop(proc, 2.0)
    gone = time.monotonic()
    if proc.returncode != 0 or not marks.exists():
        raise RuntimeError(f"{cmd[:3]} exited with status {proc.returncode}: {err[-2000:]}")
    got = {k: v - start for k, v in json.loads(marks.read_text()).items()}
    got["gone"] = gone - start
    return got


def phases(marks: dict[str, float]) -> list[float | None]:
    """The seconds of each of `PHASES`; None for a cut the process did not pass (the floor has no chunk or executor)."""
    cuts = [0.0] + [marks.get(k) for k in _CUTS] + [marks["gone"]]
    out: list[float | None] = []
    last = 0.0
    for k in range(1, len(cuts)):
        if cuts[k] is None:
            out.append(None)
            continue
        out.append(cuts[k] - last)
        last = cuts[k]
    return out


def main() -> None:
    """Parse the command line, measure, print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="cases (default 10,000)")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved rounds; the figures are medians")
    args = ap.parse_args()
    if args.repeats < 1 or args.n < 2:
        ap.error("--repeats must be at least 1 and --n at least 2")
    precompile()
    work = Path(tempfile.mkdtemp(prefix="tj-timeline-"))
    runs: dict[str, list[list[float | None]]] = {"tracejudge processes 2": [], "floor+guarantees+reasons processes 2": []}
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())

    def measure() -> None:
        try:
            cases = work / "cases.jsonl"
            pt.write_dataset(cases, args.n, pt.base_cases())
            cfg = work / "bench.yaml"
            cfg.write_text(pt.CONFIG.format(cases=cases, run_dir=work / "run"))
            for r in range(args.repeats):
                shutil.rmtree(work / "run", ignore_errors=True)
                runs["tracejudge processes 2"].append(phases(one(
                    [sys.executable, "-c", _TRACEJUDGE, str(cfg), "run.processes=2"], work)))
                shutil.rmtree(work / "floor", ignore_errors=True)
                runs["floor+guarantees+reasons processes 2"].append(phases(one(
                    [sys.executable, "-c", _FLOOR, str(BENCH / "_floor_run.py"), str(cases), str(work / "floor"),
                     "--processes", "2", "--reasons"], work)))
                print(f"  round {r + 1} of {args.repeats}", file=sys.stderr)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def report() -> None:
        print(f"\nwall seconds of each phase, {args.n:,} τ-bench cases, the six checks, processes 2 ({os.cpu_count()} cores; "
              f"load average at start {load}, at end {', '.join(f'{x:.2f}' for x in os.getloadavg())}); medians\n")
        print(f"| {'tool':<38} | " + " | ".join(f"{p:>{max(len(p), 6)}}" for p in PHASES) + f" | {'whole':>6} |")
        print(f"|{'-' * 40}|" + "|".join("-" * (max(len(p), 6) + 2) for p in PHASES) + f"|{'-' * 8}|")
        for tool, rows in runs.items():
            if not rows:
                continue
            cells = []
            for k, p in enumerate(PHASES):
                got = [row[k] for row in rows if row[k] is not None]
                cells.append(f"{statistics.median(got):>{max(len(p), 6)}.3f}" if got else f"{'—':>{max(len(p), 6)}}")
            whole = statistics.median(sum(x for x in row if x is not None) for row in rows)
            print(f"| {tool:<38} | " + " | ".join(cells) + f" | {whole:>6.3f} |")
        print("\n(the floor sends no chunk through an executor call: its streaming is counted from its fork)")

    guarded(measure, report)


if __name__ == "__main__":
    main()
