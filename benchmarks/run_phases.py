"""Where the CPU of one whole deterministic run goes, phase by phase: what is left outside the struct path.

One fresh process runs `tracejudge.engine.runner.run` (as `pipeline_throughput.py` does) on N of its
τ-bench cases with its six checks and `run.processes: 1` (in-process executor). Inside it, the
functions that make each phase are wrapped with a timer of the calling thread's CPU time
(`time.thread_time`), counted exclusively: a phase called from inside another is taken out of the
outer one. What no wrapper covers is "other": the event loop and the pipeline's tasks, the
interpreter's exit, and the CPU of helper threads but the writer's and the dataset hash's (both timed). Start-up is the process's
CPU before its first line (interpreter and `site`); imports are those the run needs, made up front.
The wrappers add about a microsecond a call, so the struct path and other per-case rows read a little high.

    python benchmarks/run_phases.py [--n 10000] [--repeats 3]

Each figure is the median over the repeats; the load average is printed with the table.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from _procs import medians, precompile, sized_args, tau_cases  # noqa: E402

CHILD = r"""
import json, resource, sys, threading, time
t_start = time.process_time()
import anyio
from tracejudge.core.config import load_config
from tracejudge.core.lazy_numpy import single_blas_thread
from tracejudge.engine import runner
single_blas_thread()  # as `tracejudge run` does (`entrypoints.cli.main`)
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.engine.result_writer import ResultWriter
from tracejudge.engine.cursor import Tracker
from tracejudge.engine.admit import Admission
from tracejudge.stages.aggregate.fold import Aggregator
from tracejudge.stages.aggregate import metric_stats
from tracejudge.stages.reports import finish as reports_finish
from tracejudge.stages.reports import ReportFeed
from tracejudge.stages.extract import struct_score
t_imports = time.process_time()

spent, calls, local = {}, {}, threading.local()


def timed(label, fn):
    # Exclusive thread CPU: time spent in a timed callee is charged to the callee only.
    def wrapper(*a, **k):
        stack = local.__dict__.setdefault("stack", [])
        now = time.thread_time()
        if stack:
            outer = stack[-1]
            spent[outer[0]] = spent.get(outer[0], 0.0) + now - outer[1]
        stack.append([label, now])
        try:
            return fn(*a, **k)
        finally:
            end = time.thread_time()
            spent[label] = spent.get(label, 0.0) + end - stack.pop()[1]
            calls[label] = calls.get(label, 0) + 1
            if stack:
                stack[-1][1] = end
    return wrapper


def patch(owner, name, label):
    setattr(owner, name, timed(label, getattr(owner, name)))


def scorer(*a, **k):
    return timed("struct path (decode, six checks, render)", plain_scorer(*a, **k))


def aiter(items, stop=None):
    return plain_aiter(timed_iter(items), stop)


def timed_iter(items):
    it = iter(items)
    step = timed("read records (JSONL lines)", lambda: next(it, timed_iter))
    while (item := step()) is not timed_iter:
        yield item


plain_scorer, plain_aiter = struct_score.scorer, runner.read_ahead
# Every source is read through `read_ahead`'s worker thread, a fresh run's native file and a resume's records alike.
struct_score.scorer, runner.read_ahead = scorer, aiter
from tracejudge.engine import fingerprint_ahead
patch(fingerprint_ahead.FingerprintAhead, "_hash", "dataset fingerprint (its thread: SHA-256 of the file)")
patch(runner, "manifest_for", "manifest (dataset fingerprint)")
patch(Admission, "works", "admission")
patch(Admission, "works_all", "admission")
from tracejudge.stages.reports.junit import JunitWriter
patch(Tracker, "read", "resume cursor: each line read (CRC-32, id)")
patch(JunitWriter, "feed_finished_many", "junit.xml while running")
patch(RunJournal, "record_finished", "journal: result lines and keys")
patch(Aggregator, "fold_finished", "fold (aggregate)")
patch(ReportFeed, "feed_finished", "reports: collect while running")
patch(RunJournal, "_write_checkpoint", "checkpoints (aggregate state)")
patch(Tracker, "save", "checkpoints: resume cursor")
patch(ResultWriter, "_write_group", "writer thread: write + fsync")
patch(runner, "_build_summary", "summary (bootstrap CIs)")
from tracejudge.stages.aggregate import stats
patch(stats, "numpy", "numpy import")
patch(reports_finish, "write_reports", "reports at the end")  # (where `finish_run` calls it)
cfg = load_config(sys.argv[1], sys.argv[2:])
t_config = time.process_time()
out = anyio.run(runner.run, cfg)
total = time.process_time()
spent["start-up (interpreter, site)"] = t_start
spent["imports"] = t_imports - t_start
spent["config"] = t_config - t_imports
print(json.dumps({"n": out.new_results, "total": total, "spent": spent, "calls": calls}))
"""


def measure(n: int, work: Path, cases: Path) -> dict:
    """One child run of `n` cases; its JSON line."""
    import pipeline_throughput as pt

    run_dir = work / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    cfg = work / "run.yaml"
    cfg.write_text(pt.CONFIG.format(cases=cases, run_dir=run_dir))
    done = subprocess.run([sys.executable, "-c", CHILD, str(cfg), "run.processes=1"], capture_output=True, text=True, cwd=BENCH.parent, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"run failed: {done.stderr.strip().splitlines()[-1:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if got["n"] != n:
        raise RuntimeError(f"the run finished {got['n']} of {n} cases")
    return got


def main() -> None:
    args = sized_args(__doc__)
    precompile()
    runs: list[dict] = []
    load = os.getloadavg()
    try:
        with tau_cases(args.n, "tj-phases-") as (work, cases):
            for _ in range(args.repeats):
                runs.append(measure(args.n, work, cases))
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        print(f"\nfailed: {exc}", file=sys.stderr)
    if not runs:
        raise SystemExit(1)
    med = medians([r["spent"] for r in runs])
    total = statistics.median(r["total"] for r in runs)
    med["other (event loop, tasks, exit, helper threads)"] = total - sum(med.values())
    print(f"\nCPU of one `tracejudge run` (processes 1), {args.n:,} τ-bench cases, six checks; median of {len(runs)} "
          f"(load average at start {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f})\n")
    print(f"| {'phase':<48} | {'CPU s':>6} | {'share':>6} | {'µs/case':>8} |")
    print(f"|{'-' * 50}|{'-' * 8}|{'-' * 8}|{'-' * 10}|")
    for k, v in sorted(med.items(), key=lambda kv: -kv[1]):
        print(f"| {k:<48} | {v:6.3f} | {v / total:6.1%} | {v / args.n * 1e6:8.1f} |")
    print(f"| {'whole process':<48} | {total:6.3f} | {1:6.1%} | {total / args.n * 1e6:8.1f} |")


if __name__ == "__main__":
    main()
