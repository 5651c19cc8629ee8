"""smolagents tools called with no argument under `mlflow.smolagents.autolog()`, read by formats `mlflow` and `otel`.

The recordings (`tests/data/mlflow-smolagents-no-args`, made by `tests/frameworks/record_mlflow_smolagents_no_args.py` with
MLflow 3.17.2 and smolagents 1.26 against a loopback server) are checked against what the tools ran and returned
(`<scenario>.truth.json`). What was wrong before: a `CodeAgent`'s code calling `get_time()` writes a tool trace whose span's
inputs are `{}` (no bound argument), which was not taken for a smolagents tool call, so it was not joined to the run holding
it: the run read without that call (and `get_time()` alone, without any), and the call read as a case of its own named
`SimpleTool.__call__`. Calls with arguments, and a `ToolCallingAgent`'s no-argument call, read as before.
"""

from __future__ import annotations

from typing import Any

import pytest
from _mlflow_smolagents import FORMATS, MlflowSmolagents
from tracejudge.core.records import Case

RECORDINGS = MlflowSmolagents("mlflow-smolagents-no-args")
truth, read = RECORDINGS.truth, RECORDINGS.read


def ran(case: Case) -> list[dict[str, Any]]:
    """The calls read, in order, as the truth lists what ran (MLflow records a `@tool` function's class, `SimpleTool`)."""
    assert case.trace is not None
    return [{"name": c.name, "arguments": c.arguments, "result": c.result, "error": c.error} for c in case.trace.tool_calls()]


def expected(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": "SimpleTool", "arguments": r["arguments"], "result": r["result"], "error": None} for r in runs]


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
@pytest.mark.parametrize("name", ["code", "code-only", "code-two-runs"])
def test_a_code_agents_no_argument_calls_are_read_in_its_run(name: str, fmt: str, ext: str) -> None:
    want = truth(name)
    assert want["traces"] > len(want["runs"]) and any(r["arguments"] == {} for run in want["runs"] for r in run["tool_runs"])
    cases = read(name, fmt, ext)
    assert len(cases) == len(want["runs"])  # one case a run: no call left as a case of its own
    for case, run in zip(cases, want["runs"]):
        assert case.input == run["task"] and case.trace is not None and case.trace.output == run["answer"]
        assert ran(case) == expected(run["tool_runs"])  # each call, in the order it ran, with the result it returned


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
def test_a_tool_calling_agents_no_argument_call_reads_as_before(fmt: str, ext: str) -> None:
    want = truth("tool-steps")["runs"][0]
    (case,) = read("tool-steps", fmt, ext)
    assert case.trace is not None and case.trace.output == want["answer"]
    assert ran(case) == expected(want["tool_runs"])
