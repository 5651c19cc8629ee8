"""Instructions per case of each step of the struct path, counted by callgrind: unlike CPU seconds, other load does not move them.

The cases are `pipeline_throughput.py`'s 200 real GPT-4o τ-bench airline runs (native JSONL) and so are
the six checks. Each step runs in a fresh `python` under `valgrind --tool=callgrind`, with instrumentation
switched on only around `rounds` passes over the 200 cases (callgrind's client requests, through a
three-line C helper compiled here with `cc`); the figure is the step's instructions divided by the cases
it went through. Steps (the struct path of `stages.extract.struct_score`, as a worker runs it):

- decode: `fast_decode.decode_struct` of each line (msgspec structs, unknown fields refused);
- one row per check, alone (`evaluate`, with the case's shared views opened and closed around it);
- six checks: `score_case` with all six, as the run calls it (time limit armed; the 200 cases share one
  alarm, `time_limit.across_cases`, as a worker's chunk does);
- driver: `score_case` with six metrics that return a ready score (what the driver itself costs);
- body, JUnit ends, rendered: the result line's body (`rendered._body`), the six `testcase_end`s,
  and all of `rendered.render`;
- struct path: the whole of it for one line, read bytes to `Rendered` (one alarm shared, as for six checks).

Counts shift by about 1% between runs (addresses differ, so do dict layouts); `PYTHONHASHSEED` is fixed.
valgrind replaces `memchr` and `memcpy` with plain loops, so steps made of them count higher than they run.
Needs valgrind and a C compiler; prints what it measured so far when a step fails.

    python benchmarks/per_case_instructions.py [--rounds 2] [--steps decode,six checks,...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HELPER = """
#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void cg_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS; CALLGRIND_STOP_INSTRUMENTATION; }
"""

# Run inside valgrind: argv = helper .so, step, rounds. Everything before `cg_start` is set-up, not counted.
CHILD = r"""
import ctypes, gc, math, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[4])
import pipeline_throughput as pt
from tracejudge.core import registry
from tracejudge.core.config import load_config
from tracejudge.engine.rendered import _body, render, testcase_end
from tracejudge.stages.extract import fast_decode, struct_score
from tracejudge.stages.load import read_jsonl
from tracejudge.stages.score import score_case, time_limit
from tracejudge.stages.score.base import make_score
from tracejudge.stages.score.views import close_scope, open_scope

step, rounds = sys.argv[2], int(sys.argv[3])
work = Path(tempfile.mkdtemp(prefix="tj-instr-"))
cases = work / "cases.jsonl"
pt.write_dataset(cases, 200, pt.base_cases())
(work / "run.yaml").write_text(pt.CONFIG.format(cases=cases, run_dir=work / "run"))
cfg = load_config(work / "run.yaml")
metrics = [registry.build_metric(s) for s in cfg.metrics]
keys = [m.key for m in metrics]
raws = list(read_jsonl(cases))
structs = [fast_decode.decode_struct(r.payload) for r in raws]
scored = [(c, score_case(c, metrics)) for c in structs]
path = struct_score.scorer(registry.format_for("native"), metrics, lambda m, s: m, keys)


def each(fn, items):
    # Each output dropped at once, as a run drops a case once it is written.
    def go():
        for item in items:
            fn(*item)
    return go


def chunk(fn, items):
    # `each`, with the time limit's alarm shared by the cases as `CpuJob.run` shares it over a chunk.
    go = each(fn, items)

    def shared():
        with time_limit.across_cases():
            go()
    return shared


class Ready:
    def __init__(self, key):
        self.key, self.score = key, make_score(1.0, True, "ok")

    def evaluate(self, case):
        return self.score


def check(m):
    def go():
        for c in structs:
            views = open_scope(c)
            m.evaluate(c)
            close_scope(views)
    return go


def junit():
    for _, scores in scored:
        for k in keys:
            s = scores[k]
            testcase_end(s.value if s.value is None or math.isfinite(s.value) else None, s.passed, s.reason)


ready = [Ready(k) for k in keys]
steps = {
    "decode": each(fast_decode.decode_struct, [(r.payload,) for r in raws]),
    **{f"  {m.key}": check(m) for m in metrics},
    "six checks": chunk(score_case, [(c, metrics) for c in structs]),
    "  driver": chunk(score_case, [(c, ready) for c in structs]),
    "body": each(_body, [(c.tags, c.metadata, s) for c, s in scored]),
    "JUnit ends": junit,
    "rendered": each(render, [(c, s, keys) for c, s in scored]),
    "struct path": chunk(path, [(r,) for r in raws]),
}
if step == "list":
    print("\n".join(steps))
    raise SystemExit
go = steps[step]
go()  # warm: first-use caches filled, as in a run after its first cases
gc.collect()
gc.freeze()
helper = ctypes.CDLL(sys.argv[1])
helper.cg_start()
for _ in range(rounds):
    go()
helper.cg_stop()
"""


def count(helper: Path, child: Path, step: str, rounds: int, out: Path) -> int:
    """Instructions callgrind counted in `step` over `rounds` passes."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no", f"--callgrind-out-file={out}",
           sys.executable, str(child), str(helper), step, str(rounds), str(Path(__file__).resolve().parent)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{step}: valgrind exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    dump = out.with_name(out.name + ".1")  # the dump `cg_stop` asked for (the one at exit counts nothing)
    for line in dump.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"{step}: no totals in {dump.name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", help="comma-separated step names (default: all)")
    args = ap.parse_args()
    if not shutil.which("valgrind") or not shutil.which("cc"):
        raise SystemExit("needs valgrind and cc on PATH")
    work = Path(tempfile.mkdtemp(prefix="tj-cg-"))
    rows: dict[str, float] = {}
    try:
        (work / "helper.c").write_text(HELPER)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(work / "helper.so"), str(work / "helper.c")], check=True)
        child = work / "child.py"
        child.write_text(CHILD)
        names = subprocess.run([sys.executable, str(child), "-", "list", "0", str(Path(__file__).resolve().parent)],
                               capture_output=True, text=True, check=True).stdout.splitlines()
        wanted = names if not args.steps else [n for n in names if n.strip() in args.steps.split(",")]
        for name in wanted:
            rows[name] = count(work / "helper.so", child, name, args.rounds, work / "cg.out") / (200 * args.rounds)
            print(f"  {name.strip()}: {rows[name]:,.0f}", file=sys.stderr)
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        print(f"\nfailed: {exc}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\ninstructions per case, struct path, 200 τ-bench cases × {args.rounds} (callgrind)\n")
    print(f"| {'step':<34} | {'instructions':>12} |")
    print(f"|{'-' * 36}|{'-' * 14}|")
    for name, n in rows.items():
        print(f"| {name:<34} | {n:>12,.0f} |")


if __name__ == "__main__":
    main()
