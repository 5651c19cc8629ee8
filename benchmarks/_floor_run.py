"""The floor of the work of one deterministic tracejudge run: a minimal implementation of the same job.

    python benchmarks/_floor_run.py CASES.jsonl OUT_DIR [--processes 1|2] [--phases] [--guarantees] [--reasons]
        [--outputs [--config FILE]]

What the work `pipeline_throughput.py` times costs at the least in Python on this machine, each step done once,
plainly and fast, without tracejudge: read the native JSONL file as lines of bytes; decode and validate each with
msgspec `Struct`s mirroring the native record field by field (`fast_decode`'s: same types, unknown fields refused,
`gc=False`; a line refused gives an error line with `file:line` and msgspec's message naming the path, and the run
goes on); compute the six checks of `pipeline_throughput.CONFIG` on the structs by `_six_checks.py`'s rules (its
`is_write`, `pairs_count`, `f1`, `lcs_length`), each a value, a verdict (passed at 1.0) and a short reason to
recompute it from; write a result line per case to OUT_DIR/results.jsonl (msgspec's encoder, 3.6x faster than
`json.dumps` on these lines) through a buffered file fsynced once; fold each check (n, mean, sample std, pass
rate, 95% percentile bootstrap CI of the mean: 1,000 resamples drawn as tracejudge draws them, a numpy multinomial
over the distinct values, fixed seed) into OUT_DIR/summary.json. With `--processes 2` the head reads the lines and
sends chunks of 1,000 to 2 forked workers, each on a socket pair of its own (`_floor_wire.py`) (the lines as they are, by
scatter-gather writes); a worker decodes, checks and renders a chunk and sends back the lines and the values; the
head writes them in input order and folds. No cyclic collection walks a chunk's decoded cases (acyclic, alive till
the chunk is written): each level's `work` freezes them out of the collector once decoded.

Last stdout line: JSON `{"n", "means", "rss_kb", "workers_rss_kb", "workers_cpu"}` (`pipeline_throughput.whole_process`
reads it). `--phases` prints to stderr the CPU s of read / decode / checks / render / free (dropping a chunk's
structs) / write / fold, the middle ones summed over the workers when there are workers, and this process's CPU s in
cyclic garbage collections (within those phases).

Left out, against `tracejudge run` (a yardstick, not a replacement): config and metric registry (the checks are
hard-wired); what `--guarantees` adds (`_floor_guarantees.py`, the floor with the run's guarantees: the dataset
fingerprint and manifest, the resume cursor and repeated ids refused, checkpoints, junit.xml, result lines with tags,
metadata and `details`) and what it too leaves out (the cursor's and result index's files, report.md, report.html);
what `--reasons` adds besides (`_floor_reasons.py`: tracejudge's result lines byte for byte, its rich reasons, every
check's `details`, secret redaction of written text) and what that leaves out (pydantic's messages); what `--outputs`
adds besides (`_floor_outputs.py`: the config read and validated, and every other file a run writes: results.idx,
cursor.json and cursor.ids, the checkpoint's CRC-32s and segment, configs.jsonl and the manifest's config, tracejudge's
summary.json, junit.xml's gate suite and durations, report.md, report.html) and what that leaves out; per-metric error
isolation, time limits, statuses; breakdowns, pass@k, histograms, a bounded bootstrap sample (it keeps every value);
replacing a worker that dies; the fallback to pydantic for lines msgspec refuses but the records accept (JSON-string
arguments, ...) and the records' own checks (blank ids or tool names, user messages out of place).
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import json
import math
import os
import resource
import sys
import time
from array import array
from collections.abc import Iterator
from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct, field

from _floor_wire import forked
from _six_checks import CHECKS, CONTAINS, MAX_CALLS, MAX_REQUESTS, f1, is_write, lcs_length, pairs_count

CHUNK = 1000  # lines per chunk: a worker's per-chunk overhead stays small, the head's memory bounded
RESAMPLES, LEVEL, SEED = 1000, 0.95, 0
PHASES = ("read", "decode", "checks", "render", "free", "write", "fold")


# The native record, field for field as `fast_decode`'s structs (and so `tracejudge.core.records`).
class _ToolCall(Struct, forbid_unknown_fields=True, kw_only=True, gc=False):
    id: str | None = None
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    arguments_invalid: bool = False
    arguments_missing: bool = False
    result: Any = None
    error: str | None = None


class _Step(Struct, forbid_unknown_fields=True, gc=False):
    thought: str | None = None
    tool_calls: list[_ToolCall] = field(default_factory=list)
    output: str | None = None
    error: str | None = None


class _Usage(Struct, forbid_unknown_fields=True, gc=False):
    input_tokens: Annotated[int, Meta(ge=0)] | None = None
    output_tokens: Annotated[int, Meta(ge=0)] | None = None
    requests: Annotated[int, Meta(ge=0)] | None = None
    cost_usd: Annotated[float, Meta(ge=0)] | None = None
    latency_s: float | None = None


class _Passage(Struct, forbid_unknown_fields=True, gc=False):
    id: str | None = None
    content: str = ""
    score: float | None = None
    source: str | None = None


class _UserMessage(Struct, forbid_unknown_fields=True, gc=False):
    step: Annotated[int, Meta(ge=0)]
    content: Any


class _Trace(Struct, forbid_unknown_fields=True, gc=False):
    steps: list[_Step] = field(default_factory=list)
    user_messages: list[_UserMessage] = field(default_factory=list)
    output: str | None = None
    usage: _Usage | None = None
    retrieved: list[_Passage] = field(default_factory=list)


class _Expected(Struct, forbid_unknown_fields=True, gc=False):
    name: str
    arguments: dict[str, Any] | None = None
    result: Any = None


class _Case(Struct, forbid_unknown_fields=True, gc=False):
    id: str
    input: Any = None
    expected_output: Any = None
    expected_tool_calls: list[_Expected] | None = None
    expected_passages: list[str] | None = None
    context: Any = None
    turns: list[Any] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    trace: _Trace | None = None


_decode = msgspec.json.Decoder(_Case).decode
_encode = msgspec.json.Encoder().encode


def _same_call(e: _Expected, c: _ToolCall) -> bool:
    # `writes_exact` pairs an expected call with a made one of the same name and equal arguments (unless none expected).
    return e.name == c.name and (e.arguments is None or e.arguments == c.arguments)


def check(case: _Case) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """The six checks' values and reasons for one decoded case with a trace (rules of `_six_checks.py`)."""
    t: Any = case.trace  # (never None: `work` gives a case without a trace an error line instead)
    calls = [c for s in t.steps for c in s.tool_calls]
    ok = [c for c in calls if c.error is None]  # failed calls count only for MaxToolCalls
    expected = case.expected_tool_calls or ()
    exp_w = [e for e in expected if is_write(e.name)]
    act_w = [c for c in ok if is_write(c.name)]
    if exp_w:
        # One expected write call (most cases) pairs iff any made one matches it: no matching to search.
        k = (1 if any(_same_call(exp_w[0], c) for c in act_w) else 0) if len(exp_w) == 1 else pairs_count(exp_w, act_w, _same_call)
        writes = f1(k, len(exp_w), len(act_w))
        r_writes = f"{k} of {len(exp_w)} expected write calls paired; {len(act_w) - k} unexpected"
    else:
        writes = 0.0 if act_w else 1.0
        r_writes = f"no write call expected, {len(act_w)} made"
    names = [c.name for c in ok]
    exp_names = [e.name for e in expected]
    if names or exp_names:
        # A name never expected cannot be in the LCS: dropping those first leaves a table of a few cells.
        wanted = set(exp_names)
        kept = [n for n in names if n in wanted]
        k = lcs_length(kept, exp_names) if kept else 0
        traj = f1(k, len(exp_names), len(names))
    else:
        k, traj = 0, 1.0
    r_traj = f"LCS {k} of {len(exp_names)} expected, {len(names)} made"
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    missing = []
    for n in exp_names:
        if counts.get(n, 0) > 0:
            counts[n] -= 1
        else:
            missing.append(n)
    correct = 0.0 if missing else 1.0
    r_correct = f"missing: {', '.join(missing)}" if missing else f"all {len(exp_names)} expected calls made"
    within = 1.0 if len(calls) <= MAX_CALLS else 0.0
    r_within = f"{len(calls)} calls {'<=' if within else '>'} {MAX_CALLS}"
    u = t.usage
    req = len(t.steps) if u is None or u.requests is None else u.requests
    req_ok = 1.0 if req <= MAX_REQUESTS else 0.0
    r_req = f"{req} requests {'<=' if req_ok else '>'} {MAX_REQUESTS}"
    has = 1.0 if CONTAINS in (t.output or "").lower() else 0.0
    r_has = f"output {'contains' if has else 'lacks'} '{CONTAINS}'"
    return (writes, traj, correct, within, req_ok, has), (r_writes, r_traj, r_correct, r_within, r_req, r_has)


def work(task: tuple[str, int, list[Any]]) -> tuple[bytes, bytes, int, list[float]]:
    """One chunk `(file name, first line's number, lines)` → `(rendered result lines, the scored cases' six values one
    case after another as float64 bytes, errors, CPU s of decode / checks / render / free)`. A line that does not decode, or a case
    without a trace, gives an error line."""
    name, first, lines = task
    clock = time.thread_time
    t0 = clock()
    decoded: list[Any] = []
    for i, line in enumerate(lines, first):
        try:
            case = _decode(line)
        except msgspec.DecodeError as exc:  # (ValidationError is a DecodeError)
            decoded.append((None, f"{name}:{i}: {exc}"))
            continue
        decoded.append((case.id, f"{name}:{i}: the case has no trace") if case.trace is None else case)
    gc.freeze()  # the chunk's cases: alive till it is written, acyclic; no collection need walk them
    t1 = clock()
    checked = [c if type(c) is tuple else (c.id, *check(c)) for c in decoded]
    t2 = clock()
    out, values, errors = [], array("d"), 0
    for row in checked:
        if len(row) == 2:
            out.append(_encode({"case_id": row[0], "trial": 0, "status": "error", "error": row[1]}))
            errors += 1
            continue
        cid, vals, reasons = row
        values.extend(vals)
        out.append(_encode({"case_id": cid, "trial": 0, "scores": {
            k: {"value": v, "passed": v >= 1.0, "reason": r} for k, v, r in zip(CHECKS, vals, reasons)}}))
    out.append(b"")
    blob = b"\n".join(out)
    t3 = clock()
    # Dropping the chunk's structs (the calls' results are nested JSON) costs about as much as the checks: timed apart.
    del decoded, checked  # (`case` and `row` keep one case alive: not worth a line)
    return blob, values.tobytes(), errors, [t1 - t0, t2 - t1, t3 - t2, clock() - t3]


def chunks(path: str, size: int, took: list[float]) -> Iterator[tuple[str, int, list[bytes]]]:
    """`(file name, first line's number, lines)` of up to `size` non-blank lines of `path`; adds the reading CPU to `took[0]`."""
    name = os.path.basename(path)
    with open(path, "rb", buffering=1 << 20) as fh:
        numbered = enumerate(fh, 1)
        while True:
            t0 = time.thread_time()
            if not (batch := list(itertools.islice(numbered, size))):
                return
            # Blank lines are skipped. A chunk's lines are numbered from its first, so a batch holding a blank line is
            # split there, lest the numbers after it shift.
            tasks, run = [], []  # type: ignore[var-annotated]
            for i, line in batch:
                if line.strip():
                    if not run:
                        tasks.append((name, i, run))
                    run.append(line)
                else:
                    run = []
            took[0] += time.thread_time() - t0
            yield from tasks


def fold(values: array, errors: int) -> dict[str, Any]:
    """The summary: per check the mean, sample std, 95% bootstrap CI of the mean, pass rate (`values`: six per case)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as tracejudge imports numpy: no BLAS thread pool to start
    import numpy as np  # imported here: the workers never need it

    metrics: dict[str, Any] = {}
    table = np.frombuffer(values, dtype=np.float64).reshape(-1, len(CHECKS))
    for j, key in enumerate(CHECKS):
        col = table[:, j]
        if np.isnan(col).any():  # values not computed (`--reasons`: a case without expected calls) are left out, as
            # tracejudge leaves them out (an error line counts in neither: it is no `ok` result)
            col = col[~np.isnan(col)]
        m = len(col)
        block: dict[str, Any] = {"mean": None, "std": None, "ci": None, "pass_rate": None, "not_computed": len(table) - m}
        if m:
            block["mean"] = math.fsum(col.tolist()) / m
            block["pass_rate"] = int((col >= 1.0).sum()) / m
        if m >= 2:
            block["std"] = float(col.std(ddof=1))
            # A resample's mean depends only on how often each distinct value was drawn: those counts are multinomial.
            distinct, counts = np.unique(col, return_counts=True)
            means = np.random.default_rng([SEED, j]).multinomial(m, counts / m, size=RESAMPLES) @ distinct / m
            block["ci"] = np.quantile(means, [(1 - LEVEL) / 2, (1 + LEVEL) / 2]).tolist()
        metrics[key] = block
    return {"results": len(table) + errors, "metrics": metrics}


def run(cases: str, out_dir: str, processes: int) -> tuple[dict[str, Any], dict[str, float]]:
    """Score `cases` into `out_dir` (results.jsonl, summary.json); returns the summary and the CPU s per phase."""
    os.makedirs(out_dir, exist_ok=True)
    took, read, values, errors = dict.fromkeys(PHASES, 0.0), [0.0], array("d"), 0
    tasks = chunks(cases, CHUNK, read)
    done = forked(tasks, processes, os.path.basename(cases), work) if processes > 1 else map(work, tasks)
    with open(os.path.join(out_dir, "results.jsonl"), "wb", buffering=1 << 20) as fh:
        for blob, vals, errs, spent in done:
            t0 = time.thread_time()
            fh.write(blob)
            took["write"] += time.thread_time() - t0
            values.frombytes(vals)
            errors += errs
            for phase, s in zip(("decode", "checks", "render", "free"), spent):
                took[phase] += s
        t0 = time.thread_time()
        fh.flush()
        os.fsync(fh.fileno())
        took["write"] += time.thread_time() - t0
    took["read"] = read[0]
    t0 = time.process_time()  # (one thread left: the feeder has ended)
    summary = fold(values, errors)
    with open(os.path.join(out_dir, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    took["fold"] = time.process_time() - t0
    return summary, took


def main() -> None:
    """Parse the command line, run, print the last line (and the phases with `--phases`)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases")
    ap.add_argument("out_dir")
    ap.add_argument("--processes", type=int, choices=(1, 2), default=1)
    ap.add_argument("--phases", action="store_true", help="print the CPU seconds of each phase to stderr")
    ap.add_argument("--guarantees", action="store_true", help="keep the run's guarantees too (`_floor_guarantees.py`)")
    ap.add_argument("--reasons", action="store_true",
                    help="and write tracejudge's result lines, reasons, details and redaction included (`_floor_reasons.py`)")
    ap.add_argument("--outputs", action="store_true",
                    help="and every other file a run writes, its YAML config read and validated (`_floor_outputs.py`)")
    ap.add_argument("--config", help="with --outputs: the run's YAML config (default: pipeline_throughput.CONFIG for CASES and OUT_DIR)")
    args = ap.parse_args()
    level = run
    if args.guarantees or args.reasons or args.outputs:  # (they import `_floor_run`: this module, under that name, not a second copy)
        sys.modules["_floor_run"] = sys.modules[__name__]
        import _floor_guarantees
        level = _floor_guarantees.run
        if args.reasons:
            import _floor_reasons
            level = _floor_reasons.run
        if args.outputs:
            import _floor_outputs
            level = functools.partial(_floor_outputs.run, config=args.config)
    # The structs are untracked and nothing here makes cycles: a collection would only walk the lists and dicts of
    # the chunk at hand. Freeze what the imports made (and each chunk's cases as they are decoded) and collect rarely.
    gc.freeze()
    gc.set_threshold(100_000, 50, 50)
    collecting = [0.0, 0.0]  # with `--phases`: CPU s of this process's collections (within the phases they fell in)

    def timed(phase: str, _: Any) -> None:
        if phase == "start":
            collecting[0] = time.thread_time()
        else:
            collecting[1] += time.thread_time() - collecting[0]

    if args.phases:
        gc.callbacks.append(timed)
    summary, took = level(args.cases, args.out_dir, args.processes)
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    if args.phases:
        print(f"CPU s per phase ({'decode to free in the workers' if args.processes > 1 else 'one process'}): "
              + ", ".join(f"{k} {v:.3f}" for k, v in took.items())
              + f"; this process {me.ru_utime + me.ru_stime:.3f} (of which cyclic GC {collecting[1]:.3f}), "
              f"workers {kids.ru_utime + kids.ru_stime:.3f}", file=sys.stderr)
    print(json.dumps({"n": summary["results"], "means": {k: m["mean"] for k, m in summary["metrics"].items()},
                      "rss_kb": me.ru_maxrss, "workers_rss_kb": kids.ru_maxrss, "workers_cpu": kids.ru_utime + kids.ru_stime}), flush=True)


if __name__ == "__main__":
    main()
