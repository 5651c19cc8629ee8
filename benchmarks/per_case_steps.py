"""CPU seconds of each per-case step at N cases (default 10,000): read, decode + validate, each of the six checks,
scoring a case (the six under their time limit), the result line, the result as a run renders it (`render`: the
line's body and the JUnit test cases); then the whole process with 1 and 2 processes.

The cases are `pipeline_throughput.py`'s (the 200 real GPT-4o τ-bench airline runs repeated under new ids,
native JSONL) and so are the six checks. Each step runs alone over all N cases in this process, `rounds`
times; the figure is the best round (least disturbed by other load), in CPU seconds (`time.process_time`).
The whole-process rows run `tracejudge run` as a fresh process (`pipeline_throughput.whole_process`:
start to exit, imports and reports included, workers' CPU added).

    python benchmarks/per_case_steps.py [--n 10000] [--rounds 3] [--no-whole]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pipeline_throughput as pt  # noqa: E402


def each(fn: Callable[[Any], Any], items: list[Any]) -> Callable[[], None]:
    """`fn` over `items`, each output dropped at once, as a run drops a case once it is written
    (holding all N outputs would time the allocator and the collector instead)."""

    def go() -> None:
        for item in items:
            fn(item)

    return go


def best(fn: Callable[[], Any], rounds: int) -> float:
    """The least CPU seconds of `rounds` calls of `fn`.

    What is held in memory (the N cases the checks read; a run holds a few hundred) is frozen out
    of the cyclic collector, whose thresholds are the run's (`run_scope.fewer_collections`).
    """
    out = []
    gc.set_threshold(50_000, 20, 20)
    for _ in range(rounds):
        gc.collect()
        gc.freeze()
        t0 = time.process_time()
        fn()
        out.append(time.process_time() - t0)
        gc.unfreeze()
    return min(out)


def steps(cases_path: Path, run_dir: Path, rounds: int) -> dict[str, float]:
    """CPU seconds per step over every case of `cases_path`."""
    from tracejudge.core import registry
    from tracejudge.core.config import load_config
    from tracejudge.core.records import CaseResult
    from tracejudge.engine.rendered import render
    from tracejudge.stages.extract import extract_record
    from tracejudge.stages.load import read_jsonl
    from tracejudge.stages.score import score_case

    cfg_path = run_dir.parent / "steps.yaml"
    cfg_path.write_text(pt.CONFIG.format(cases=cases_path, run_dir=run_dir))
    cfg = load_config(cfg_path)
    fmt = registry.format_for("native")
    ctx = fmt.prepare(cfg.dataset)
    metrics = [registry.build_metric(spec) for spec in cfg.metrics]
    raws = list(read_jsonl(cases_path))
    cases = [extract_record(r, fmt, ctx) for r in raws]
    scores = [score_case(c, metrics) for c in cases]
    out = {
        "read lines": best(lambda: deque(read_jsonl(cases_path), maxlen=0), rounds),
        "decode + validate": best(each(lambda r: extract_record(r, fmt, ctx), raws), rounds),
    }
    for m in metrics:
        out[f"  {m.key}"] = best(each(m.evaluate, cases), rounds)
    out["six checks, time-limited"] = best(each(lambda c: score_case(c, metrics), cases), rounds)
    results = [CaseResult(case_id=c.id, tags=c.tags, metadata=c.metadata, scores=s) for c, s in zip(cases, scores)]
    out["result line (JSON)"] = best(each(lambda r: r.model_dump_json(), results), rounds)
    # What a worker does with a scored case when nothing runs after scoring: its line's body, JUnit, cells.
    keys = [m.key for m in metrics]
    out["result rendered (line, JUnit)"] = best(each(lambda cs: render(cs[0], cs[1], keys), list(zip(cases, scores))), rounds)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-whole", action="store_true", help="skip the whole-process rows")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tj-steps-"))
    try:
        cases = work / "cases.jsonl"
        pt.write_dataset(cases, args.n, pt.base_cases())
        rows = steps(cases, work / "run", args.rounds)
        if not args.no_whole:
            for name in ("processes 1", "processes 2"):
                rows[f"whole process, {name}"] = pt.ours(args.n, cases, work, name)["cpu"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nper-case steps at {args.n:,} cases (CPU seconds, best of {args.rounds})\n")
    print(f"| {'step':<34} | {'CPU s':>7} | {'µs/case':>8} |")
    print(f"|{'-' * 36}|{'-' * 9}|{'-' * 10}|")
    for name, s in rows.items():
        print(f"| {name:<34} | {s:>7.3f} | {s / args.n * 1e6:>8.1f} |")


if __name__ == "__main__":
    main()
