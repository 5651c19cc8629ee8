"""Deterministic metric throughput: µs per case, ours against pydantic-evals fed offline.

Cases are the 200 GPT-4o airline runs of τ-bench (read through the
`tau-bench` adapter from `../shared/data/`, relative to the repository
root), so traces have τ-bench's shape: ~6 tool calls each, JSON arguments,
failed calls marked by the environment's "Error:" results.

For the peer, each case becomes a hand-built pydantic-evals `SpanTree` (one
`execute_tool <name>` span per call with `gen_ai.tool.name`, the arguments
as the JSON string `gen_ai.tool.call.arguments`, status `error` for a failed
call, and one `chat` span per model request) inside an `EvaluatorContext`,
and each evaluator is built with that case's expectations. Building cases
and evaluators is not timed on either side; `evaluate(...)` is. The last two
columns add the per-case cost of building the peer's SpanTree from the
recorded trace, which a user scoring recorded traces with the peer pays
(ours reads the normalized trace directly). Both sides run in the same process, on the same cases,
interleaved round by round; the figure is the best round (least
disturbed by other load on the machine).

Run: `.venv/bin/python benchmarks/metric_throughput.py [--rounds 7]`
(needs the `bench` extra for the peer columns).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _procs import guarded  # noqa: E402
from tracejudge.core.records import Case  # noqa: E402
from tracejudge.core.registry import format_for  # noqa: E402
from tracejudge.stages.extract import extract_record  # noqa: E402
from tracejudge.stages.score import (  # noqa: E402
    ArgumentCorrectness,
    MaxModelRequests,
    MaxToolCalls,
    ToolCallAccuracy,
    ToolCalls,
    ToolCorrectness,
    TrajectoryMatch,
)

ROOT = Path(__file__).resolve().parent.parent
TAU = ROOT.parent / "shared" / "data" / "tau_bench"


class _Dataset:
    def __init__(self) -> None:
        self.path = TAU / "historical_trajectories" / "gpt-4o-airline.json"
        self.tasks = TAU / "tasks" / "tasks_airline_test.json"
        self.limit = None
        self.options: dict[str, Any] = {}


def load_cases() -> list[Case]:
    fmt = format_for("tau-bench")
    ds = _Dataset()
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    return [c for c in cases if isinstance(c, Case)]


def first_expected(case: Case) -> tuple[str, dict[str, Any]]:
    exp = case.expected_tool_calls or []
    if not exp:
        return "book_reservation", {}
    return exp[0].name, dict(exp[0].arguments or {})


# --- ours -------------------------------------------------------------------------------------

OURS: dict[str, Callable[[Case], Any]] = {
    "TrajectoryMatch": lambda c: TrajectoryMatch(),
    "ToolCorrectness": lambda c: ToolCorrectness(),
    "ArgumentCorrectness": lambda c: ArgumentCorrectness(tool_name=first_expected(c)[0], expected_arguments=first_expected(c)[1]),
    "MaxToolCalls": lambda c: MaxToolCalls(max_calls=10),
    "MaxModelRequests": lambda c: MaxModelRequests(max_requests=10),
    "ToolCallAccuracy": lambda c: ToolCallAccuracy(require_order=True),
    "ToolCalls": lambda c: ToolCalls(),
    "ToolCalls exact": lambda c: ToolCalls(arguments="exact"),
}


# --- pydantic-evals, fed offline --------------------------------------------------------------


def peer_setup() -> tuple[Callable[[Case], Any], dict[str, Callable[[Case], Any]]] | None:
    try:
        from pydantic_evals.evaluators import ArgumentCorrectness as PArg
        from pydantic_evals.evaluators import EvaluatorContext
        from pydantic_evals.evaluators import MaxModelRequests as PMaxReq
        from pydantic_evals.evaluators import MaxToolCalls as PMaxCalls
        from pydantic_evals.evaluators import ToolCorrectness as PToolCorrectness
        from pydantic_evals.evaluators import TrajectoryMatch as PTrajectory
        from pydantic_evals.otel.span_tree import SpanNode, SpanTree
    except ImportError:
        return None

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def context(case: Case) -> Any:
        assert case.trace is not None
        nodes = [SpanNode(name="agent run", trace_id=1, span_id=1, parent_span_id=None, start_timestamp=t0, end_timestamp=t0 + timedelta(seconds=60), attributes={})]
        sid, tick = 2, 0
        for step in case.trace.steps:
            tick += 1
            at = t0 + timedelta(milliseconds=10 * tick)
            nodes.append(SpanNode(name="chat gpt-4o", trace_id=1, span_id=sid, parent_span_id=1, start_timestamp=at, end_timestamp=at,
                                  attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}))  # fmt: skip
            sid += 1
            for call in step.tool_calls:
                tick += 1
                at = t0 + timedelta(milliseconds=10 * tick)
                args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
                nodes.append(
                    SpanNode(name=f"execute_tool {call.name}", trace_id=1, span_id=sid, parent_span_id=1, start_timestamp=at, end_timestamp=at,
                             attributes={"gen_ai.tool.name": call.name, "gen_ai.tool.call.arguments": args},
                             status="error" if call.failed else "ok")  # fmt: skip
                )
                sid += 1
        tree = SpanTree()
        tree.add_spans(nodes)
        usage = case.trace.usage
        metrics = {"requests": usage.requests} if usage and usage.requests is not None else {}
        return EvaluatorContext(name=case.id, inputs=case.input, metadata=None, expected_output=None, output=case.trace.output,
                                duration=0.0, _span_tree=tree, attributes={}, metrics=metrics)  # fmt: skip

    def names(c: Case) -> list[str]:
        return [e.name for e in c.expected_tool_calls or []]

    peers: dict[str, Callable[[Case], Any]] = {
        "TrajectoryMatch": lambda c: PTrajectory(expected_trajectory=names(c)),
        "ToolCorrectness": lambda c: PToolCorrectness(expected_tools=names(c)),
        "ArgumentCorrectness": lambda c: PArg(tool_name=first_expected(c)[0], expected_arguments=first_expected(c)[1]),
        "MaxToolCalls": lambda c: PMaxCalls(max_calls=10),
        "MaxModelRequests": lambda c: PMaxReq(max_requests=10),
    }
    return context, peers


def best_round(jobs: list[tuple[Any, Any]], rounds: int) -> float:
    """Seconds of the fastest of `rounds` passes of `evaluator.evaluate(arg)` over `jobs`."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for evaluator, arg in jobs:
            evaluator.evaluate(arg)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    cases = load_cases()
    peer = peer_setup()
    contexts = [peer[0](c) for c in cases] if peer else []
    n = len(cases)
    calls = sum(len(c.trace.tool_calls()) for c in cases if c.trace)
    print(f"{n} τ-bench airline cases, {calls} tool calls ({calls / n:.1f} per case); best of {args.rounds} rounds\n")
    # Building a SpanTree from a recorded trace is what a user scoring recorded traces with the
    # peer pays per case on top of evaluate(); timed once, shown as its own column.
    build_s = float("inf")
    if peer:
        for _ in range(args.rounds):
            start = time.perf_counter()
            for c in cases:
                peer[0](c)
            build_s = min(build_s, time.perf_counter() - start)
    print("| metric | ours µs/case | pydantic-evals µs/case | ratio (peer/ours) | peer + SpanTree build µs/case | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    # Each row is printed as soon as it is measured: a failed metric leaves the rows above it.
    guarded(lambda: rows(cases, contexts, peer, build_s, args.rounds), lambda: None)


def rows(cases: list[Any], contexts: list[Any], peer: Any, build_s: float, rounds: int) -> None:
    """Measure and print one table row per metric of `OURS`."""
    n = len(cases)
    for name, make in OURS.items():
        ours_jobs = [(make(c), c) for c in cases]
        peer_jobs = [(peer[1][name](c), ctx) for c, ctx in zip(cases, contexts)] if peer and name in peer[1] else None
        ours_s = best_round(ours_jobs, rounds)
        if peer_jobs is None:
            print(f"| {name} | {ours_s / n * 1e6:.1f} | — | — | — | — |")
            continue
        peer_s = best_round(peer_jobs, rounds)
        full = peer_s + build_s
        print(
            f"| {name} | {ours_s / n * 1e6:.1f} | {peer_s / n * 1e6:.1f} | {peer_s / ours_s:.1f}× "
            f"| {full / n * 1e6:.1f} | {full / ours_s:.1f}× |",
            flush=True,
        )


if __name__ == "__main__":
    main()
