"""Throughput and peak memory of the whole deterministic pipeline, per executor, and against peers.

Makes native JSONL datasets of N = 10,000 / 100,000 cases by repeating the
200 real GPT-4o τ-bench airline runs under new ids, then runs `tracejudge run`
on each — load → extract → score (six deterministic checks) → aggregate →
results.jsonl and reports — as a fresh process, once per executor
(`run.processes: 1` = in-process on the event loop, `run.processes: 2` =
two worker processes), and prints cases/s (whole process: start to exit,
imports included) and peak RSS (the main process; the largest worker beside it).

Then, on the same 10,000 cases, the whole-process time of pydantic-evals'
`Dataset.evaluate` (six deterministic evaluators, a trivial task) and of
multivon's `EvalSuite.run` (six deterministic evaluators, an identity
model), each as a fresh process reading the same JSONL file; the ratio
columns are their seconds over ours, per executor. Peers need the `bench` extra.

The table puts the sizes side by side per executor (cases/s, peak RSS, CPU
seconds), the RSS ratio between the largest and smallest size, Ray's time
against two local processes (its overhead, cluster start-up included), and
each peer's whole-process seconds over each executor's, with whether the
target is met.

Targets: ≥ 10× pydantic-evals and ≥ 25× multivon as whole processes; peak RSS
at 100,000 ≤ 1.5 × at 10,000.

    python benchmarks/pipeline_throughput.py [--sizes 10000,100000] [--peers-n 10000] [--keep DIR]

`EXECUTORS` lists the executors measured (name → `--set` overrides); an
executor that needs an extra (Ray) adds its row there and is skipped, with a
note, when the extra is missing.
"""

from __future__ import annotations

import argparse
import importlib.util
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

# name → (config overrides, module the executor needs or None)
EXECUTORS: dict[str, tuple[list[str], str | None]] = {
    "processes 1": (["run.processes=1"], None),
    "processes 2": (["run.processes=2"], None),
    "ray (2 CPUs)": (["run.executor=ray", "run.processes=2"], "ray"),
}

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
  - {{type: MaxToolCalls, max_calls: 20}}
  - {{type: MaxModelRequests, max_requests: 30}}
  - {{type: Contains, value: reservation}}
run: {{dir: {run_dir}}}
"""

# Ray: a local cluster of exactly 2 CPUs, started by the process (as `tracejudge run` does without
# `run.ray_address`), so its start-up is part of the whole-process time. Ray's workers are not
# children of the process: their CPU time and RSS are not in the figures (the head's are).
CHILD = """
import resource, sys, time, anyio
from tracejudge.core.config import load_config
from tracejudge.engine.runner import run
cfg = load_config(sys.argv[1], sys.argv[2:])
if cfg.run.executor == "ray":
    import ray
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
out = anyio.run(run, cfg)
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, out.new_results, me.ru_maxrss, kids.ru_maxrss)
"""

PYDANTIC_EVALS = """
import json, resource, sys
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Contains, Equals, EqualsExpected, IsInstance, MaxDuration
cases = []
for line in open(sys.argv[1], encoding="utf-8"):
    c = json.loads(line)
    out = (c.get("trace") or {}).get("output") or ""
    cases.append(Case(name=c["id"], inputs=out, expected_output=out))
ds = Dataset(name="bench", cases=cases, evaluators=[EqualsExpected(), Contains(value="reservation"), Contains(value="cancel", case_sensitive=False),
                                     IsInstance(type_name="str"), MaxDuration(seconds=5.0), Equals(value="done")])
report = ds.evaluate_sync(lambda text: text, progress=False)
me = resource.getrusage(resource.RUSAGE_SELF)
print(me.ru_utime + me.ru_stime, len(report.cases), me.ru_maxrss, 0)
"""

MULTIVON = """
import json, resource, sys
from multivon_eval import Contains, EvalCase, EvalSuite, ExactMatch, NotEmpty, StartsWith, WordCount, RegexMatch
suite = EvalSuite("bench")
cases = []
for line in open(sys.argv[1], encoding="utf-8"):
    c = json.loads(line)
    out = (c.get("trace") or {}).get("output") or ""
    cases.append(EvalCase(input=out, expected_output=out, case_id=c["id"]))
suite.add_cases(cases)
suite.add_evaluators(ExactMatch(), Contains(["reservation"]), NotEmpty(), StartsWith("I"), WordCount(max_words=500), RegexMatch(r"\\d+"))
report = suite.run(lambda text: text, verbose=False)
me = resource.getrusage(resource.RUSAGE_SELF)
print(me.ru_utime + me.ru_stime, len(cases), me.ru_maxrss, 0)
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


def whole_process(code: str, args: list[str]) -> dict[str, float]:
    """Wall seconds of a fresh Python process running `code` (start to exit), its CPU seconds (with its workers), results and peak RSS in MB.

    Wall time is what a user waits; CPU time is the fairer figure on a machine that other work shares.
    """
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    cpu, n, rss_kb, child_kb = proc.stdout.split()[-4:]
    return {"s": seconds, "cpu": float(cpu), "n": int(n), "rss": int(rss_kb) / 1024, "workers_rss": int(child_kb) / 1024}


def measure(n: int, cases: Path, work: Path, name: str, overrides: list[str]) -> dict[str, float]:
    run_dir = work / f"run-{n}-{name.replace(' ', '_')}"
    cfg = work / f"bench-{n}.yaml"
    cfg.write_text(CONFIG.format(cases=cases, run_dir=run_dir))
    got = whole_process(CHILD, [str(cfg), *overrides])
    assert got["n"] == n, got
    shutil.rmtree(run_dir)
    return {**got, "rate": n / got["s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--peers-n", type=int, default=10_000, help="cases for the peer comparison (0: skip it)")
    ap.add_argument("--keep", type=Path, help="work in this folder instead of a temporary one")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    lines = base_cases()
    work = args.keep or Path(tempfile.mkdtemp(prefix="tj-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: dict[tuple[str, int], dict[str, float]] = {}
    notes: dict[str, None] = {}  # ordered, without repeats
    peers: dict[str, dict[str, float]] = {}
    try:
        for n in sorted(set(sizes) | ({args.peers_n} if args.peers_n else set())):
            cases = work / f"cases-{n}.jsonl"
            write_dataset(cases, n, lines)
            if n in sizes:
                for name, (overrides, needs) in EXECUTORS.items():
                    if needs is not None and importlib.util.find_spec(needs) is None:
                        notes[f"{name}: skipped, `{needs}` is not installed"] = None
                        continue
                    rows[name, n] = measure(n, cases, work, name, overrides)
                    print(f"  {name} N={n:,}: {rows[name, n]['s']:.1f} s", file=sys.stderr)
            if n == args.peers_n:
                for peer, code, module in (("pydantic-evals Dataset.evaluate", PYDANTIC_EVALS, "pydantic_evals"),
                                           ("multivon EvalSuite.run", MULTIVON, "multivon_eval")):
                    if importlib.util.find_spec(module) is None:
                        notes[f"{peer}: skipped, install the `bench` extra"] = None
                        continue
                    peers[peer] = whole_process(code, [str(cases)])
                    print(f"  {peer} N={n:,}: {peers[peer]['s']:.1f} s", file=sys.stderr)
            cases.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    report(rows, peers, notes, sizes, args.peers_n)


def report(rows: dict[tuple[str, int], dict[str, float]], peers: dict[str, dict[str, float]], notes: dict[str, None],
           sizes: list[int], peers_n: int) -> None:
    """Print the tables: executors side by side per size, the peers' ratios, and which targets are met."""
    small, large = min(sizes), max(sizes)
    names = list(dict.fromkeys(name for name, _ in rows))
    print(f"\npipeline throughput: native JSONL of real tau-bench runs, 6 deterministic checks, whole process ({os.cpu_count()} cores)\n")
    head = "".join(f" {f'{n:,}':>8} cases/s | {f'{n:,}':>8} RSS MB | {f'{n:,}':>8} CPU s |" for n in sizes)
    print(f"| {'executor':<14} |{head} {'RSS ' + f'{large:,}/{small:,}':>17} | RSS target (<= 1.5x) |")
    print(f"|{'-' * 16}|" + "|".join(["-" * 18, "-" * 17, "-" * 16] * len(sizes)) + f"|{'-' * 19}|{'-' * 22}|")
    for name in names:
        cells = ""
        for n in sizes:
            r = rows.get((name, n))
            cells += (f" {r['rate']:>16,.0f} | {r['rss']:>15.1f} | {r['cpu']:>14.2f} |" if r else f" {'-':>16} | {'-':>15} | {'-':>14} |")
        a, b = rows.get((name, small)), rows.get((name, large))
        ratio = b["rss"] / a["rss"] if a and b and large != small else None
        met = "-" if ratio is None else ("met" if ratio <= 1.5 else "NOT met")
        print(f"| {name:<14} |{cells} {'-' if ratio is None else f'{ratio:.2f}':>17} | {met:<20} |")
    print("\n(peak RSS: the main process; worker processes' largest RSS was "
          + ", ".join(f"{name} {rows[name, n]['workers_rss']:.0f} MB at {n:,}" for name, n in rows if rows[name, n]["workers_rss"]) + ")")
    for n in sizes:
        ray_row, local = rows.get(("ray (2 CPUs)", n)), rows.get(("processes 2", n))
        if ray_row and local:
            print(f"Ray overhead at {n:,} cases: whole process {ray_row['s'] / local['s']:.2f}x the time of 2 local processes "
                  f"({ray_row['s']:.1f} s vs {local['s']:.1f} s, cluster start-up included)")
    if peers:
        print(f"\nwhole process on the same {peers_n:,} cases: peers' seconds / ours (targets: >= 10x pydantic-evals, >= 25x multivon)\n")
        targets = {"pydantic-evals Dataset.evaluate": 10.0, "multivon EvalSuite.run": 25.0}
        print(f"| {'peer':<32} | {'seconds':>8} | {'peak RSS MB':>11} | " + " | ".join(f"{'vs ' + name:>18}" for name in names) + " |")
        print(f"|{'-' * 34}|{'-' * 10}|{'-' * 13}|" + "|".join("-" * 20 for _ in names) + "|")
        for peer, r in peers.items():
            cells = []
            for name in names:
                ours = rows.get((name, peers_n))
                if ours is None:
                    cells.append(f"{'-':>18}")
                    continue
                x = r["s"] / ours["s"]
                cells.append(f"{f'{x:.1f}x ' + ('met' if x >= targets[peer] else 'NOT met'):>18}")
            print(f"| {peer:<32} | {r['s']:>8.2f} | {r['rss']:>11.1f} | " + " | ".join(cells) + " |")
    for note in notes:
        print(f"note: {note}")

if __name__ == "__main__":
    main()
