"""Throughput and peak memory of the whole deterministic pipeline.

Makes native JSONL datasets of N = 1,000 / 10,000 / 100,000 cases by repeating
the 200 real GPT-4o τ-bench airline runs under new ids, then runs
`tracejudge run` on each — load → extract → score (the demo's three metrics)
→ aggregate → results.jsonl — in a fresh process pinned to one core, and
prints cases/s and peak RSS side by side.

Targets: ≥ 2,000 cases/s on one core; peak RSS at 100,000 ≤ 1.5 × at 1,000.

    python benchmarks/pipeline_throughput.py [--sizes 1000,10000,100000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "tau_bench"
sys.path.insert(0, str(REPO))

CONFIG = """\
dataset: {{path: {cases}, format: native}}
metrics:
  - type: ToolCalls
    name: writes_exact
    arguments: exact
    exclude_tools: ["get_*", "search_*", "list_*", "calculate", "think", "transfer_*"]
    include_failed: false
  - {{type: TrajectoryMatch, order: in_order}}
  - {{type: ToolCorrectness, allow_extra: true}}
run: {{dir: {run_dir}}}
"""

CHILD = """
import os, resource, sys, time, anyio
os.sched_setaffinity(0, {{{cpu}}})
from tracejudge.core.config import load_config
from tracejudge.engine.runner import run
cfg = load_config(sys.argv[1])
t0 = time.perf_counter()
out = anyio.run(run, cfg)
dt = time.perf_counter() - t0
print(out.new_results, dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def base_cases() -> list[str]:
    """The 200 τ-bench runs as native case lines (ids replaced later)."""
    from tracejudge.stages.extract.tau_bench import adapt, load_tasks
    from tracejudge.stages.load import read_json_array

    tasks = load_tasks(DATA / "tasks" / "tasks_airline_test.json")
    runs = read_json_array(DATA / "historical_trajectories" / "gpt-4o-airline.json")
    return [adapt(r.payload, tasks).model_dump_json(exclude_defaults=True) for r in runs]


def write_dataset(path: Path, n: int, lines: list[str]) -> int:
    # Every line starts with {"id":"<task>-<trial>"; swap in a unique id without re-serializing.
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            line = lines[i % len(lines)]
            rest = line[line.index(",") :]
            fh.write(f'{{"id":"bench-{i}"{rest}\n')
    return path.stat().st_size


def measure(n: int, workdir: Path, lines: list[str]) -> dict[str, float]:
    cases = workdir / f"cases-{n}.jsonl"
    size = write_dataset(cases, n, lines)
    cfg = workdir / f"bench-{n}.yaml"
    cfg.write_text(CONFIG.format(cases=cases, run_dir=workdir / f"run-{n}"))
    cpu = sorted(os.sched_getaffinity(0))[-1]
    proc = subprocess.run([sys.executable, "-c", CHILD.format(cpu=cpu), str(cfg)], capture_output=True, text=True, cwd=REPO, check=True)
    new, seconds, rss_kb = proc.stdout.split()
    assert int(new) == n, proc.stdout
    results = sum(1 for _ in open(workdir / f"run-{n}" / "results.jsonl", "rb"))
    assert results == n, f"{results} results for {n} cases"
    cases.unlink()
    shutil.rmtree(workdir / f"run-{n}")
    return {"n": n, "mb": size / 1e6, "s": float(seconds), "rate": n / float(seconds), "rss": int(rss_kb) / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--keep", type=Path, help="work in this folder instead of a temporary one")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    lines = base_cases()
    work = args.keep or Path(tempfile.mkdtemp(prefix="tj-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for n in sizes:
            t0 = time.perf_counter()
            rows.append(measure(n, work, lines))
            print(f"  measured N={n:,} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    base = rows[0]["rss"]
    print(f"\npipeline throughput: native JSONL of real tau-bench runs, 3 metrics, one core ({os.cpu_count()} on machine)\n")
    print(f"| {'cases':>8} | {'dataset MB':>10} | {'seconds':>8} | {'cases/s':>8} | {'peak RSS MB':>11} | {'RSS / RSS(first)':>16} |")
    print(f"|{'-' * 10}|{'-' * 12}|{'-' * 10}|{'-' * 10}|{'-' * 13}|{'-' * 18}|")
    for r in rows:
        print(f"| {r['n']:>8,} | {r['mb']:>10.1f} | {r['s']:>8.2f} | {r['rate']:>8,.0f} | {r['rss']:>11.1f} | {r['rss'] / base:>16.2f} |")
    print("\ntargets: >= 2,000 cases/s; peak RSS at the largest N <= 1.5 x at the smallest")


if __name__ == "__main__":
    main()
