"""A smolagents managed agent recorded by openinference-instrumentation-smolagents is nested under the call that ran it.

Recordings: `tests/data/trace-faults/oi-smolagents-managed{,-code}.jsonl` (`tests/frameworks/record_trace_faults.py`,
smolagents 1.26.0, openinference-instrumentation-smolagents 0.1.43): a manager (`ToolCallingAgent`, or a `CodeAgent`
whose code calls the tools) runs `get_time` and its managed agent `researcher`, which calls `get_weather` and answers.
The instrumentation writes no TOOL span for the `researcher` call: the managed run is an AGENT span `researcher.run`
under the manager's step. Before, the researcher's requests were plain steps of the manager (no
`metadata.nested_steps`, no sub-agent label in the judge prompt), and the `researcher` call had no result.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.judge.trace_text import nested_steps, render_steps

DATA = Path(__file__).parent / "data" / "trace-faults"
ASK = "What is the weather in Paris, and what time is it?"
ANSWER = "Paris is sunny, 21 C; it is 12:00 UTC."
REPORT = "Here is the final answer from your managed agent 'researcher':\nParis: sunny, 21 C"


def extract(path: Path) -> Case:
    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=path, format="otel", options={})
    (case,) = [extract_record(raw, fmt, fmt.prepare(ds)) for raw in fmt.read(ds)]
    assert isinstance(case, Case), case
    return case


@pytest.mark.parametrize("name", ["oi-smolagents-managed", "oi-smolagents-managed-code"])
def test_a_managed_agents_steps_follow_the_call_that_ran_it(name: str) -> None:
    case = extract(DATA / f"{name}.jsonl")
    outcome = json.loads((DATA / f"{name}.outcome.json").read_text())
    trace = case.trace
    calls = trace.tool_calls()
    assert [c.name for c in calls] == ["get_time", "researcher", "get_weather"]
    assert calls[1].error is None
    if name == "oi-smolagents-managed":
        assert calls[1].arguments == {"task": "Find the weather in Paris."} and calls[1].id == "call_m2"
        # the report smolagents returned, as the manager's model saw it beside `get_time`'s "12:00Z"
        assert calls[1].result == REPORT and trace.steps[0].tool_calls[0].result == "12:00Z"
    else:
        assert calls[1].arguments == {"task": "Find the weather in Paris."}  # (the literal the code passed)
        assert calls[1].result == "Paris: sunny, 21 C"  # the code got the report as a value, which no span records
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 1, "agent": "researcher"}, {"step": 2, "call": 1, "agent": "researcher"}]
    # the researcher's prompt ("You're a helpful agent named 'researcher' …") is the call's, not a user turn
    assert [(m.step, m.content) for m in trace.user_messages] == [(0, ASK)] and case.turns == []
    assert trace.output == outcome["final_output"] == ANSWER and trace.usage.requests == outcome["requests"] == 4
    (turn,) = case.metadata["otel"]["turns"]
    assert turn["final_text"] == ANSWER and "Paris: sunny, 21 C" not in turn["intermediate_texts"]
    text = render_steps(trace.steps, nested=nested_steps(case))
    assert text.count("[sub-agent researcher, inside call 2: researcher]") == 2
    assert "ran steps 2–3 before returning" in text
    assert text.index("call 2: researcher") < text.index("call 3: get_weather") < text.index("Step 4:")
