"""The floor of the work of a whole deterministic run, beside tracejudge and pydantic-evals, against the peer targets.

What it measures: for the targets of `pipeline_throughput.py` (tracejudge at least 6x pydantic-evals with
processes 1, 10x with processes 2, 25x multivon with processes 2, in CPU and in wall seconds of the whole
process), how many seconds a target allows, how many the least implementation of the same work takes (the
floor), how many it takes once it keeps the run's guarantees too (the floor with guarantees), how many once it also
writes tracejudge's own result lines (the floor with guarantees and reasons), how many once it also writes every other
file a run writes (the floor with guarantees, reasons and outputs), and how many tracejudge takes. So a note can say
"target X CPU-s, minimal implementation Y, Y' with the guarantees, Y'' with tracejudge's lines, Y''' with every file,
tracejudge Z", and tell a target tracejudge misses from one nothing written in Python could meet, with or without what a run must
keep for its resume safety and CI reports, or write in its results.

The floor is `benchmarks/_floor_run.py`: not tracejudge's code but a minimal, self-contained implementation of
the same step (validated msgspec decode of the native JSONL lines, the six checks with short reasons, a
result line per case, the fold with bootstrap CIs and summary.json), with 1 process or 2 forked workers. It
leaves out what tracejudge does besides (checkpoints and resume, the dataset fingerprint, secret redaction,
JUnit and the reports, richer reasons, per-metric error isolation and time limits, ...: its docstring lists them).
The floor with guarantees is the same with `--guarantees` (`benchmarks/_floor_guarantees.py`): it adds the
dataset fingerprint in manifest.json, the resume cursor (each line's CRC-32, each id's first line, a repeated id
refused), result lines carrying tracejudge's fields (tags, metadata, `details`, ...), junit.xml, and a checkpoint
of the fold's state every 1,000 results after an fsync of the results; it still leaves out the cursor's and the
result index's files, report.md and report.html, redaction, richer reasons, ... (its docstring lists them).
The floor with guarantees and reasons adds `--reasons` (`benchmarks/_floor_reasons.py`): result lines byte for byte
tracejudge's (but `duration_s`, wall time) for these checks: its reason texts (calls rendered and cut, the closest
call, first divergences, argument differences, counts of missing and extra tools), every check's `details`, and
secret redaction of every text copied into them, tags and metadata included, by tracejudge's rules.
The floor with guarantees, reasons and outputs adds `--outputs` (`benchmarks/_floor_outputs.py`): the YAML config read
with PyYAML and its six metrics validated, and minimal implementations of every other file `tracejudge run` writes,
with the same rows, figures and texts: results.idx, cursor.json and cursor.ids, the checkpoint's CRC-32s and segment,
configs.jsonl and the manifest's config and history, tracejudge's summary.json (histograms, a breakdown by tag, the
verdict), junit.xml's gate suite and durations with texts shown inert, report.md (the worst 10 cases per metric) and
report.html (histograms, the worst 2,000 results as the case table's JSON); left out there: the page's CSS and script.

How: N τ-bench cases (`pipeline_throughput.write_dataset`, default 10,000), the project's bytecode written
first (`_procs.precompile`), then `--repeats` interleaved rounds of fresh processes, each timed from outside
(`pipeline_throughput.whole_process`: CPU seconds of the process and the workers it waited for, wall
seconds, start to exit): floor, floor+guarantees, floor+guarantees+reasons and floor+guarantees+reasons+outputs each
with processes 1 and 2,
tracejudge processes 1, tracejudge processes 2, pydantic-evals, and multivon with `--multivon` (about
33 s a run). Figures are medians over the rounds. Every run's six means must agree with tracejudge's to 3
decimals, else no ratio is printed (the means are). A step that fails leaves the table of what was measured,
then the error; every process started is stopped.

    python benchmarks/whole_floor.py [--n 10000] [--repeats 5] [--multivon] [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import pipeline_throughput as pt  # noqa: E402
from _procs import guarded, precompile  # noqa: E402
from _six_checks import CHECKS  # noqa: E402

PYDANTIC, MULTIVON = "pydantic-evals Dataset.evaluate", "multivon EvalSuite.run"
REFERENCE = "tracejudge processes 1"  # the means every other run must agree with
OUTPUTS = "floor+guarantees+reasons+outputs"


class State:
    """Everything measured so far (tool → runs, in the order measured), so that a failed step still leaves a table."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.runs: dict[str, list[pt.Run]] = {}
        self.disagree: list[str] = []
        self.notes: list[str] = []
        self.load_start = _load()


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def floor(n: int, cases: Path, work: Path, processes: int, level: str = "") -> pt.Run:
    """One whole-process run of `_floor_run.py` on `cases` with `processes` and `level` ("", "guarantees", "reasons" or
    "outputs", the last three its options, each implying the one before); its output folder is removed afterwards."""
    name = {"": "floor", "guarantees": "floor+guarantees", "reasons": "floor+guarantees+reasons", "outputs": OUTPUTS}[level]
    what = f"{name} run (processes {processes}, N={n:,})"
    out = work / f"floor-{processes}-{level}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, str(BENCH / "_floor_run.py"), str(cases), str(out), "--processes", str(processes)]
    if level == "outputs":  # its config file, written as `pipeline_throughput.ours` writes tracejudge's
        (config := work / f"floor-{processes}.yaml").write_text(pt.CONFIG.format(cases=cases, run_dir=out))
        cmd += ["--config", str(config)]
    got = pt.whole_process(cmd + ([f"--{level}"] if level else []), what)
    shutil.rmtree(out)
    if got["n"] != n:
        raise RuntimeError(f"the {what} wrote {got['n']} results for {n} cases")
    return got


def steps(st: State, cases: Path, work: Path, multivon: bool) -> dict[str, Any]:
    """The tools of one round, in the order they run: name → a function measuring one run."""
    n = st.n
    tools: dict[str, Any] = {
        "floor processes 1": lambda: floor(n, cases, work, 1),
        "floor processes 2": lambda: floor(n, cases, work, 2),
        "floor+guarantees processes 1": lambda: floor(n, cases, work, 1, "guarantees"),
        "floor+guarantees processes 2": lambda: floor(n, cases, work, 2, "guarantees"),
        "floor+guarantees+reasons processes 1": lambda: floor(n, cases, work, 1, "reasons"),
        "floor+guarantees+reasons processes 2": lambda: floor(n, cases, work, 2, "reasons"),
        f"{OUTPUTS} processes 1": lambda: floor(n, cases, work, 1, "outputs"),
        f"{OUTPUTS} processes 2": lambda: floor(n, cases, work, 2, "outputs"),
        "tracejudge processes 1": lambda: pt.ours(n, cases, work, "processes 1"),
        "tracejudge processes 2": lambda: pt.ours(n, cases, work, "processes 2"),
    }
    for peer in (PYDANTIC, MULTIVON) if multivon else (PYDANTIC,):
        if importlib.util.find_spec(pt.PEERS[peer][1]) is None:
            st.notes.append(f"{peer}: skipped, `{pt.PEERS[peer][1]}` is not installed (the `bench` extra)")
        else:
            tools[peer] = lambda peer=peer: pt.peer(peer, cases)
    return tools


def agree(st: State) -> None:
    """Compare every run's six means with tracejudge processes 1's first; raise when any differs beyond 3 decimals."""
    reference = st.runs[REFERENCE][0]["means"]
    for tool, runs in st.runs.items():
        for r in runs:
            off = [k for k in CHECKS if abs(r["means"][k] - reference[k]) > pt.AGREE]
            if off and not any(line.startswith(tool + ":") for line in st.disagree):
                st.disagree.append(f"{tool}: " + ", ".join(f"{k} {r['means'][k]:.6f} vs {reference[k]:.6f}" for k in off))
    if st.disagree:
        raise RuntimeError("the six means disagree: the runs did not do the same work, no ratio is printed")


def measure(st: State, args: argparse.Namespace, work: Path) -> None:
    """Write the dataset, then `args.repeats` interleaved rounds of every tool; each run stored as soon as measured."""
    cases = work / "cases.jsonl"
    pt.write_dataset(cases, st.n, pt.base_cases())
    tools = steps(st, cases, work, args.multivon)
    for r in range(args.repeats):
        for tool, step in tools.items():
            st.runs.setdefault(tool, []).append(step())
            got = st.runs[tool][-1]
            print(f"  #{r + 1} {tool}: {got['cpu']:.2f} CPU s, {got['wall']:.2f} wall s", file=sys.stderr)
        agree(st)  # after every round: a disagreement stops the run before more time goes into ratios it voids


def med(st: State, tool: str, key: str) -> float:
    """The median of `key` over `tool`'s runs."""
    return statistics.median(r[key] for r in st.runs[tool])


def report(st: State) -> None:
    """Print what `st` holds: each tool's medians, the six means, then the targets against the floor and tracejudge."""
    print(f"\nwhole process, {st.n:,} τ-bench cases, the six checks ({os.cpu_count()} cores; load average at start "
          f"{st.load_start}, at end {_load()})\n")
    if st.runs:
        print(f"| {'tool':<44} | runs | {'CPU s':>6} | {'wall s':>6} | {'own CPU s':>9} | {'workers CPU s':>13} | {'RSS MB':>6} | {'workers RSS MB':>14} |")
        print(f"|{'-' * 46}|------|{'-' * 8}|{'-' * 8}|{'-' * 11}|{'-' * 15}|{'-' * 8}|{'-' * 16}|")
        for tool, runs in st.runs.items():
            own = statistics.median(x["cpu"] - x["workers_cpu"] for x in runs)
            print(f"| {tool:<44} | {len(runs):>4} | {med(st, tool, 'cpu'):>6.2f} | {med(st, tool, 'wall'):>6.2f} | {own:>9.2f} | "
                  f"{med(st, tool, 'workers_cpu'):>13.2f} | {med(st, tool, 'rss'):>6.1f} | {med(st, tool, 'workers_rss'):>14.1f} |")
        print(f"\nthe six means (first run of each; they must agree to 3 decimals)\n\n| {'tool':<44} | "
              + " | ".join(f"{k:>16}" for k in CHECKS) + " |")
        print(f"|{'-' * 46}|" + "|".join("-" * 18 for _ in CHECKS) + "|")
        for tool, runs in st.runs.items():
            print(f"| {tool:<44} | " + " | ".join(f"{runs[0]['means'][k]:>16.6f}" for k in CHECKS) + " |")
    if st.disagree:
        print("\nTHE SIX MEANS DISAGREE, no ratio is printed (the runs did not do the same work):\n" + "\n".join(st.disagree))
    else:
        targets(st)
    for note in st.notes:
        print(f"note: {note}")


def targets(st: State) -> None:
    """The table of targets: seconds allowed (the peer's median over the ratio), the floor's, the floor's with the
    guarantees, with the guarantees and reasons, with every output too, and tracejudge's, CPU and wall; then a sentence
    for each."""
    rows = []
    for (peer, executor), ratio in sorted(pt.TARGETS.items(), key=lambda item: (item[0][1], item[1])):  # 6x p1, 10x p2, 25x p2
        tools = (peer, f"floor {executor}", f"floor+guarantees {executor}", f"floor+guarantees+reasons {executor}",
                 f"{OUTPUTS} {executor}", f"tracejudge {executor}")
        if all(st.runs.get(t) for t in tools):
            rows.append((f">={ratio:g}x {peer.split()[0]}, {executor}", ratio, tools))
    if not rows:
        return
    n_runs = min(len(st.runs[t]) for row in rows for t in row[2])
    print(f"\ntargets: seconds a target allows (the peer's median / the ratio), the floor's, the floor's with the run's "
          f"guarantees, with the guarantees and reasons, with every output too, and tracejudge's, medians of {n_runs} interleaved "
          "run(s)\n")
    cols = [f"{unit} {k}" for unit in ("CPU", "wall")
            for k in ("allowed s", "floor s", "floor+guarantees s", "floor+guarantees+reasons s", f"{OUTPUTS} s", "tracejudge s",
                      "tracejudge / floor")]
    print(f"| {'target':<34} | " + " | ".join(cols) + " |")
    print(f"|{'-' * 36}|" + "|".join("-" * (len(c) + 2) for c in cols) + "|")
    lines = []
    for label, ratio, (peer, fl, fg, fr, fo, tj) in rows:
        figures = []
        for key in ("cpu", "wall"):
            allowed, f, g, r, o, t = (med(st, peer, key) / ratio, *(med(st, x, key) for x in (fl, fg, fr, fo, tj)))
            figures += [allowed, f, g, r, o, t, t / f]
            floors = [f"{name} {x:.2f} s: "
                      + ("the target is below this floor" if x > allowed else f"under it ({allowed - x:.2f} s to spare)")
                      for name, x in (("floor", f), ("floor with guarantees", g), ("floor with guarantees and reasons", r),
                                      ("floor with guarantees, reasons and outputs", o))]
            tj_says = "meets it" if t <= allowed else f"misses it by {t - allowed:.2f} s"
            lines.append(f"{label}, {key}: allowed {allowed:.2f} s; {'; '.join(floors)}; tracejudge {t:.2f} s {tj_says}")
        print(f"| {label:<34} | " + " | ".join(f"{x:>{len(c)}.2f}" for x, c in zip(figures, cols)) + " |")
    print("\n" + "\n".join(lines))


def main() -> None:
    """Parse the command line, measure, print the tables (the partial ones if a step failed)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="cases (default 10,000)")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved rounds; the figures are medians")
    ap.add_argument("--multivon", action="store_true", help="also run multivon (about 33 s a run at 10,000 cases)")
    ap.add_argument("--keep", type=Path, help="work in this folder instead of a temporary one (kept afterwards)")
    args = ap.parse_args()
    if args.repeats < 1 or args.n < 2:
        ap.error("--repeats must be at least 1 and --n at least 2")
    st = State(args.n)
    precompile()
    work = args.keep or Path(tempfile.mkdtemp(prefix="tj-floor-"))
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
