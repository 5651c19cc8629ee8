"""A warm cached re-run: the judge path when every answer is already in the cache.

Scenario (issue "Speed to the floor", judge-path figures): N synthetic cases
(default 2,000, six steps each) judged by one `Rubric` metric with the judge
simulator (`judge.provider: simulator`, started by the run itself). Each run is
a whole `tracejudge run` process, timed from outside:

1. cold: an empty cache, every case asked once;
2. warm, `--repeats` times (default 5): the same config into a fresh run
   directory with the cache the cold run filled — every answer is a hit.

The project's bytecode is written first (`_procs.precompile`), so no timed process
compiles sources. Printed per row: requests the judge sent (the summary's `judge.requests`),
cache hits, wall seconds and CPU seconds (user + system of the process and
the worker processes it waited for); for the warm runs the median and the
range. Each warm run's results must equal the cold run's (status, value,
passed, reason and details of every score, by case), and send 0 requests:
the script stops with an error otherwise.

Target: the warm re-run of 2,000 cases under 1.5 s wall on a quiet machine.

Run: `python benchmarks/judge_warm_rerun.py [--cases N] [--repeats K] [--processes P]`
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("order refund flight booking passenger baggage seat upgrade policy cabin economy business reservation payment "
         "certificate insurance cancel change status pending delivered account membership gold silver airport date time").split()

CONFIG = """\
dataset: {{path: cases.jsonl, format: native}}
metrics:
  - {{type: Rubric, criteria: "The agent did what the user asked, with the right tools, and said what it did."}}
judge: {{provider: simulator, model: gpt-4o-mini}}
cache: {{dir: cache}}
run: {{dir: run, processes: {processes}}}
"""


def make_case(i: int, words: int) -> dict:
    """Case `i`: six steps, one tool call each with a result of `words` words."""
    rng = random.Random(i)
    steps = [{"thought": f"step {s} of case {i}",
              "tool_calls": [{"name": f"tool_{s}", "arguments": {"id": f"{i}-{s}"}, "result": " ".join(rng.choice(WORDS) for _ in range(words))}]}
             for s in range(6)]
    return {"id": f"case-{i}", "input": f"Please handle request number {i} for the customer.", "trace": {"steps": steps, "output": f"Done with request {i}."}}


def run_once(root: Path, run_dir: str) -> dict:
    """One `tracejudge run` process: its wall and CPU seconds (user + system of it and the workers it waited for), and
    its summary's judge block."""
    from _procs import timed  # the benchmarks' shared runner: the process and its group are stopped however the wait ends

    exe = Path(sys.executable).with_name("tracejudge")
    done = timed([str(exe), "run", "config.yaml", "--run-dir", run_dir], timeout=900, cwd=root).check(f"tracejudge run {run_dir}")
    summary = json.loads((root / run_dir / "summary.json").read_text())
    return {"wall": done.wall, "cpu": done.cpu, "judge": summary["judge"], "status": summary.get("status", {})}


def outcomes(path: Path) -> dict[str, tuple]:
    """What a result says about its case (status and every score's value, passed, reason, details), by case id."""
    out = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        scores = {k: (s["value"], s["passed"], s["reason"], json.dumps(s.get("details"), sort_keys=True)) for k, s in r["scores"].items()}
        out[r["case_id"]] = (r["status"], json.dumps(scores, sort_keys=True))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--words", type=int, default=40, help="words per tool result (prompt size)")
    ap.add_argument("--repeats", type=int, default=5, help="warm re-runs (the median is reported)")
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="run.processes (default: the cores, as a run's default)")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = ap.parse_args()

    from _procs import precompile

    precompile()
    load = os.getloadavg()[0]
    root = args.keep or Path(tempfile.mkdtemp(prefix="tj-warm-"))
    root.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str, str, str, str]] = []
    try:
        with open(root / "cases.jsonl", "w") as fh:
            for i in range(args.cases):
                fh.write(json.dumps(make_case(i, args.words)) + "\n")
        (root / "config.yaml").write_text(CONFIG.format(processes=args.processes))
        for d in ("cache", "cold"):
            shutil.rmtree(root / d, ignore_errors=True)
        cold = run_once(root, "cold")
        truth = outcomes(root / "cold" / "results.jsonl")
        rows.append(("cold (empty cache)", str(cold["judge"]["requests"]), str(cold["judge"]["cache_hits"]), f"{cold['wall']:.2f} s", f"{cold['cpu']:.2f} s"))
        warm = []
        for k in range(args.repeats):
            shutil.rmtree(root / f"warm{k}", ignore_errors=True)
            w = run_once(root, f"warm{k}")
            if w["judge"]["requests"] != 0:
                raise SystemExit(f"warm re-run {k} sent {w['judge']['requests']} requests (expected 0)")
            if outcomes(root / f"warm{k}" / "results.jsonl") != truth:
                raise SystemExit(f"warm re-run {k}: results differ from the cold run's")
            warm.append(w)
            print(f"  warm {k}: {w['wall']:.2f} s wall, {w['cpu']:.2f} s CPU", file=sys.stderr, flush=True)
        walls, cpus = [w["wall"] for w in warm], [w["cpu"] for w in warm]
        if warm:
            rows.append((f"warm re-run (median of {len(warm)})", "0", str(warm[0]["judge"]["cache_hits"]),
                         f"{statistics.median(walls):.2f} s ({min(walls):.2f}–{max(walls):.2f})",
                         f"{statistics.median(cpus):.2f} s ({min(cpus):.2f}–{max(cpus):.2f})"))
    finally:
        print(f"\nWarm cached re-run: {args.cases:,} cases, one Rubric metric, provider: simulator, run.processes {args.processes} "
              f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end)\n")
        print("| run | requests sent | cache hits | wall | CPU (user + sys) |")
        print("|---|---:|---:|---:|---:|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
        print("\nWarm results equal the cold run's, case by case (status, value, passed, reason, details). Target: warm wall < 1.5 s.")
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
