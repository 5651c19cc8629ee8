"""CPU seconds of the run's end-of-pipeline steps at N cases: fold, bootstrap, reports, checkpoints.

Makes the 10,000-case τ-bench dataset the way `pipeline_throughput.py` does
(the 200 GPT-4o airline runs repeated under new ids, the same six checks),
runs it in this process with `run.processes: 1`, and sums the CPU time
(`time.process_time`) spent in each step by wrapping its function:

- fold: `Aggregator.fold` (every result into the summary's figures), and
  `Aggregator.settle` and `fold_finished` where they exist (values a fold batched, folded
  when read; a batch of results rendered where they were scored);
- bootstrap: `bootstrap_mean_ci` (every metric's and group's 95% interval);
- reports: `write_reports` and whatever the run does per result for them
  (`ReportFeed.feed` or `feed_finished`, when the run collects report material as it writes results);
- checkpoint: `RunJournal._write_checkpoint` (serializing the aggregate and writing it);

and counts checkpoint writes, `os.fsync` and `os.replace` calls. Wrapping
costs about a microsecond per call, the same before and after a change.

    python benchmarks/aggregate_steps.py [--n 10000] [--repeat 3]

Prints the median of `--repeat` runs per figure.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _procs import medians, sized_args, tau_cases  # noqa: E402
from pipeline_throughput import CONFIG  # noqa: E402


def _timed(owner: Any, name: str, into: dict[str, float], key: str, count: bool = True) -> Callable[[], None]:
    fn = getattr(owner, name)

    def wrapper(*a: Any, **kw: Any) -> Any:
        if into.get(key + " busy"):  # nested in another timed call of the same step: counted there
            return fn(*a, **kw)
        into[key + " busy"] = 1
        t0 = time.process_time()
        try:
            return fn(*a, **kw)
        finally:
            into[key] += time.process_time() - t0
            into[key + " calls"] += count
            into[key + " busy"] = 0

    setattr(owner, name, wrapper)
    return lambda: setattr(owner, name, fn)


def one_run(cases: Path, work: Path) -> dict[str, float]:
    """Run once in this process and return the step figures."""
    import anyio
    from tracejudge.core.config import load_config
    from tracejudge.engine import checkpoint, runner  # noqa: F401  (imported before wrapping)
    from tracejudge.stages import reports
    from tracejudge.stages.aggregate import fold, metric_stats, stats

    run_dir = work / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    cfg_path = work / "bench.yaml"
    cfg_path.write_text(CONFIG.format(cases=cases, run_dir=run_dir))
    cfg = load_config(cfg_path, ["run.processes=1"])
    got: dict[str, float] = {k: 0.0 for k in ("fold", "fold calls", "bootstrap", "bootstrap calls", "reports", "reports calls",
                                               "checkpoint", "checkpoint calls", "fsync calls", "replace calls")}
    undo = [
        _timed(fold.Aggregator, "fold", got, "fold"),
        _timed(metric_stats, "bootstrap_mean_ci", got, "bootstrap"),  # (the name the summary's figures call it by)
        _timed(getattr(reports, "finish", reports), "write_reports", got, "reports"),  # (where `finish_run` calls it)
        _timed(checkpoint.RunJournal, "_write_checkpoint", got, "checkpoint"),
    ]
    # A run whose results are rendered where they are scored folds and feeds them a batch at a time (`*_finished`).
    for name in ("settle", "fold_finished"):
        if hasattr(fold.Aggregator, name):
            undo.append(_timed(fold.Aggregator, name, got, "fold", count=False))
    feed = getattr(reports, "ReportFeed", None)
    for name in ("feed", "feed_finished") if feed is not None else ():
        if hasattr(feed, name):
            undo.append(_timed(feed, name, got, "reports", count=False))
    for name in ("fsync", "replace"):
        real = getattr(os, name)

        def counting(*a: Any, _real: Any = real, _key: str = f"{name} calls", **kw: Any) -> Any:
            got[_key] += 1
            return _real(*a, **kw)

        setattr(os, name, counting)
        undo.append(lambda _n=name, _r=real: setattr(os, _n, _r))
    t0 = time.process_time()
    try:
        out = anyio.run(runner.run, cfg)
    finally:
        for u in undo:
            u()
    got["whole run"] = time.process_time() - t0
    got["results"] = out.new_results
    return got


def main() -> None:
    args = sized_args(__doc__, "--repeat")
    runs = []
    with tau_cases(args.n, "tj-steps-") as (work, cases):
        for i in range(args.repeat):
            runs.append(one_run(cases, work))
            print(f"  run {i + 1}: {runs[-1]['whole run']:.2f} CPU-s", file=sys.stderr)
    med = medians(runs)
    print(f"| step (N={args.n:,}, processes 1, median of {args.repeat}) | CPU-s | calls |")
    print("|---|---:|---:|")
    for step in ("fold", "bootstrap", "reports", "checkpoint"):
        print(f"| {step} | {med[step]:.3f} | {med[step + ' calls']:.0f} |")
    for count in ("fsync calls", "replace calls"):
        print(f"| os.{count.split()[0]} | | {med[count]:.0f} |")
    print(f"| whole run | {med['whole run']:.2f} | |")


if __name__ == "__main__":
    main()
