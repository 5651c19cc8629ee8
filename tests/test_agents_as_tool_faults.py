"""An OpenAI Agents SDK agent called as a tool (`Agent.as_tool`) whose run failed: the call reads the nested run's error.

Recorded by the real SDK, at once by its own export and by OpenInference, against the project's fake server
(`tests/frameworks/record_agents_as_tool_faults.py`; `tests/data/agents-as-tool-faults/README.md` says what each run
did and where its trace says it). What was wrong before: the call's error was the SDK's redacted mark ("Tool execution
failed. Error details are redacted."), and its result the SDK's generic text, though the nested agent's span records
why its run failed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case
from tracejudge.stages.judge.trace_text import nested_steps, render_steps

DATA = Path(__file__).parent / "data" / "agents-as-tool-faults"
SENT = "An error occurred while running the tool. Please try again."  # what the SDK answers the calling model with
# the nested run's error as each trace records it on the Translator's agent span (the export's `"<message>: <data>"`)
RECORDED = {"max-turns": 'Max turns exceeded: {"max_turns": 1}',
            "tool-raised": "Error in agent run: Error running tool glossary: Glossar für 'bewölkt' nicht erreichbar"}
READINGS = [(f"{who}-{s}.jsonl", fmt, s) for s in RECORDED for who, fmt in (("oi", "otel"), ("export", "openai-agents"))]


def outcome(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.outcome.json").read_text())


def read(name: str, fmt: str) -> Case:
    return only_case(DATA / name, fmt)


def test_the_recordings_hold_the_nested_error_only_on_the_agent_span() -> None:
    ran = outcome("max-turns")
    assert (ran["nested_error"], ran["call_result"], ran["requests"]) == ("MaxTurnsExceeded: Max turns (1) exceeded", SENT, 3)
    assert outcome("tool-raised")["nested_error"] == "UserError: Error running tool glossary: Glossar für 'bewölkt' nicht erreichbar"
    (line,) = (DATA / "export-max-turns.jsonl").read_text().splitlines()
    errors = {s["span_data"].get("name"): s["error"] for s in json.loads(line)["spans"] if s.get("error")}
    assert errors == {"Translator": {"message": "Max turns exceeded", "data": {"max_turns": 1}},
                      "translate": {"message": "Error running tool (non-fatal)",
                                    "data": {"tool_name": "translate", "error": "Tool execution failed. Error details are redacted."}}}


@pytest.mark.parametrize(("name", "fmt", "scenario"), READINGS)
def test_a_failed_agent_called_as_a_tool_gives_the_call_its_runs_error(name: str, fmt: str, scenario: str) -> None:
    case = read(name, fmt)
    assert case.trace is not None and case.trace.output == outcome(scenario)["final_output"]
    translate, glossary = case.trace.tool_calls()
    assert (translate.id, translate.name, translate.arguments, translate.result, translate.failed) == ("call_t1", "translate", {"input": "bewölkt"}, SENT, True)
    assert translate.error == f"Error running tool (non-fatal): {RECORDED[scenario]}"  # was: "…: Tool execution failed. Error details are redacted."
    assert (glossary.id, glossary.name, glossary.failed) == ("call_g1", "glossary", scenario == "tool-raised")
    assert case.metadata["nested_steps"] == [{"step": 1, "call": 0, "agent": "Translator"}]
    text = render_steps(case.trace.steps, nested=nested_steps(case))
    assert f" call 1: translate({{input:bewölkt}})\n  ran step 2 before returning\n  error: Error running tool (non-fatal): {RECORDED[scenario]}" in text
    assert "redacted" not in text and case.trace.steps[-1].error is None  # the calling agent's run went on and answered
