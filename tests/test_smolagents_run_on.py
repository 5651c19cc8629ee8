"""A smolagents agent run again on its memory (`reset=False`) after a run that reached `max_steps`: one conversation.

Recorded by the real smolagents against a scripted loopback server, by openinference-instrumentation-smolagents (format
`otel`) and as the agent's memory (format `smolagents`) at once (`tests/frameworks/record_smolagents_run_on.py` says what
each scenario runs). Before: under OpenInference the second run was a case of its own. Each run is a trace, joined when the
later run's first request replays the earlier run's last one; the last request of a run that ran out of steps is the
answer smolagents asked for itself, under a prompt of its own that no memory step keeps, so nothing replayed it (and
failed steps, replayed as their errors alone, name no call id that could link them). Now the request before it is the one
replayed, and both formats read one case with both turns.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from framework_truth import only_case

DATA = Path(__file__).parent / "data" / "smolagents-run-on"
FORMATS = {"oi": "otel", "memory": "smolagents"}


@pytest.mark.parametrize("name", ["tool", "tool-answered"])
@pytest.mark.parametrize("kind", FORMATS)
def test_a_run_on_the_same_memory_is_the_next_turn_of_one_case(name: str, kind: str) -> None:
    case = only_case(DATA / f"{name}.{kind}.jsonl", FORMATS[kind])
    truth = json.loads((DATA / f"{name}.truth.json").read_text())
    assert [m.content for m in case.trace.user_messages] == truth["tasks"]
    assert (case.input, case.turns) == (truth["tasks"][0], truth["tasks"][1:])
    assert case.trace.output == truth["returned"][-1]
    assert case.trace.usage.requests == truth["requests"]
    assert sum(len(s.tool_calls) for s in case.trace.steps) == len(truth["tool_runs"])


@pytest.mark.parametrize("name", ["tool", "tool-answered"])
def test_both_formats_read_the_same_conversation(name: str) -> None:
    oi, memory = (only_case(DATA / f"{name}.{kind}.jsonl", fmt) for kind, fmt in FORMATS.items())
    assert [(m.step, m.content) for m in oi.trace.user_messages] == [(m.step, m.content) for m in memory.trace.user_messages]
    assert [(s.output, s.error, [c.name for c in s.tool_calls]) for s in oi.trace.steps] == \
        [(s.output, s.error, [c.name for c in s.tool_calls]) for s in memory.trace.steps]
    errors = [s.error for s in oi.trace.steps if s.error]
    assert errors == (["AgentMaxStepsError: Reached max steps."] if name == "tool" else [])
