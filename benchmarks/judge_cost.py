"""Judge cost per 1,000 traces: one request per metric against one per case, the batch API and provider prefix caching.

Scenario: the 200 GPT-4o airline runs of τ-bench (`../shared/data/tau_bench`,
τ-bench format) judged by four judge metrics — TaskCompletion,
ToolCallNecessity, PlanQuality, TrajectoryEfficiency — through the real
pipeline (`tracejudge run`'s runner, in this process) against the judge
simulator (a thread of this process, over loopback HTTP), with tracejudge's
own cache off so every figure is real work. Side by side:

1. separate, synchronous, full trace: one request per metric and case
   (`judge.group: none`) with the trace as JSON (`trace_format: full`), what
   every peer sends (and tracejudge sent before the compact rendering); the
   simulator's prefix cache is off, as peers' per-metric prompts share no
   prefix (each starts with its own instructions); the baseline;
2. the same with the compact trace (tracejudge's `group: none`);
3. grouped, synchronous: one request per case asking all four metrics
   (`judge.group: case`, the default);
4. grouped + batch API (`mode: batch`, the OpenAI Batch API protocol at half price);
5. grouped + provider prefix caching, Anthropic protocol and prices
   (writes at 1.25 × input, reads at 0.1 ×): a trace asked once gets no
   `cache_control` (a write would only cost more), and the prefix all
   requests share (schema and system prompt) is under the 1,024-token
   minimum, so nothing is cached: this row is the grouped cost at
   Anthropic's prices;
6. separate + provider prefix caching, Anthropic (for comparison: a
   case's four requests share the cached trace).

Printed per row: requests the simulator answered, input tokens (and the
cached and cache-written parts) and output tokens per trace as the
simulator counted them (tiktoken, what a provider bills), `tracejudge
estimate`'s input tokens for the same config (before any call), and dollars
per 1,000 traces at gpt-4o-mini's list prices (rows 1–4) or
claude-haiku-4-5's (rows 5–6), with the ratio to row 1 priced the same way.
Targets (issue "Judge cost"): the cheapest mode at most 1/6 of separate
synchronous, grouped synchronous at most 1/2.5.

Run: `python benchmarks/judge_cost.py [--cases N]` (about a minute).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _procs import guarded  # noqa: E402
from tracejudge.core import registry  # noqa: E402
from tracejudge.core.config import validate_config  # noqa: E402
from tracejudge.core.records import Case  # noqa: E402
from tracejudge.engine import runner  # noqa: E402
from tracejudge.llm.prices import Price, price_for  # noqa: E402
from tracejudge.simulator.server import SimConfig, SimulatorThread  # noqa: E402
from tracejudge.stages.extract import extract_record  # noqa: E402
from tracejudge.stages.judge.estimate import estimate  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "tau_bench"
TRAJ = DATA / "historical_trajectories" / "gpt-4o-airline.json"
TASKS = DATA / "tasks" / "tasks_airline_test.json"
METRICS = ["TaskCompletion", "ToolCallNecessity", "PlanQuality", "TrajectoryEfficiency"]
OPENAI, ANTHROPIC = "gpt-4o-mini", "claude-haiku-4-5"
ANTHROPIC_JUDGE = {"provider": "anthropic", "model": ANTHROPIC, "api_key_env": "TJ_BENCH_KEY"}
# (label, judge settings, simulator prefix cache on, metric options)
ROWS: list[tuple[str, dict[str, Any], bool, dict[str, Any]]] = [
    ("separate, sync, full trace (peers)", {"group": "none"}, False, {"trace_format": "full"}),
    ("separate, sync, compact trace", {"group": "none"}, False, {}),
    ("grouped, sync", {"group": "case"}, True, {}),
    ("grouped + batch API", {"group": "case", "mode": "batch", "batch": {"flush_after_s": 1.0, "poll_interval_s": 0.2}}, True, {}),
    ("grouped + prefix cache (Anthropic)", {"group": "case", **ANTHROPIC_JUDGE}, True, {}),
    ("separate + prefix cache (Anthropic)", {"group": "none", **ANTHROPIC_JUDGE}, True, {}),
]


def tau_cases(n: int) -> list[dict[str, Any]]:
    """The τ-bench runs as native cases; past 200, copies with a variant marker in the task (distinct traces)."""
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
        if variant:
            case["id"] = f"{case['id']}-v{variant}"
            case["input"] = f"{case.get('input') or ''} (variant {variant})"
        out.append(case)
    return out


def run_row(work: Path, name: str, url: str, judge: dict[str, Any], options: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """(the run's judge block, the estimate's input tokens for the same config)."""
    base = {"provider": "openai", "model": OPENAI, "base_url": url + "/v1"}
    data = {"dataset": {"path": str(work / "cases.jsonl"), "format": "native"},
            "metrics": [{"type": m, **options} for m in METRICS],
            "judge": {**base, **judge},
            # Limits far above what the simulator can serve: this benchmark counts tokens, not throughput.
            "limits": {"rpm": 10_000_000, "tpm": 10_000_000_000, "max_in_flight": 64},
            "cache": {"enabled": False}, "run": {"dir": str(work / name), "queue_size": 256}}
    config = validate_config(data)
    est = estimate(config)["total"].input_tokens
    summary = anyio.run(lambda: runner.run(config)).summary
    return summary["judge"], est


def dollars(price: Price, j: dict[str, Any], batch: bool = False) -> float:
    args = (j["input_tokens"], j["output_tokens"], j.get("cached_input_tokens", 0), j.get("cache_write_input_tokens", 0))
    return price.batch_cost(*args) if batch else price.cost(*args)


def main() -> None:
    import os

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=200)
    args = ap.parse_args()
    if not TRAJ.exists():
        sys.exit(f"τ-bench data not found at {TRAJ}")
    os.environ.setdefault("TJ_BENCH_KEY", "sk-simulator-needs-no-key")
    work = Path(tempfile.mkdtemp(prefix="tj-cost-"))
    with open(work / "cases.jsonl", "w") as fh:
        for c in tau_cases(args.cases):
            fh.write(json.dumps(c) + "\n")
    p_openai, p_anthropic = price_for(OPENAI), price_for(ANTHROPIC)
    assert p_openai is not None and p_anthropic is not None
    got: list[tuple] = []

    def measure_all() -> None:
        try:
            for i, (label, judge, prefix_cache, options) in enumerate(ROWS):
                with SimulatorThread(SimConfig(batch_completion_s=0.5, prefix_cache=prefix_cache)) as sim:
                    j, est = run_row(work, f"row{i}", sim.url, judge, options)
                    if j["judged_results"] != args.cases or j["judge_error_results"] != 0:
                        raise RuntimeError(f"{label}: {j['judged_results']} of {args.cases} cases judged, {j['judge_error_results']} judge errors")
                    if j["input_tokens"] != sim.stats.input_tokens:
                        raise RuntimeError(f"{label}: the run counted {j['input_tokens']:,} input tokens, the provider {sim.stats.input_tokens:,}")
                    got.append((label, judge, j, est, sim.stats.requests + sim.stats.batch_requests))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    guarded(measure_all, lambda: report(got, args.cases, p_openai, p_anthropic))


def report(got: list[tuple], cases: int, p_openai: Price, p_anthropic: Price) -> None:
    """The table of the modes measured so far (ratios against the first, separate sync), and the targets it allows judging."""
    if not got:
        return
    per = 1000 / cases
    sep = got[0][2]
    base = {OPENAI: dollars(p_openai, sep), ANTHROPIC: dollars(p_anthropic, sep)}
    print(f"\njudge cost: {cases} τ-bench airline traces × {', '.join(METRICS)} (judge simulator; "
          f"{OPENAI} ${p_openai.input}/${p_openai.output} per M input/output tokens, cached ${p_openai.cached_input}, batch × {p_openai.batch_discount}; "
          f"{ANTHROPIC} ${p_anthropic.input}/${p_anthropic.output}, cache read ${p_anthropic.cached_input}, cache write ${p_anthropic.cache_write_input})\n")
    print("| mode | requests | input tokens / trace | cached / trace | cache-written / trace | estimate = run | output tokens / trace "
          "| prices | $ / 1,000 traces | separate sync, same prices | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | :---: | ---: | --- | ---: | ---: | ---: |")
    ratios: dict[str, float] = {}
    for label, judge, j, est, requests in got:
        model = judge.get("model", OPENAI)
        price = p_anthropic if model == ANTHROPIC else p_openai
        cost = dollars(price, j, judge.get("mode") == "batch")
        ratios[label] = base[model] / cost
        print(f"| {label} | {requests:,} | {j['input_tokens'] / cases:,.0f} | {j['cached_input_tokens'] / cases:,.0f} | "
              f"{j['cache_write_input_tokens'] / cases:,.0f} | {'yes' if est == j['input_tokens'] else f'no ({est:,})'} | "
              f"{j['output_tokens'] / cases:,.0f} | {model} | ${cost * per:.4f} | ${base[model] * per:.4f} | {ratios[label]:.2f}× |")
    cheapest = max(ratios, key=lambda k: ratios[k])
    print(f"\ntarget: cheapest mode ≤ 1/6 of separate sync: {cheapest}, {ratios[cheapest]:.2f}× cheaper → {'MET' if ratios[cheapest] >= 6 else 'NOT MET'}")
    if "grouped, sync" in ratios:
        g = ratios["grouped, sync"]
        print(f"target: grouped sync ≤ 1/2.5 of separate sync: {g:.2f}× cheaper → {'MET' if g >= 2.5 else 'NOT MET'}")

if __name__ == "__main__":
    main()
