"""Resume start-up at scale: time to the first new case, and peak memory.

For each size N (10,000 / 100,000 / 200,000 finished results, plus a
baseline of none), a run directory holds N finished results of a dataset of
N + 10 native cases; the 10 unfinished ones are the last lines of the
dataset, so the resume has to get past all N finished cases before its
first new one (the worst case). Each size is measured in fresh processes:

1. setup: write the dataset and N results (scored by the real metrics), then
   let the checkpoint code build `results.idx` and `checkpoint.json`, and the
   cursor code `cursor.json` and `cursor.ids` (`tracejudge.engine.cursor`),
   as a killed run would have left them;
2. resume: `runner.run` on that directory, timing from process start (imports
   included) and from the `run()` call to the first new case started (the
   first case the judge or score stage takes; with no such stage, the first
   new result) and to the end; and where the time to it goes: imports, the
   run directory's state read (`RunJournal.open`: checkpoint, its checks
   against results.jsonl, results.idx into the done-key set) and the dataset
   read past the finished cases; peak RSS from `getrusage`;
3. the old path, side by side: what resuming cost before the index —
   parse and fold every result line into a `CaseResult` and a set of
   `(case_id, trial)` tuples, then adapt every dataset line (full `Case`
   validation) until the first unfinished one, keeping first places in a
   dict of strings (time to that case and peak RSS).

The project's bytecode is written first (`_procs.precompile`), so no measured
process compiles sources (an environment with PYTHONDONTWRITEBYTECODE would).

Usage: python benchmarks/resume_startup.py [--sizes 10000,100000,200000] [--keep DIR]
Prints a table (markdown).
"""

from __future__ import annotations

import time

_T_START = time.perf_counter()

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

MISSING = 10
CONFIG = """\
dataset: {path: cases.jsonl, format: native}
metrics:
  - {type: ToolCalls, arguments: subset}
  - {type: TrajectoryMatch, order: in_order}
run: {dir: run}
"""


def _peak_rss_mb() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def _case(i: int) -> dict:
    tools = ["get_user", "search_flights", "book", "cancel", "refund"]
    calls = [{"name": tools[(i + k) % 5], "arguments": {"id": f"u{i % 97}", "n": k}} for k in range(3)]
    return {
        "id": f"case-{i:07d}",
        "input": f"request {i}",
        "expected_tool_calls": [{"name": c["name"], "arguments": c["arguments"]} for c in calls[: 2 + i % 2]],
        "trace": {"steps": [{"tool_calls": calls}], "output": "done"},
    }


def setup(root: Path, n: int) -> None:
    """Write dataset, config and a run directory with `n` of `n + MISSING` cases finished."""
    from tracejudge.core import registry
    from tracejudge.core.config import load_config
    from tracejudge.core.records import Case, CaseResult
    from tracejudge.engine import cursor, store
    from tracejudge.engine.checkpoint import RunJournal
    from tracejudge.engine.manifest import manifest_for
    from tracejudge.stages.aggregate.fold import Aggregator
    from tracejudge.stages.score import score_case

    (root / "config.yaml").write_text(CONFIG)
    with open(root / "cases.jsonl", "w") as fh:
        for i in range(n + MISSING):
            fh.write(json.dumps(_case(i)) + "\n")
    config = load_config(root / "config.yaml")
    metrics = [registry.build_metric(s) for s in config.metrics]
    run_dir = root / "run"
    run_dir.mkdir()
    store.atomic_write_text(run_dir / store.MANIFEST, json.dumps(manifest_for(config), indent=2) + "\n")
    with open(run_dir / store.RESULTS, "w") as out:
        for i in range(n):
            case = Case.model_validate(_case(i))
            r = CaseResult(case_id=case.id, scores=score_case(case, metrics), duration_s=0.0001)
            out.write(r.model_dump_json() + "\n")
    keys = [m.key for m in metrics]
    # No index or checkpoint yet: opening rebuilds both from results.jsonl, as after a crash.
    j = RunJournal.open(run_dir, metric_keys=keys, new_aggregator=lambda: Aggregator(keys), config_hash="setup")
    # The cursor a run leaves at its checkpoints: the tracker notes each record read and moves past the finished ones.
    fmt = registry.format_for(config.dataset.format)
    resume = cursor.prepare(run_dir, config, fmt, j.recovery, j.done)
    assert resume is not None
    for raw in itertools.islice(resume.records, n):
        resume.tracker.read(raw, fmt.peek_id(raw.payload) if raw.error is None else None)
        resume.seen.claim(str(json.loads(raw.payload)["id"]), raw.file, raw.line)
        if raw.line % 50_000 == 0:  # as a run's checkpoints do, every so many results
            resume.save(j.done, j.provisional)
    resume.save(j.done, j.provisional)
    j.close("killed")


def measure(root: Path) -> dict:
    """Resume the run in `root`; report timings (seconds) and peak RSS (MiB)."""
    import anyio
    from tracejudge.core.config import load_config
    from tracejudge.engine import runner

    from tracejudge.engine.checkpoint import RunJournal

    t_imported, cpu_imported = time.perf_counter(), time.process_time()
    config = load_config(root / "config.yaml")
    first: list[float] = []
    journal: dict[str, float] = {}
    opened = RunJournal.open.__func__  # type: ignore[attr-defined]

    def timed_open(cls: type, *args: object, **kwargs: object) -> object:
        journal["start"] = time.perf_counter()
        try:
            return opened(cls, *args, **kwargs)
        finally:
            journal["end"] = time.perf_counter()

    RunJournal.open = classmethod(timed_open)  # type: ignore[method-assign,assignment]
    started = runner._Flow.worker  # noqa: SLF001 - the first case a stage takes is the first new case started

    async def first_worker(self: object, stage: object, recv: object, send: object, single: bool) -> None:
        async def seen() -> object:
            async for works in recv:  # type: ignore[attr-defined]
                if not first:
                    first.extend((time.perf_counter(), time.process_time()))
                yield works

        class Recv:
            def __init__(self) -> None:
                self.it = seen()

            def __aiter__(self) -> object:
                return self.it

            async def __aenter__(self) -> object:
                await recv.__aenter__()  # type: ignore[attr-defined]
                return self

            async def __aexit__(self, *exc: object) -> object:
                return await recv.__aexit__(*exc)  # type: ignore[attr-defined]

        await started(self, stage, Recv(), send, single)  # type: ignore[arg-type]

    runner._Flow.worker = first_worker  # type: ignore[method-assign]

    def on_result(_: object) -> None:
        if not first:  # no stage after the executor: the first new result is the first new case
            first.extend((time.perf_counter(), time.process_time()))

    t_call = time.perf_counter()
    outcome = anyio.run(lambda: runner.run(config, on_result=on_result))
    t_end = time.perf_counter()
    return {
        "new": outcome.new_results,
        "skipped": outcome.skipped_finished,
        "imports_s": t_imported - _T_START,
        # CPU seconds of this process from its start (the interpreter's own start-up included): what the machine's
        # load disturbs far less than wall time.
        "imports_cpu_s": cpu_imported,
        "first_cpu_s": first[1] if first else None,
        "journal_s": journal["end"] - journal["start"],
        "before_dataset_s": journal["end"] - _T_START,
        "first_from_start_s": first[0] - _T_START if first else None,
        "first_from_call_s": first[0] - t_call if first else None,
        "total_s": t_end - _T_START,
        "peak_rss_mb": _peak_rss_mb(),
    }


def full_parse(root: Path) -> dict:
    """The pre-index resume path, without its async hops: parse and fold every result into a
    set of `(case_id, trial)` tuples, then adapt every dataset line and look it up, keeping
    each id's first place in a dict of strings."""
    from tracejudge.core import registry
    from tracejudge.core.config import load_config
    from tracejudge.core.records import Case, CaseResult
    from tracejudge.stages.aggregate.fold import Aggregator
    from tracejudge.stages.extract import extract_record

    config = load_config(root / "config.yaml")
    fmt = registry.format_for(config.dataset.format)
    agg = Aggregator([registry.build_metric(s).key for s in config.metrics])
    t0 = time.perf_counter()
    done: set[tuple[str, int]] = set()
    with open(root / "run" / "results.jsonl", "rb") as fh:
        for line in fh:
            r = CaseResult.model_validate_json(line)
            done.add((r.case_id, r.trial))
            agg.fold(r)
    seen: dict[str, str] = {}
    first = None
    for raw in fmt.read(config.dataset):
        case = extract_record(raw, fmt, None)
        assert isinstance(case, Case)
        seen.setdefault(case.id, f"{raw.file}:{raw.line}")
        if (case.id, 0) not in done:
            first = time.perf_counter() - t0
            break
    return {"first_s": first, "keys": len(done), "peak_rss_mb": _peak_rss_mb()}


def _child(mode: str, root: Path, n: int = 0) -> dict:
    from _procs import timed  # here, not at the top: the measured child's import time stays what it was

    cmd = [sys.executable, __file__, f"--{mode}", str(root), "--n", str(n)]
    done = timed(cmd).check(f"{mode} for {root}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="0,10000,100000,200000")
    p.add_argument("--keep", type=Path, help="keep the generated run directories under this folder")
    p.add_argument("--setup", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--full-parse", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.setup:
        setup(args.setup, args.n)
        print(json.dumps({"ok": True}))
        return
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    if args.full_parse:
        print(json.dumps(full_parse(args.full_parse)))
        return

    from _procs import guarded, precompile

    precompile()  # no measured child compiles the project's sources
    base = args.keep or Path(tempfile.mkdtemp(prefix="tj-resume-bench-"))
    rows: list[tuple] = []

    def measure_all() -> None:
        try:
            for n in [int(x) for x in args.sizes.split(",")]:
                root = base / f"n{n}"
                if root.exists():
                    shutil.rmtree(root)
                root.mkdir(parents=True)
                t = time.perf_counter()
                _child("setup", root, n)
                setup_s = time.perf_counter() - t
                old = _child("full-parse", root)  # reads only: the run is still unfinished after it
                res = _child("measure", root)
                if res["new"] != MISSING or res["skipped"] != n:
                    raise RuntimeError(f"the resume of {n:,} finished results did not do what it should: {res}")
                size_mb = os.path.getsize(root / "run" / "results.jsonl") / 1e6
                rows.append((n, size_mb, res, old, setup_s))
                print(f"  n={n}: setup {setup_s:.1f}s, resume {res['total_s']:.2f}s", file=sys.stderr, flush=True)
                if not args.keep:
                    shutil.rmtree(root)
        finally:
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)

    guarded(measure_all, lambda: report(rows))


def report(rows: list[tuple]) -> None:
    """The table of the sizes measured so far."""
    print(f"\nResume start-up, {MISSING} unfinished cases at the end of the dataset (python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f})\n")
    print("| finished results | results.jsonl | first new case started at (from process start) | CPU-s to it (imports) | imports | config and set-up | run-directory state read "
          "| dataset read past the finished cases | from run() call | whole resume | peak RSS | old path: first new case | old path: peak RSS |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, size_mb, res, old, _ in rows:
        past = res["first_from_start_s"] - res["before_dataset_s"]
        setup_s = res["before_dataset_s"] - res["imports_s"] - res["journal_s"]
        print(
            f"| {n:,} | {size_mb:.1f} MB | {res['first_from_start_s']:.2f} s | {res['first_cpu_s']:.2f} s ({res['imports_cpu_s']:.2f} s) | {res['imports_s']:.2f} s | {setup_s:.2f} s | {res['journal_s']:.2f} s | {past:.2f} s "
            f"| {res['first_from_call_s']:.2f} s | {res['total_s']:.2f} s | {res['peak_rss_mb']:.1f} MiB | {old['first_s']:.2f} s | {old['peak_rss_mb']:.1f} MiB |"
        )
    if not rows:
        return
    print("\nCPU-s to it = CPU seconds of the resuming process from its start to the first new case (imports: to the end of its imports); "
          "the other times are wall seconds. First new case started at = when the first stage after extract (score or judge) took its first case, timed from process start "
          "(imports included). Run-directory state read = `RunJournal.open` (checkpoint checks, results.idx into the done-key set). "
          "Config and set-up = loading the config, the manifest's checks (the dataset's fingerprint), the lock. "
          "Dataset read past the finished cases = from the end of the state read to the first new case (executor and stages set up, "
          "every finished record's id peeked and looked up). "
          "Old path = parse and fold every result line, then adapt every case until the first unfinished one "
          "(in-process, no pipeline; its time is from after imports and config).")


if __name__ == "__main__":
    main()
