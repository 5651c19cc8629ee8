"""Record real agent-framework traces against a scripted loopback OpenAI server, with ground truth.

    python tests/frameworks/record.py OUTDIR [--only NAME ...] [--task TASK ...]

writes `OUTDIR/<recording>/<task>.<ext>` and `<task>.truth.json` for every recording in
`RECORDINGS` (default: all; each runs in its own subprocess, since instrumentors patch libraries
process-wide). The committed recordings live in `tests/data/frameworks/` (see its README).
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# recording name -> "module:function" in this folder; the function takes (FakeOpenAI, outdir)
RECORDINGS = {
    "smolagents-memory": "run_smolagents:memory",
    "openai-agents-export": "run_agents:export",
    "openinference-openai": "run_openai_loop:openinference",
    "openinference-langchain": "run_langgraph:openinference",
    "openinference-smolagents": "run_smolagents:openinference",
    "openinference-openai-agents": "run_agents:openinference",
    "traceloop-openai": "run_openai_loop:traceloop",
    "traceloop-langchain": "run_langgraph:traceloop",
    "mlflow": "run_mlflow:record",
    "langfuse-otel": "run_langfuse:otel",
    "langfuse-api": "run_langfuse:api",
}


def record_one(name: str, outdir: Path) -> None:
    """Run recording `name` in this process, writing into `outdir/name`."""
    from fake_openai import FakeOpenAI

    module, func = RECORDINGS[name].split(":")
    run = getattr(importlib.import_module(module), func)
    with FakeOpenAI() as fake:
        run(fake, outdir / name)


def main(argv: list[str] | None = None) -> int:
    """CLI entry: returns the number of recordings that failed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--only", action="append", choices=sorted(RECORDINGS), help="record only this one (repeatable); runs in this process")
    ap.add_argument("--task", action="append", help="record only this task (repeatable; default: all)")
    args = ap.parse_args(argv)
    if args.task:
        os.environ["RECORD_TASKS"] = ",".join(args.task)  # read by tasks.selected(), also in the subprocesses
    if args.only and len(args.only) == 1:
        record_one(args.only[0], args.outdir)
        return 0
    failed = 0
    for name in args.only or RECORDINGS:
        done = subprocess.run([sys.executable, __file__, str(args.outdir), "--only", name])
        print(f"{name}: {'ok' if done.returncode == 0 else 'FAILED'}", file=sys.stderr)
        failed += done.returncode != 0
    return failed


if __name__ == "__main__":
    sys.exit(main())
