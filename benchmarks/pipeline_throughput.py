"""Throughput and peak memory of the whole deterministic pipeline, per executor, and against peers doing the same work.

Makes native JSONL datasets of N = 10,000 / 100,000 cases by repeating the
200 real GPT-4o τ-bench airline runs under new ids, then runs `tracejudge run CONFIG
--no-progress` (the console script's entry point, its printed summary included)
on each — load → extract → score → aggregate → results.jsonl and reports — as
a fresh process, once per executor (`run.processes: 1` = in-process on the
event loop, `run.processes: 2` = two worker processes), and prints cases/s,
CPU seconds and peak RSS (the main process; the largest worker beside it), and, with workers,
the main process's CPU apart from theirs.

The six checks, the same for all three tools: ToolCalls exact on write calls
(`exclude_tools` below, failed calls left out), TrajectoryMatch in_order,
ToolCorrectness allow_extra, MaxToolCalls 20, MaxModelRequests 30, Contains
"reservation" (case ignored).

Peers get the same work: on the same `--peers-n` cases (the same JSONL file),
pydantic-evals' `Dataset.evaluate` and multivon's `EvalSuite.run` compute
those six checks — with the peer's own evaluators where it has one, else
equivalent code over the same records (`benchmarks/_peer_pydantic_evals.py`,
`benchmarks/_peer_multivon.py`, `benchmarks/_six_checks.py` say which is
which). Before any ratio is printed the script checks that the three tools'
six means agree to 3 decimals; if they do not it prints the means, the first
disagreeing case ids per check, refuses the ratios and exits 1.

Ratios are whole processes (fresh process, start to exit, imports included),
in CPU seconds (the process and the worker processes it waited for, measured
from outside) and in wall seconds: the runs at `--peers-n` are interleaved
(processes 1, processes 2, pydantic-evals, multivon, then again) `--repeats`
times, and each figure is the median. Other sizes run once per executor.

The project's bytecode is written before anything is timed (`precompile`), as the peers'
installed packages have theirs.

Targets: ≥ 10× pydantic-evals and ≥ 25× multivon with processes 2, CPU and
wall; ≥ 6× pydantic-evals with processes 1, CPU and wall; peak RSS at the
largest size ≤ 1.5 × at the smallest. Peers need the `bench` extra
(`pip install -e '.[bench]'`); a missing one is skipped with a note.

    python benchmarks/pipeline_throughput.py [--sizes 10000,100000] [--peers-n 10000] [--repeats 5]
        [--executors "processes 1,processes 2"] [--quick] [--keep DIR]

`--quick` is `--sizes 1000 --peers-n 1000 --repeats 1` without Ray. A step that
fails stops the run: the table of what was measured is printed, then the
error, and the script exits 1; every process it started is stopped.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
DATA = REPO.parent / "shared" / "data" / "tau_bench"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(BENCH))

from _procs import guarded, precompile, timed  # noqa: E402
from _six_checks import CHECKS  # noqa: E402

# name → (config overrides, module the executor needs or None)
EXECUTORS: dict[str, tuple[list[str], str | None]] = {
    "processes 1": (["run.processes=1"], None),
    "processes 2": (["run.processes=2"], None),
    "ray (2 CPUs)": (["run.executor=ray", "run.processes=2"], "ray"),
}
# name → (script in benchmarks/, module it needs)
PEERS: dict[str, tuple[str, str]] = {
    "pydantic-evals Dataset.evaluate": ("_peer_pydantic_evals.py", "pydantic_evals"),
    "multivon EvalSuite.run": ("_peer_multivon.py", "multivon_eval"),
}
# (peer, executor) → the smallest ratio (peer seconds / ours) that meets the target, CPU and wall alike
TARGETS: dict[tuple[str, str], float] = {
    ("pydantic-evals Dataset.evaluate", "processes 2"): 10.0,
    ("multivon EvalSuite.run", "processes 2"): 25.0,
    ("pydantic-evals Dataset.evaluate", "processes 1"): 6.0,
}
RSS_TARGET = 1.5
AGREE = 0.0005  # the six means must agree to 3 decimals

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
# descendants the process waits for: their CPU time and RSS are not in the figures (the head's are).
CHILD = """
import json, resource, sys
# The command a user runs, `tracejudge run CONFIG --set KEY=VALUE ... --no-progress` (its console script's entry point,
# everything it prints included), in this process, so that this process can say what its workers used when it ends.
cfg, overrides = sys.argv[1], sys.argv[2:]
sys.argv = ["tracejudge", "run", cfg, "--no-progress", *[part for o in overrides for part in ("--set", o)]]
if "run.executor=ray" in overrides:
    import ray
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
import os
def report(code):
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"exit": code, "rss_kb": me.ru_maxrss, "workers_rss_kb": kids.ru_maxrss,
                      "workers_cpu": kids.ru_utime + kids.ru_stime}), flush=True)
exit_now = os._exit
def reported_exit(code):  # the command ends with os._exit when a thread is still alive (`entrypoints.cli.console_main`)
    report(code)
    exit_now(code)
os._exit = reported_exit
from tracejudge.entrypoints.launch import console_main
try:
    console_main()
except SystemExit as end:
    report(end.code)
"""

Run = dict[str, Any]  # wall, cpu, workers_cpu (s), n, rss, workers_rss (MB), means


class State:
    """Everything measured so far, so that a failed step still leaves a table."""

    def __init__(self, sizes: list[int], peers_n: int) -> None:
        self.sizes, self.peers_n = sizes, peers_n
        self.rows: dict[tuple[str, int], list[Run]] = {}
        self.peers: dict[str, list[Run]] = {}
        self.notes: dict[str, None] = {}  # ordered, without repeats
        self.disagree: list[str] = []
        self.load = ""  # the load average when the run started


def base_cases() -> list[str]:
    """The 200 τ-bench runs as native case lines (ids replaced later)."""
    from tracejudge.stages.extract.tau_bench import adapt, load_tasks
    from tracejudge.stages.load import read_json_array

    tasks = load_tasks(DATA / "tasks" / "tasks_airline_test.json")
    runs = read_json_array(DATA / "historical_trajectories" / "gpt-4o-airline.json")
    # Without the agent's system prompt (the 6 KB airline policy each run's first message holds): the six checks never
    # read it, and the benchmark's cases stay the 79 MB every earlier figure was measured on.
    return [adapt(r.payload, tasks).model_dump_json(exclude_defaults=True, exclude={"trace": {"system_prompts"}}) for r in runs]


def write_dataset(path: Path, n: int, lines: list[str]) -> int:
    # Every line starts with {"id":"<task>-<trial>"; swap in a unique id without re-serializing.
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            line = lines[i % len(lines)]
            rest = line[line.index(",") :]
            fh.write(f'{{"id":"bench-{i}"{rest}\n')
    return path.stat().st_size


def whole_process(cmd: list[str], what: str) -> Run:
    """A fresh process run to exit: wall and CPU seconds (from outside), and its last stdout line (JSON: n, rss_kb, …)."""
    done = timed(cmd, cwd=REPO).check(what)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall": done.wall, "cpu": done.cpu, "n": got.get("n"), "exit": got.get("exit"), "rss": got["rss_kb"] / 1024,
            "workers_rss": got["workers_rss_kb"] / 1024, "workers_cpu": got.get("workers_cpu", 0.0), "means": got.get("means")}


def run_dir_of(work: Path, n: int, name: str) -> Path:
    """Where the run of `n` cases with executor `name` writes."""
    return work / f"run-{n}-{''.join(c if c.isalnum() else '_' for c in name)}"


def ours(n: int, cases: Path, work: Path, name: str, keep_as: Path | None = None) -> Run:
    """One `tracejudge run` of `cases` with executor `name`; the six means read from its summary.json.

    The run directory is removed afterwards, or moved to `keep_as` when given.
    """
    run_dir = run_dir_of(work, n, name)
    shutil.rmtree(run_dir, ignore_errors=True)
    cfg = work / f"bench-{n}.yaml"
    cfg.write_text(CONFIG.format(cases=cases, run_dir=run_dir))
    got = whole_process([sys.executable, "-c", CHILD, str(cfg), *EXECUTORS[name][0]], f"tracejudge run ({name}, N={n:,})")
    summary = json.loads((run_dir / "summary.json").read_text())
    got["n"] = summary["results"]
    if got["n"] != n or got["exit"] != 0:
        raise RuntimeError(f"tracejudge run ({name}) finished {got['n']} of {n} cases, exit status {got['exit']}")
    metrics = summary["metrics"]
    for key in CHECKS:
        if metrics[key]["not_computed"]:
            raise RuntimeError(f"{key}: {metrics[key]['not_computed']} case(s) not computed; the peers score every case")
    got["means"] = {key: metrics[key]["mean"] for key in CHECKS}
    if keep_as is None:
        shutil.rmtree(run_dir)
    else:
        run_dir.rename(keep_as)
    return {**got, "rate": n / got["wall"]}


def peer(name: str, cases: Path, scores: Path | None = None) -> Run:
    """One whole-process run of a peer's script on `cases`."""
    cmd = [sys.executable, str(BENCH / PEERS[name][0]), str(cases)] + (["--scores", str(scores)] if scores else [])
    return whole_process(cmd, name)


def median(runs: list[Run], key: str) -> float:
    """The median of `key` over `runs`."""
    return statistics.median(r[key] for r in runs)


def check_means(st: State, run_dir: Path, cases: Path, work: Path) -> None:
    """Compare every run's six means with ours; on a disagreement find the cases (peer re-run untimed with `--scores`)."""
    reference = st.rows[next(k for k in st.rows if k[1] == st.peers_n)][0]["means"]
    tools = {f"tracejudge {name}": runs for (name, n), runs in st.rows.items() if n == st.peers_n} | st.peers
    for tool, runs in tools.items():
        for r in runs:
            off = [k for k in CHECKS if abs(r["means"][k] - reference[k]) > AGREE]
            if off and not any(line.startswith(tool) for line in st.disagree):
                st.disagree.append(f"{tool}: " + ", ".join(f"{k} {r['means'][k]:.6f} vs ours {reference[k]:.6f}" for k in off))
                if tool in PEERS:
                    st.disagree.extend(f"  {line}" for line in first_differences(tool, run_dir, cases, work, off))
    if st.disagree:
        raise RuntimeError("the tools' six means disagree (the cases are listed above): ratios refused, they would not compare the same work")


def first_differences(name: str, run_dir: Path, cases: Path, work: Path, checks: list[str], limit: int = 10) -> list[str]:
    """The first `limit` case ids per check where the peer's value differs from ours (the peer re-run with `--scores`)."""
    scores = work / f"scores-{PEERS[name][1]}.jsonl"
    peer(name, cases, scores)
    theirs = {row["id"]: row for row in map(json.loads, scores.read_text().splitlines())}
    found: dict[str, list[str]] = {k: [] for k in checks}
    with open(run_dir / "results.jsonl", encoding="utf-8") as fh:
        for line in fh:
            res = json.loads(line)
            for k in checks:
                mine, other = res["scores"][k]["value"], theirs[res["case_id"]][k]
                if len(found[k]) < limit and (mine is None or abs(mine - other) > 1e-6):
                    found[k].append(f"{res['case_id']} ours {mine} theirs {other}")
    return [f"{k}: " + "; ".join(v) for k, v in found.items()]


def measure(st: State, args: argparse.Namespace, work: Path) -> None:
    """Every run, in order, each stored in `st` as soon as it is measured."""
    lines = base_cases()
    names = []
    for name in args.executors:
        needs = EXECUTORS[name][1]
        if needs is not None and importlib.util.find_spec(needs) is None:
            st.notes[f"{name}: skipped, `{needs}` is not installed"] = None
        else:
            names.append(name)
    peers = []
    for name, (_, module) in PEERS.items():
        if importlib.util.find_spec(module) is None:
            st.notes[f"{name}: skipped, install the `bench` extra"] = None
        elif args.peers_n:
            peers.append(name)
    for n in sorted(set(st.sizes) | ({st.peers_n} if st.peers_n else set())):
        cases = work / f"cases-{n}.jsonl"
        write_dataset(cases, n, lines)
        if n == st.peers_n:
            # Interleaved rounds (ours per executor, then each peer) so that load drifting over the
            # minutes of the run weighs on every tool alike; Ray is not compared with the peers.
            local = [name for name in names if EXECUTORS[name][1] is None]
            kept = work / f"kept-run-{n}"  # our first run's results, to find the cases if the means disagree
            for r in range(args.repeats):
                for name in local:
                    st.rows.setdefault((name, n), []).append(ours(n, cases, work, name, kept if r == 0 and name == local[0] else None))
                    print(f"  {name} N={n:,} #{r + 1}: {st.rows[name, n][-1]['wall']:.1f} s", file=sys.stderr)
                for name in peers if local else ():
                    st.peers.setdefault(name, []).append(peer(name, cases))
                    print(f"  {name} N={n:,} #{r + 1}: {st.peers[name][-1]['wall']:.1f} s", file=sys.stderr)
                if local:
                    # After every round: a disagreement stops the run before more time goes into ratios it voids.
                    check_means(st, kept, cases, work)
            shutil.rmtree(kept, ignore_errors=True)
        if n in st.sizes:
            for name in names:
                if (name, n) not in st.rows:
                    st.rows[name, n] = [ours(n, cases, work, name)]
                    print(f"  {name} N={n:,}: {st.rows[name, n][-1]['wall']:.1f} s", file=sys.stderr)
        cases.unlink()


def report(st: State) -> None:
    """Print the tables of what `st` holds: executors per size, the six means per tool, the peers' ratios and targets."""
    try:
        tables(st)
    finally:
        for note in st.notes:
            print(f"note: {note}")


def tables(st: State) -> None:
    """The tables of `report`."""
    rows, sizes = st.rows, [n for n in st.sizes if any(k[1] == n for k in st.rows)]
    names = list(dict.fromkeys(name for name, _ in rows))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\npipeline throughput: native JSONL of real tau-bench runs, the six checks, whole process "
          f"({os.cpu_count()} cores, load average now {load}; started at {st.load})\n")
    if sizes:
        small, large = min(sizes), max(sizes)
        head = "".join(f" {f'{n:,}':>8} cases/s | {f'{n:,}':>8} RSS MB | {f'{n:,}':>8} CPU s |" for n in sizes)
        print(f"| {'executor':<14} |{head} {'RSS ' + f'{large:,}/{small:,}':>17} | RSS target (<= {RSS_TARGET}x) |")
        print(f"|{'-' * 16}|" + "|".join(["-" * 18, "-" * 17, "-" * 16] * len(sizes)) + f"|{'-' * 19}|{'-' * 22}|")
        for name in names:
            cells = ""
            for n in sizes:
                r = rows.get((name, n))
                cells += (f" {n / median(r, 'wall'):>16,.0f} | {median(r, 'rss'):>15.1f} | {median(r, 'cpu'):>14.2f} |" if r
                          else f" {'-':>16} | {'-':>15} | {'-':>14} |")
            a, b = rows.get((name, small)), rows.get((name, large))
            ratio = median(b, "rss") / median(a, "rss") if a and b and large != small else None
            met = "-" if ratio is None else ("met" if ratio <= RSS_TARGET else "NOT met")
            print(f"| {name:<14} |{cells} {'-' if ratio is None else f'{ratio:.2f}':>17} | {met:<20} |")
        counts = ", ".join(f"{len(r)} at {n:,}" for n in sizes for (name, m), r in rows.items() if m == n and name == names[0])
        print(f"\n(medians over runs: {counts}; peak RSS is the main process's, the workers' largest was "
              + (", ".join(f"{name} {median(r, 'workers_rss'):.0f} MB at {n:,}" for (name, n), r in rows.items() if median(r, "workers_rss")) or "-")
              + ")")
        # With workers the wall time is bounded by the main process's own CPU as well as by the total over the cores.
        for (name, n), r in rows.items():
            if median(r, "workers_cpu") > 0.1:
                print(f"{name} at {n:,}: main process {statistics.median(x['cpu'] - x['workers_cpu'] for x in r):.2f} CPU s, "
                      f"workers {median(r, 'workers_cpu'):.2f} CPU s together")
        for n in sizes:
            ray_row, local = rows.get(("ray (2 CPUs)", n)), rows.get(("processes 2", n))
            if ray_row and local:
                print(f"Ray overhead at {n:,} cases: whole process {median(ray_row, 'wall') / median(local, 'wall'):.2f}x the time of 2 local processes "
                      f"({median(ray_row, 'wall'):.1f} s vs {median(local, 'wall'):.1f} s, cluster start-up included)")
    compared = {f"tracejudge {name}": r for (name, n), r in rows.items() if n == st.peers_n and not EXECUTORS[name][1]} | st.peers
    if compared:
        print(f"\nthe six means on the same {st.peers_n:,} cases (must agree to 3 decimals for the ratios to compare the same work)\n")
        print(f"| {'tool':<32} | " + " | ".join(f"{k:>16}" for k in CHECKS) + " |")
        print(f"|{'-' * 34}|" + "|".join("-" * 18 for _ in CHECKS) + "|")
        for tool, runs in compared.items():
            print(f"| {tool:<32} | " + " | ".join(f"{runs[0]['means'][k]:>16.6f}" for k in CHECKS) + " |")
    if st.disagree:
        print("\n" + "!" * 100 + "\nTHE SIX MEANS DISAGREE: NO RATIO IS PRINTED, the tools did not do the same work:")
        print("\n".join(st.disagree) + "\n" + "!" * 100)
        return
    local = [name for name in names if (name, st.peers_n) in rows and not EXECUTORS[name][1]]
    if not st.peers or not local:
        return
    n_runs = min(len(r) for r in [*st.peers.values(), *(rows[name, st.peers_n] for name in local)])
    print(f"\nwhole process on the same {st.peers_n:,} cases, the same six checks: peer's seconds / ours, "
          f"median of {n_runs} interleaved run(s), CPU (with workers) and wall\n")
    print(f"| {'peer':<32} | {'CPU s':>7} | {'wall s':>7} | {'RSS MB':>7} | " + " | ".join(f"{'vs ' + name + ' CPU':>22} | {'wall':>18}" for name in local) + " |")
    print(f"|{'-' * 34}|{'-' * 9}|{'-' * 9}|{'-' * 9}|" + "|".join("-" * 24 + "|" + "-" * 20 for _ in local) + "|")
    for name, runs in st.peers.items():
        cells = []
        for ex in local:
            target = TARGETS.get((name, ex))
            for key, width in (("cpu", 22), ("wall", 18)):
                x = median(runs, key) / median(rows[ex, st.peers_n], key)
                verdict = "" if target is None else (f" >={target:g} met" if x >= target else f" >={target:g} NOT met")
                cells.append(f"{f'{x:.1f}x{verdict}':>{width}}")
        print(f"| {name:<32} | {median(runs, 'cpu'):>7.2f} | {median(runs, 'wall'):>7.2f} | {median(runs, 'rss'):>7.1f} | " + " | ".join(cells) + " |")
    for ex in local:
        r = rows[ex, st.peers_n]
        print(f"(tracejudge {ex}: {median(r, 'cpu'):.2f} CPU s, {median(r, 'wall'):.2f} wall s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--peers-n", type=int, default=10_000, help="cases for the peer comparison (0: skip it)")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved whole-process runs at --peers-n; the medians are compared")
    ap.add_argument("--executors", default=",".join(EXECUTORS), help=f"comma-separated, of: {', '.join(EXECUTORS)}")
    ap.add_argument("--quick", action="store_true", help="--sizes 1000 --peers-n 1000 --repeats 1, without Ray")
    ap.add_argument("--keep", type=Path, help="work in this folder instead of a temporary one")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.peers_n, args.repeats = "1000", 1000, 1
        args.executors = ",".join(name for name, (_, needs) in EXECUTORS.items() if needs is None)
    args.executors = [name.strip() for name in args.executors.split(",")]
    unknown = [name for name in args.executors if name not in EXECUTORS]
    if unknown or args.repeats < 1:
        ap.error(f"unknown executor(s) {unknown}" if unknown else "--repeats must be at least 1")
    st = State([int(s) for s in args.sizes.split(",")], args.peers_n)
    st.load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    precompile()
    work = args.keep or Path(tempfile.mkdtemp(prefix="tj-bench-"))
    work.mkdir(parents=True, exist_ok=True)

    def run_all() -> None:
        try:
            measure(st, args, work)
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)

    guarded(run_all, lambda: report(st))


if __name__ == "__main__":
    main()
