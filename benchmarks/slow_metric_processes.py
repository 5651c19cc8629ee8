"""A slow custom metric with `processes: 1` and `processes: 2`: wall time of `tracejudge run` on a few cases.

The metric sleeps `--sleep` seconds a case (0.2: a metric that calls a local model, or parses a large file) and says which
process scored the case. The cases (`--n`, 40) fit in one chunk of records (`ProcessExecutor.min_chunk`, 128). Three rows:

- `processes: 1` — in-process, the reference;
- `processes: 2, whole chunks` — the process executor as it was before slow chunks were split
  (`ProcessExecutor._parts` patched to 1 in the head): the one chunk goes to one worker;
- `processes: 2` — as it is: the chunk is split among the workers (`executors.processes.PIECE_S`).

`wall s` is the whole `tracejudge run` process, start-up and reports included; `workers` is how many processes scored
cases (from the results' details). The ideal for two workers is half the first row plus a worker's start-up (about a
second: a spawned interpreter importing the stages). CPU is not shown: measured from outside it misses spawned workers
that end with the run without being waited for (one worker's start-up alone is about a CPU-second).

Run: `python3 benchmarks/slow_metric_processes.py [--n 40] [--sleep 0.2] [--repeats 1]`
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _procs import guarded, precompile, timed  # noqa: E402

METRIC = """\
import os, time
from tracejudge import Metric, Score

SLEEP_S = float(os.environ.get("SLOW_METRIC_S", "0.2"))

class Slow(Metric):
    def evaluate(self, case):
        time.sleep(SLEEP_S)
        return Score(value=1.0, passed=True, reason="slow", details={"pid": os.getpid()})
"""

# The `tracejudge` command in a fresh process; with "whole", the head hands each chunk to one worker, as before.
CHILD = """
import sys
whole, sys.argv = sys.argv[1] == "whole", ["tracejudge", *sys.argv[2:]]
if whole:
    from tracejudge.engine.executors.processes import ProcessExecutor
    ProcessExecutor._parts = lambda self, records: 1
from tracejudge.entrypoints.launch import console_main
console_main()
"""

ROWS = [("processes: 1", 1, False), ("processes: 2, whole chunks", 2, True), ("processes: 2", 2, False)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=40, help="cases (default 40)")
    ap.add_argument("--sleep", type=float, default=0.2, help="seconds the metric takes a case (default 0.2)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each row; the table shows medians (default 1)")
    args = ap.parse_args()
    got: dict[str, list[tuple[float, int]]] = {}
    work = Path(tempfile.mkdtemp(prefix="slow-metric-"))

    def measure() -> None:
        precompile()
        (work / "slowmetric.py").write_text(METRIC)
        with open(work / "cases.jsonl", "w") as fh:
            for i in range(args.n):
                fh.write(json.dumps({"id": f"c{i:03d}", "input": "x", "trace": {"steps": [], "output": "o"}}) + "\n")
        env = {**os.environ, "PYTHONPATH": str(work), "SLOW_METRIC_S": str(args.sleep)}
        for rep in range(args.repeats):
            for label, processes, whole in ROWS:
                run_dir = work / f"run-{processes}-{int(whole)}-{rep}"
                (work / "c.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: 'slowmetric:Slow'}]\n"
                                             f"run: {{dir: {run_dir.name}, processes: {processes}, executor: processes}}\n")
                done = timed([sys.executable, "-c", CHILD, "whole" if whole else "split", "run", "c.yaml", "--no-progress"],
                             timeout=600, cwd=work, env=env).check(label)
                lines = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
                if len(lines) != args.n or {r["status"] for r in lines} != {"ok"}:
                    raise RuntimeError(f"{label}: {len(lines)} results, statuses {sorted({r['status'] for r in lines})}")
                workers = len({r["scores"]["Slow"]["details"]["pid"] for r in lines})
                got.setdefault(label, []).append((done.wall, workers))

    def report() -> None:
        print(f"\n{args.n} cases, a custom metric sleeping {args.sleep:g} s a case (in-process work: {args.n * args.sleep:.1f} s); "
              f"median of {args.repeats} run(s)\n")
        print(f"| {'run':<28} | {'wall s':>6} | {'workers':>7} |")
        print(f"|{'-' * 30}|{'-' * 8}|{'-' * 9}|")
        for label, _, _ in ROWS:
            runs = got.get(label)
            if runs:
                print(f"| {label:<28} | {statistics.median(r[0] for r in runs):>6.2f} | {max(r[1] for r in runs):>7} |")
        print(f"\nload average when done: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")

    try:
        guarded(measure, report)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
