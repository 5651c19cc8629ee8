"""The check every recording of a LangGraph run that ran out of steps gets (`tests/data/langgraph-out-of-steps`,
`tests/data/langgraph-out-of-steps-stores`), against its `<scenario>.truth.json` (`record_langgraph_out_of_steps.py`)."""

from __future__ import annotations

import json
from typing import Any

from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.conventions.langgraph_steps import OUT_OF_STEPS, recursion_unrun


def assert_calls_ran_or_not_run(case: Case, want: dict[str, Any]) -> None:
    """Every call the model asked for reads as it ran (the tool's log) or, never run, failed as not run (why: the react
    agent's stand-in or the graph's `GraphRecursionError`); Oslo and Rome never ran; one step per request; the question.
    (The asserts name what they compared: pytest rewrites the asserts of test modules only.)"""
    assert case.trace is not None
    ran = {(r["name"], json.dumps(r["arguments"])): r["result"] for r in want["tool_runs"]}
    why = OUT_OF_STEPS if want["raised"] is None else recursion_unrun(case.metadata.get("run_error"))
    expected = [(c["id"], c["name"], c["arguments"], ran.get((c["name"], json.dumps(c["arguments"]))),
                 None if (c["name"], json.dumps(c["arguments"])) in ran else why) for c in want["asked"]]
    got = [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]
    assert got == expected, (got, expected)
    assert sum(c.error is not None for c in case.trace.tool_calls()) == 2, got  # Oslo and Rome never ran
    assert len(case.trace.steps) == want["requests"] == case.trace.usage.requests, (len(case.trace.steps), want["requests"], case.trace.usage)
    assert case.input == want["question"], case.input
