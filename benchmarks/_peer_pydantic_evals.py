"""pydantic-evals `Dataset.evaluate` running the six checks of `pipeline_throughput.py` on a native JSONL file.

    python benchmarks/_peer_pydantic_evals.py CASES.jsonl [--scores OUT.jsonl]

One `Case` per record: `inputs` is the recorded run, the task replays it (returns its final
output and reports `usage.requests` as the `requests` metric, as pydantic-ai instrumentation does).
pydantic-evals' own evaluators do the work wherever it has one — `TrajectoryMatch(in_order)`,
`ToolCorrectness(allow_extra)` (per case, with the case's expected names), `MaxToolCalls(20)`,
`MaxModelRequests(30)`, `Contains("reservation", case_sensitive=False)`. Its tool evaluators read a
span tree: `Replayed` hands them one built from the record (one `execute_tool` span per call,
status `error` for a failed call) instead of recording OpenTelemetry spans, which would cost the
peer more. `writes_exact` has no pydantic-evals counterpart (it pairs multisets of calls with
arguments): it is `_six_checks.writes_exact` with pydantic-evals' own argument comparison
(`ArgumentCorrectness`'s `_diff_arguments`, `match_mode="exact"`).

Prints one JSON line: `n`, the six `means`, peak RSS (`rss_kb`).
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import _six_checks as six
from pydantic_evals import Case, Dataset
from pydantic_evals.dataset import increment_eval_metric
from pydantic_evals.evaluators import Contains, Evaluator, EvaluatorContext, MaxModelRequests, MaxToolCalls, ToolCorrectness, TrajectoryMatch
from pydantic_evals.evaluators.agentic import _diff_arguments
from pydantic_evals.otel.span_tree import SpanNode, SpanTree

_T0 = datetime(2026, 1, 1, tzinfo=UTC)
_TICKS = [_T0 + timedelta(microseconds=i) for i in range(4096)]


def span_tree(run: six.Run) -> SpanTree:
    """The span tree pydantic-ai would have recorded for the run's tool calls (names and statuses; chat spans when `requests` is unknown)."""
    nodes = [SpanNode(name=f"execute_tool {c.name}", trace_id=1, span_id=i + 2, parent_span_id=1, start_timestamp=_TICKS[i], end_timestamp=_TICKS[i],
                      attributes={"gen_ai.tool.name": c.name}, status="error" if c.failed else "ok") for i, c in enumerate(run.calls)]
    if run.requests is None:
        base = len(nodes) + 2
        nodes += [SpanNode(name="chat", trace_id=1, span_id=base + i, parent_span_id=1, start_timestamp=_TICKS[0], end_timestamp=_TICKS[0],
                           attributes={"gen_ai.request.model": "recorded", "gen_ai.operation.name": "chat"}) for i in range(run.steps)]
    tree = SpanTree()
    tree.add_spans(nodes)
    return tree


@dataclass(repr=False)
class Replayed(Evaluator[Any, Any, Any]):
    """Runs a pydantic-evals span evaluator on the span tree of the recorded run (built once per case)."""

    inner: Any
    evaluation_name: str

    def get_default_evaluation_name(self) -> str:
        return self.evaluation_name

    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> Any:
        holder = ctx.inputs
        if holder.tree is None:
            holder.tree = span_tree(holder.run)
        return self.inner.evaluate(dataclasses.replace(ctx, _span_tree=holder.tree))


@dataclass(repr=False)
class WritesExact(Evaluator[Any, Any, Any]):
    """`writes_exact`: maximum matching of write calls, arguments compared by pydantic-evals' `_diff_arguments(exact)`."""

    def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> float:
        return six.writes_exact(ctx.inputs.run, lambda exp, act: not _diff_arguments(act, exp, "exact"))


class Recorded:
    """A case's inputs: the recorded run, and its span tree once an evaluator asked for it."""

    __slots__ = ("run", "tree")

    def __init__(self, run: six.Run) -> None:
        self.run, self.tree = run, None


async def replay(inputs: Recorded) -> str:
    """The task: the recorded agent's final output, with its request count as the `requests` metric."""
    if inputs.run.requests is not None:
        increment_eval_metric("requests", inputs.run.requests)
    return inputs.run.output


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", type=Path)
    ap.add_argument("--scores", help="also write each case's six values to this JSONL file")
    args = ap.parse_args()
    cases = []
    for run in six.read_runs(args.cases):
        names = [n for n, _ in run.expected]
        cases.append(Case(name=run.id, inputs=Recorded(run), evaluators=(
            Replayed(TrajectoryMatch(expected_trajectory=names, order="in_order"), "TrajectoryMatch"),
            Replayed(ToolCorrectness(expected_tools=names, allow_extra=True), "ToolCorrectness"),
        )))
    dataset = Dataset(name="six-checks", cases=cases, evaluators=[
        WritesExact(),
        Replayed(MaxToolCalls(max_calls=six.MAX_CALLS), "MaxToolCalls"),
        Replayed(MaxModelRequests(max_requests=six.MAX_REQUESTS), "MaxModelRequests"),
        Contains(value=six.CONTAINS, case_sensitive=False, evaluation_name="Contains"),
    ])
    report = dataset.evaluate_sync(replay, progress=False)
    per_case: dict[str, dict[str, float]] = {}
    for case in report.cases:
        got = {name: float(r.value) for name, r in {**case.scores, **case.assertions}.items()}
        per_case[case.name] = {"writes_exact": got["WritesExact"], **{k: got[k] for k in six.CHECKS if k != "writes_exact"}}
    if report.failures:
        raise SystemExit(f"pydantic-evals: {len(report.failures)} case(s) failed, first: {report.failures[0].error_message}")
    six.emit(len(report.cases), per_case, args.scores)


if __name__ == "__main__":
    main()
