"""smolagents runs under `mlflow.smolagents.autolog()`, read by formats `mlflow` and `otel` as the runs they were.

The recordings (`tests/data/mlflow-smolagents`, made by `tests/frameworks/record_mlflow_smolagents.py` with MLflow 3.17.2 and
smolagents 1.26 against a loopback server; the folder's README says what each is) are checked against what the application
ran and got (`<scenario>.truth.json`). What was wrong before:

- a `CodeAgent` run, whose code runs in a worker thread where MLflow loses its context, read as one case per trace: the run
  without a single call, and each tool call (`final_answer` too) a case of its own, with the arguments as MLflow bound them
  (`{"kwargs": {"city": "Paris"}}`);
- MLflow records no model request of a smolagents run, yet format `otel` read its tokens as 0 and 0 and both formats its
  request count as 0: a budget metric passed on them. They are unknown;
- a run on the memory of the run before it (`agent.run(q, reset=False)`: the user's next question) read as a case of its
  own, without the turn it went on from (format `smolagents` reads the memory as one case of two turns).
"""

from __future__ import annotations

from typing import Any

import pytest
from _mlflow_smolagents import FORMATS, MlflowSmolagents
from tracejudge.core.records import Case

RECORDINGS = MlflowSmolagents("mlflow-smolagents")
truth, read = RECORDINGS.truth, RECORDINGS.read


def ran(case: Case) -> list[dict[str, Any]]:
    """The calls read, as the truth lists what ran (MLflow records a `@tool` function's class, `SimpleTool`, not its name)."""
    assert case.trace is not None
    return [{"arguments": c.arguments, **({"error": c.error} if c.error else {"result": c.result})} for c in case.trace.tool_calls()]


def expected(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"arguments": r["arguments"], **({"error": f"ValueError: {r['error']}"} if "error" in r else {"result": r["result"]})} for r in runs]


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
@pytest.mark.parametrize("name", ["code", "code-error", "code-two-runs"])
def test_a_code_agents_calls_are_read_in_its_run(name: str, fmt: str, ext: str) -> None:
    want = truth(name)
    assert want["traces"] > len(want["runs"])  # (MLflow wrote each tool call as a trace of its own)
    cases = read(name, fmt, ext)
    assert len(cases) == len(want["runs"])  # one case a run, not one a trace
    for case, run in zip(cases, want["runs"]):
        assert case.input == run["task"] and case.trace is not None and case.trace.output == run["answer"]
        assert ran(case) == expected(run["tool_runs"])  # `final_answer` is the answer, not a call
        assert all(c.name == "SimpleTool" for c in case.trace.tool_calls())


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
@pytest.mark.parametrize("name", ["code", "tool-steps"])
def test_usage_mlflow_did_not_record_is_unknown(name: str, fmt: str, ext: str) -> None:
    want = truth(name)
    assert want["requests"] > 0 and want["runs"][0]["memory_tokens"]["input_tokens"] > 0  # the run asked the model
    (case,) = read(name, fmt, ext)
    assert case.trace is not None
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (None, None, None)
    assert ran(case) == expected(want["runs"][0]["tool_runs"]) and case.trace.output == want["runs"][0]["answer"]


@pytest.mark.parametrize(("fmt", "ext"), FORMATS)
def test_a_run_on_the_memory_of_the_one_before_is_its_next_turn(fmt: str, ext: str) -> None:
    want = truth("tool-runs-on")
    first, kept, afresh = want["runs"]
    assert kept["reset"] is False and "reset" not in afresh and want["traces"] == 3  # (one trace a run, no session)
    joined, alone = read("tool-runs-on", fmt, ext)
    assert joined.input == first["task"] and joined.turns == [kept["task"]]
    assert [m.content for m in joined.trace.user_messages] == [first["task"], kept["task"]]
    assert [t["final_text"] for t in joined.metadata["otel"]["turns"]] == [first["answer"], kept["answer"]]
    assert joined.trace.output == kept["answer"] and ran(joined) == expected(first["tool_runs"] + kept["tool_runs"])
    # (a run afresh on the same agent, its memory cleared, is a conversation of its own)
    assert alone.input == afresh["task"] and not alone.turns and ran(alone) == expected(afresh["tool_runs"])
