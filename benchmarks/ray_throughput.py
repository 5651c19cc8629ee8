"""Ray against local worker processes: cases/s and peak RSS of the deterministic pipeline.

The same datasets as `pipeline_throughput.py` (the 200 real GPT-4o τ-bench
airline runs repeated under new ids, the demo's three deterministic metrics)
run in a fresh process per row with `run.executor` = `processes`
(`run.processes: 2`) and `ray` (a local 2-CPU cluster the run starts itself,
`ray.init(num_cpus=2)`), side by side. `run s` is `runner.run` alone;
`process s` is the whole process (imports, and for Ray starting the local
cluster), which is what a CI job pays. Peak RSS is the head process's (Ray's
workers are separate processes started by the raylet, not children of the head).

Ray's overhead against local processes is the ratio of the two `run s`
columns: routing each chunk through Ray actor tasks (serialising the raw
records to the object store and the `Extracted` results back) costs more
than a pipe to a local process; Ray pays off when the cases' work is heavy
(a live target, big traces) or spans several machines.

    python benchmarks/ray_throughput.py [--sizes 10000,100000]   (needs `pip install -e '.[ray]'`)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _procs import guarded, timed  # noqa: E402
from pipeline_throughput import CONFIG, REPO, base_cases, write_dataset  # noqa: E402

CHILD = """
import resource, sys, time, anyio
from tracejudge.core.config import load_config
from tracejudge.engine.runner import run
cfg = load_config(sys.argv[1], sys.argv[2:])
if cfg.run.executor == "ray":
    import ray
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
t0 = time.perf_counter()
out = anyio.run(run, cfg)
dt = time.perf_counter() - t0
print(out.new_results, dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

EXECUTORS = {"processes (2)": ["run.executor=processes", "run.processes=2"], "ray (local, 2 CPUs)": ["run.executor=ray"]}


def measure(n: int, label: str, workdir: Path, cases: Path) -> dict[str, float | str]:
    run_dir = workdir / f"run-{n}"
    cfg = workdir / f"bench-{n}.yaml"
    cfg.write_text(CONFIG.format(cases=cases, run_dir=run_dir))
    done = timed([sys.executable, "-c", CHILD, str(cfg), *EXECUTORS[label]], cwd=REPO).check(f"{label} at N={n:,}")
    wall = done.wall
    new, seconds, rss_kb = done.stdout.split()[-3:]
    if int(new) != n:
        raise RuntimeError(f"{label} at N={n:,} finished {new} of {n} cases")
    shutil.rmtree(run_dir)
    return {"n": n, "executor": label, "s": float(seconds), "wall": wall, "rate": n / float(seconds), "rss": int(rss_kb) / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    args = ap.parse_args()
    lines = base_cases()
    work = Path(tempfile.mkdtemp(prefix="tj-ray-bench-"))
    rows: list[dict[str, float | str]] = []

    def measure_all() -> None:
        try:
            for n in (int(s) for s in args.sizes.split(",")):
                cases = work / f"cases-{n}.jsonl"
                write_dataset(cases, n, lines)
                for label in EXECUTORS:
                    rows.append(measure(n, label, work, cases))
                    print(f"  measured {label} at N={n:,}", file=sys.stderr)
                cases.unlink()
        finally:
            shutil.rmtree(work, ignore_errors=True)

    guarded(measure_all, lambda: report(rows))


def report(rows: list[dict]) -> None:
    """The table of `rows`, and Ray's overhead at each size measured with both executors."""
    print(f"\nRay vs local processes: native JSONL of real tau-bench runs, 3 metrics ({os.cpu_count()} cores on machine)\n")
    print(f"| {'cases':>8} | {'executor':<20} | {'run s':>7} | {'process s':>9} | {'cases/s':>8} | {'peak RSS MB':>11} |")
    print(f"|{'-' * 10}|{'-' * 22}|{'-' * 9}|{'-' * 11}|{'-' * 10}|{'-' * 13}|")
    for r in rows:
        print(f"| {r['n']:>8,} | {r['executor']:<20} | {r['s']:>7.2f} | {r['wall']:>9.2f} | {r['rate']:>8,.0f} | {r['rss']:>11.1f} |")
    by = {(r["n"], r["executor"]): r for r in rows}
    for n in sorted({r["n"] for r in rows}):
        ray_row, proc_row = by.get((n, "ray (local, 2 CPUs)")), by.get((n, "processes (2)"))
        if ray_row and proc_row:
            print(f"Ray overhead at N={n:,}: run {ray_row['s'] / proc_row['s']:.2f}x, whole process {ray_row['wall'] / proc_row['wall']:.2f}x of local processes")

if __name__ == "__main__":
    main()
