"""The config step of a run, tracejudge beside the least implementation of it with the design's libraries.

What it measures: wall seconds, in a fresh process, from its first line of Python to a validated config of the
benchmark's run (`pipeline_throughput.CONFIG`: a native dataset, the six checks, a run section): tracejudge's
`core.config.load_config` (its imports included: the config models, the metric registry, the judge's sections), and a
minimal implementation of the same step (PyYAML's `safe_load`, pydantic v2 models of the two sections and the six
metrics' parameters with unknown keys refused, a discriminated union on `type`, `model_validate`), which is what any
run reading its config with the design's pydantic pays before its first case. `whole_floor.py`'s floor hard-wires its
checks and reads no config: this is the part of tracejudge's start-up that floor leaves out.

How: `--repeats` interleaved rounds of both, each a fresh `python -c` (so the interpreter's own start-up, the same for
both, is not counted: the clock starts at the process's first line); medians. The load average is printed.

    python benchmarks/config_floor.py [--repeats 9]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import pipeline_throughput as pt  # noqa: E402

_MINIMAL = r'''
import json, sys, time
t0 = time.perf_counter()
from typing import Annotated, Literal
import yaml
from pydantic import BaseModel, ConfigDict, Field
class S(BaseModel):
    model_config = ConfigDict(extra="forbid")
class Dataset(S):
    path: str
    format: str = "native"
class Run(S):
    dir: str
    processes: int = Field(default=1, ge=1)
class ToolCalls(S):
    type: Literal["ToolCalls"]; name: str | None = None; arguments: Literal["exact", "subset", "ignore"] = "exact"
    exclude_tools: list[str] = []; include_failed: bool = True
class TrajectoryMatch(S):
    type: Literal["TrajectoryMatch"]; order: Literal["exact", "in_order", "any_order"] = "exact"
class ToolCorrectness(S):
    type: Literal["ToolCorrectness"]; allow_extra: bool = False
class MaxToolCalls(S):
    type: Literal["MaxToolCalls"]; max_calls: int = Field(ge=0)
class MaxModelRequests(S):
    type: Literal["MaxModelRequests"]; max_requests: int = Field(ge=0)
class Contains(S):
    type: Literal["Contains"]; value: str
Metric = Annotated[ToolCalls | TrajectoryMatch | ToolCorrectness | MaxToolCalls | MaxModelRequests | Contains, Field(discriminator="type")]
class Config(S):
    dataset: Dataset
    metrics: list[Metric]
    run: Run
with open(sys.argv[1], encoding="utf-8") as fh:
    config = Config.model_validate(yaml.safe_load(fh))
assert len(config.metrics) == 6
print(json.dumps({"s": time.perf_counter() - t0}))
'''

_TRACEJUDGE = r'''
import json, sys, time
t0 = time.perf_counter()
from tracejudge.core.config import load_config
config = load_config(sys.argv[1])
assert len(config.metrics) == 6
print(json.dumps({"s": time.perf_counter() - t0}))
'''


def _once(code: str, cfg: Path) -> float:
    done = subprocess.run([sys.executable, "-c", code, str(cfg)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return float(json.loads(done.stdout.strip().splitlines()[-1])["s"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=9, help="interleaved rounds; the figures are medians")
    args = ap.parse_args()
    load = os.getloadavg()
    runs: dict[str, list[float]] = {"minimal (PyYAML + pydantic, 8 models)": [], "tracejudge load_config": []}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "config.yaml"
        (Path(tmp) / "cases.jsonl").write_text("", encoding="utf-8")
        cfg.write_text(pt.CONFIG.format(cases=Path(tmp) / "cases.jsonl", run_dir=Path(tmp) / "run"), encoding="utf-8")
        try:
            for r in range(args.repeats):
                print(f"  round {r + 1} of {args.repeats}", file=sys.stderr)
                for name, code in zip(runs, (_MINIMAL, _TRACEJUDGE)):
                    runs[name].append(_once(code, cfg))
        finally:  # what was measured so far is printed even when a round fails
            print(f"\nwall seconds from a fresh process's first line to a validated config of the benchmark's run; medians of "
                  f"{min(len(v) for v in runs.values())} interleaved round(s) (load average at start {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f})\n")
            print("| step | seconds | / minimal |\n|---|---:|---:|")
            base = statistics.median(runs["minimal (PyYAML + pydantic, 8 models)"]) if runs["minimal (PyYAML + pydantic, 8 models)"] else None
            for name, xs in runs.items():
                if xs:
                    med = statistics.median(xs)
                    print(f"| {name} | {med:.3f} | {med / base:.2f} |" if base else f"| {name} | {med:.3f} | — |")


if __name__ == "__main__":
    main()
