"""Judge cost of one sweep: one request per item, shared requests, and the provider batch API.

Scenario (issue "Batched judging"): 2,000 τ-bench-derived cases — the 200
GPT-4o airline runs of `../shared/data/tau_bench` (τ-bench format), each
repeated 10 times with a variant marker in the task so that every case is a
distinct item (no cache hit between copies) — judged by `TaskCompletion`
and `ToolCallNecessity` through the real pipeline (`tracejudge run`'s
runner, in this process) against the judge simulator (a thread of this
process, over loopback HTTP), with the cache disabled so every figure is
real work:

- `items_per_request` 1, 5 and 10 in synchronous mode;
- `mode: batch` (the OpenAI Batch API protocol, simulated) at 1 and 10
  items per request.

Printed per configuration: requests that reached the simulator, judged
items (metric × case that needed a verdict; `ToolCallNecessity` needs none
for a run without tool calls), input and output tokens as the simulator
counted them (tiktoken, the same count a provider bills), input tokens per
judged item, dollars at gpt-4o-mini's list prices ($0.15 / $0.60 per million
input / output tokens; the batch API bills half) and dollars per 1,000
traces. A second table gives the size of the fixed part of each metric's
prompt (what items_per_request shares) against the mean size of an item.

Target (issue): at 10 items per request, at least 3× fewer input tokens
per judged item than at 1.

Run: `.venv/bin/python benchmarks/judge_cost.py [--cases N]` (a few minutes
at the default size).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tracejudge.core import registry  # noqa: E402
from tracejudge.core.config import JudgeConfig, validate_config  # noqa: E402
from tracejudge.core.records import Case  # noqa: E402
from tracejudge.engine import runner  # noqa: E402
from tracejudge.llm.prices import price_for  # noqa: E402
from tracejudge.llm.tokens import count_messages  # noqa: E402
from tracejudge.simulator.server import SimConfig, SimulatorThread  # noqa: E402
from tracejudge.stages.extract import extract_record  # noqa: E402
from tracejudge.stages.judge.base import Plan  # noqa: E402
from tracejudge.stages.judge.client import build_request, request_tokens  # noqa: E402
from tracejudge.stages.judge.metrics import TaskCompletion, ToolCallNecessity  # noqa: E402
from tracejudge.stages.judge.multi import MULTI_NOTE  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "tau_bench"
TRAJ = DATA / "historical_trajectories" / "gpt-4o-airline.json"
TASKS = DATA / "tasks" / "tasks_airline_test.json"
MODEL = "gpt-4o-mini"
CONFIGS: list[tuple[str, int, str]] = [("sync", 1, "sync"), ("sync", 5, "sync"), ("sync", 10, "sync"), ("batch", 1, "batch"), ("batch", 10, "batch")]


def tau_cases(n: int) -> list[dict[str, Any]]:
    cfg = validate_config({"dataset": {"path": str(TRAJ), "format": "tau-bench", "tasks": str(TASKS)}})
    fmt = registry.format_for("tau-bench")
    ctx = fmt.prepare(cfg.dataset)
    base = []
    for raw in fmt.read(cfg.dataset):
        got = extract_record(raw, fmt, ctx)
        assert isinstance(got, Case)
        base.append(got.model_dump(mode="json", exclude_defaults=True))
    out = []
    for i in range(n):
        case = dict(base[i % len(base)])
        variant = i // len(base)
        case["id"] = f"{case['id']}-v{variant}"
        case["input"] = f"{case.get('input') or ''} (variant {variant})"
        out.append(case)
    return out


def run_one(work: Path, url: str, mode: str, n_items: int) -> tuple[dict[str, Any], float]:
    judge: dict[str, Any] = {"provider": "openai", "model": MODEL, "base_url": url + "/v1", "items_per_request": n_items, "item_wait_s": 1.0}
    if mode == "batch":
        judge.update(mode="batch", batch={"flush_after_s": 2.0, "poll_interval_s": 0.2})
    data = {"dataset": {"path": str(work / "cases.jsonl"), "format": "native"},
            "metrics": [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}],
            # Limits far above what the simulator can serve: this benchmark counts tokens, not throughput.
            "judge": judge, "limits": {"rpm": 10_000_000, "tpm": 10_000_000_000, "max_in_flight": 64},
            "cache": {"enabled": False}, "run": {"dir": str(work / f"run-{mode}-{n_items}"), "queue_size": 256}}
    t0 = time.perf_counter()
    summary = anyio.run(lambda: runner.run(validate_config(data))).summary
    return summary, time.perf_counter() - t0


def fixed_vs_item(cases: list[dict[str, Any]]) -> list[tuple[str, int, float]]:
    """(metric, tokens of the fixed part shared by multi-item requests, mean tokens of one item's own part)."""
    cfg = JudgeConfig(provider="openai", model=MODEL)
    rows = []
    for metric in (TaskCompletion(), ToolCallNecessity()):
        fixed = count_messages([{"role": "system", "content": metric.system_prompt("yes_no") + "\n\n" + MULTI_NOTE}], MODEL)
        sizes = []
        for c in cases[:200]:
            plan = metric.plan(Case.model_validate(c))
            if isinstance(plan, Plan):
                sizes.append(request_tokens(build_request(plan, plan.questions, cfg)) - count_messages([{"role": "system", "content": metric.system_prompt("yes_no")}], MODEL))
        rows.append((type(metric).__name__, fixed, sum(sizes) / len(sizes)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000)
    args = ap.parse_args()
    if not TRAJ.exists():
        sys.exit(f"τ-bench data not found at {TRAJ}")
    work = Path(tempfile.mkdtemp(prefix="tj-cost-"))
    cases = tau_cases(args.cases)
    with open(work / "cases.jsonl", "w") as fh:
        for c in cases:
            fh.write(json.dumps(c) + "\n")
    price = price_for(MODEL)
    assert price is not None
    rows = []
    try:
        for label, n_items, mode in CONFIGS:
            with SimulatorThread(SimConfig(batch_completion_s=0.5)) as sim:
                summary, wall = run_one(work, sim.url, mode, n_items)
                st = sim.stats
                requests = st.requests + st.batch_requests
                j = summary["judge"]
                assert summary["status"].get("ok", 0) == args.cases, summary["status"]
                judged = sum(m.get("scored", 0) for m in summary["metrics"].values()) - no_request_items(work, mode, n_items)
                dollars = price.batch_cost(st.input_tokens, st.output_tokens) if mode == "batch" else price.cost(st.input_tokens, st.output_tokens)
                rows.append((label, n_items, requests, judged, st.input_tokens, st.output_tokens, dollars, j["cost_usd"], wall, st.batches_created))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    base_per_item = rows[0][4] / rows[0][3]
    print(f"\njudge cost: {args.cases:,} τ-bench-derived cases × TaskCompletion + ToolCallNecessity; {MODEL} list prices "
          f"${price.input}/${price.output} per M input/output tokens, batch API × {price.batch_discount}\n")
    print("| mode | items/request | requests | judged items | input tokens | output tokens | input tokens / item | vs 1 item | dollars | $ / 1,000 traces | batches | wall s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, n_items, requests, judged, tin, tout, dollars, reported, wall, batches in rows:
        per = tin / judged
        print(f"| {label} | {n_items} | {requests:,} | {judged:,} | {tin:,} | {tout:,} | {per:,.0f} | {base_per_item / per:.2f}× | "
              f"${dollars:.4f} | ${dollars / args.cases * 1000:.4f} | {batches} | {wall:.1f} |")
        assert abs(dollars - reported) < 1e-3, (dollars, reported)  # the run's own accounting agrees
    print("\n| metric | fixed part shared per request (tokens) | one item's own part, mean (tokens) | best possible ratio at 10 items |")
    print("| --- | ---: | ---: | ---: |")
    for name, fixed, item in fixed_vs_item(cases):
        print(f"| {name} | {fixed:,} | {item:,.0f} | {(fixed + item) / (fixed / 10 + item):.2f}× |")


def no_request_items(work: Path, mode: str, n_items: int) -> int:
    """Scores given without a request (ToolCallNecessity on a run without tool calls)."""
    n = 0
    with open(work / f"run-{mode}-{n_items}" / "results.jsonl") as fh:
        for line in fh:
            for s in json.loads(line)["scores"].values():
                n += s.get("judge") is None
    return n


if __name__ == "__main__":
    main()
