"""OpenAI Agents SDK runs exported through Langfuse's SDK (OpenInference's instrumentor writing, Langfuse's processor exporting).

Recorded by the real SDK (0.24.0), openinference-instrumentation-openai-agents (2.6.0) and Langfuse's Python SDK (5.2.0)
against the project's scripted loopback server (`tests/frameworks/record_agents_langfuse.py`; `tests/data/agents-langfuse/
README.md` says what each scenario is). `<s>.truth.json` is what `Runner.run` returned: the calls with what the SDK sent
the model, the agents in the order they acted, the output.

Langfuse's span processor marks the application's root span, here OpenInference's span for the SDK's trace (`Agent
workflow`), with `langfuse.internal.is_app_root`. Before, that mark made the span no longer read as the trace's span but
as an agent's: every turn listed `Agent workflow` among its agents (`["Agent workflow", "Assistant"]` for one agent).
Now a turn's agents are the SDK's agents, as without Langfuse.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import assert_truth, only_case, turn_agents

DATA = Path(__file__).parent / "data" / "agents-langfuse"
SCENARIOS = ["single", "handoff"]


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_turns_agents_are_the_sdks_agents(name):
    assert turn_agents(DATA / f"lf-{name}.jsonl", "otel") == [[truth(name)["agents"]]]


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_run_reads_as_the_application_saw_it(name):
    case = only_case(DATA / f"lf-{name}.jsonl", "otel")
    want = truth(name)
    assert_truth(case, want)  # input, user turns, each call's arguments, result and error, output
    assert case.metadata.get("run_error") is None
