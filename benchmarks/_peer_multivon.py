"""multivon-eval `EvalSuite.run` running the six checks of `pipeline_throughput.py` on a native JSONL file.

    python benchmarks/_peer_multivon.py CASES.jsonl [--scores OUT.jsonl]

One `EvalCase` per record, the model a replay of the recorded final output (`input` is that
output, the model the identity). `Contains(["reservation"])` is multivon's own (case ignored by
default). multivon has no evaluator computing the other five — its `ToolCallAccuracy` scores a
greedy subsequence of names and knows neither failed calls nor arguments — so they are `Evaluator`
subclasses over the same record (kept in `metadata["run"]`) calling `_six_checks`, arguments
compared with Python `==`. `EvalSuite.run` keeps its defaults (its own worker threads).

Prints one JSON line: `n`, the six `means`, peak RSS (`rss_kb`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import _six_checks as six
from multivon_eval import Contains, EvalCase, EvalSuite
from multivon_eval.evaluators.base import Evaluator
from multivon_eval.result import EvalResult


class RunCheck(Evaluator):
    """One of the six checks as a multivon evaluator: `check(run)` → value in [0, 1]; passes at 1.0."""

    def __init__(self, name: str, check: Callable[[six.Run], float]) -> None:
        super().__init__(threshold=1.0)
        self.name, self.check = name, check

    def evaluate(self, case: EvalCase, output: str) -> EvalResult:
        return self._result(self.check(case.metadata["run"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", type=Path)
    ap.add_argument("--scores", help="also write each case's six values to this JSONL file")
    args = ap.parse_args()
    suite = EvalSuite("six-checks")
    suite.add_cases([EvalCase(input=run.output, case_id=run.id, metadata={"run": run}) for run in six.read_runs(args.cases)])
    contains = Contains([six.CONTAINS])
    contains.name = "Contains"
    suite.add_evaluators(
        RunCheck("writes_exact", lambda run: six.writes_exact(run, lambda exp, act: exp == act)),
        RunCheck("TrajectoryMatch", six.trajectory_in_order),
        RunCheck("ToolCorrectness", six.tools_called),
        RunCheck("MaxToolCalls", six.within_calls),
        RunCheck("MaxModelRequests", six.within_requests),
        contains,
    )
    report = suite.run(lambda text: text, verbose=False)
    per_case: dict[str, dict[str, float]] = {}
    for result in report.case_results:
        problem = result.model_error or result.evaluator_error
        if problem:
            raise SystemExit(f"multivon: case {result.case_id} failed: {problem}")
        per_case[str(result.case_id)] = {r.evaluator: r.score for r in result.results}
    six.emit(len(report.case_results), per_case, args.scores)


if __name__ == "__main__":
    main()
