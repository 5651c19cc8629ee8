"""OpenAI Agents SDK runs that end at a tool call, and the export's Responses API requests without text.

Recorded by the real SDK (0.24.0) against the project's scripted loopback server, under the SDK's own
export and OpenInference's `OpenAIAgentsInstrumentor` at once
(`tests/frameworks/record_agents_stop.py`; its README says what each scenario is):

- `tool_use_behavior="stop_on_first_tool"` / `StopAtTools`: `Runner.run` returns the tool's output as
  `final_output` (the `<scenario>.outcome.json` files hold what it returned); the case's output was the
  text the model wrote beside the call (its "preamble"), or nothing at all under the Responses API.
- The SDK's default model (Responses API) is exported as `response` spans holding only a response id and
  usage: a case got no input/output and nothing said why.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from framework_truth import FRAMEWORKS, extract, only_case

STOP = Path(__file__).parent / "data" / "openai-agents-stop"  # not under data/frameworks: that folder holds the five-task recordings only
STOPPED = ["stop_preamble", "stop_at_tools", "stop_parallel", "stop_failing", "stop_handoff", "stop_responses"]
# The text the model wrote beside the call the run stopped at (chat completions, and OpenInference's Responses spans).
PREAMBLE = {"stop_preamble": "Let me look that up for you.", "stop_at_tools": "Now converting.", "stop_parallel": "Checking both cities.",
            "stop_failing": "Cancelling it now.", "stop_handoff": "Checking Paris.", "stop_responses": "Let me look that up for you."}
STOP_TOOL = {"stop_at_tools": "convert_temperature", "stop_failing": "cancel_order"}


def final_output(scenario: str) -> Any:
    """What `Runner.run` returned as `final_output` (`None` when it raised)."""
    return json.loads((STOP / f"{scenario}.outcome.json").read_text()).get("final_output")


@pytest.mark.parametrize("scenario", STOPPED)
def test_export_run_stopped_at_a_tool_outputs_the_tools_output(scenario: str) -> None:
    case = only_case(STOP / f"export-{scenario}.jsonl", "openai-agents")
    assert case.trace is not None
    assert case.trace.output == final_output(scenario)
    turn = case.metadata["otel"]["turns"][-1]
    assert turn["final_text"] == final_output(scenario)
    if scenario != "stop_responses":  # the export keeps no Responses API text: there is no preamble to see
        assert turn["intermediate_texts"][-1] == PREAMBLE[scenario]  # said, but not the answer
    agent = "Weather" if scenario == "stop_handoff" else "Assistant"
    assert case.metadata["openai_agents"]["stopped_at_tool"] == [{"agent": agent, "tool": STOP_TOOL.get(scenario, "get_weather")}]
    # the call the run stopped at is still a call the agent made, with its result
    last_calls = case.trace.steps[-1].tool_calls
    assert last_calls and last_calls[0].name == STOP_TOOL.get(scenario, "get_weather")


def test_export_outputs_of_stopped_failed_and_normal_runs() -> None:
    """Every recorded run against what the SDK returned: only runs that stopped at a tool changed."""
    got = {s: only_case(STOP / f"export-{s}.jsonl", "openai-agents").trace.output for s in [*STOPPED, "max_turns_preamble", "responses_normal"]}
    want = {s: final_output(s) for s in STOPPED}
    want["max_turns_preamble"] = None  # the run raised MaxTurnsExceeded: its preamble is no output
    want["responses_normal"] = None  # answered in text by a Responses API request: the export kept no text
    assert got == want
    failed = only_case(STOP / "export-max_turns_preamble.jsonl", "openai-agents")
    assert failed.metadata["run_error"].startswith("Max turns exceeded")
    assert "stopped_at_tool" not in failed.metadata["openai_agents"]
    for path in sorted((FRAMEWORKS / "openai-agents-export").glob("*.jsonl")):  # normal runs: output as the SDK returned it
        truth = json.loads(path.with_name(path.name.split(".")[0] + ".truth.json").read_text())
        for case in extract(path, "openai-agents"):
            assert case.trace.output == truth["output"], path.name
            assert "stopped_at_tool" not in case.metadata["openai_agents"], path.name


def _oi_cases(path: Path) -> list[Any]:
    """The `otel` cases of an OpenInference recording."""
    return extract(path, "otel")


def test_openinference_stop_answers_give_the_runs_final_output() -> None:
    got = {s: _oi_cases(STOP / f"oi-{s}.jsonl")[0].trace.output for s in [*STOPPED, "max_turns_preamble", "responses_normal"]}
    want = {s: final_output(s) for s in [*STOPPED, "responses_normal"]} | {"max_turns_preamble": None}
    assert got == want
    (case,) = _oi_cases(STOP / "oi-stop_responses.jsonl")
    assert case.metadata["otel"]["turns"][-1]["intermediate_texts"] == [PREAMBLE["stop_responses"]]
    for path in sorted((FRAMEWORKS / "openinference-openai-agents").glob("*.jsonl")):  # normal runs unchanged
        truth = json.loads(path.with_name(path.stem + ".truth.json").read_text())
        assert [c.trace.output for c in _oi_cases(path)][-1] == truth["output"], path.name


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name.startswith("tracejudge.extract.openai_agents")]


def test_responses_api_export_without_text_is_warned_once_per_file(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="tracejudge")
    path = STOP / "export-responses_normal.jsonl"
    trace_id = json.loads(path.read_text())["trace"]["id"]
    (case,) = extract(path, "openai-agents")
    assert case.input is None and case.trace.output is None  # unknown, and now said
    (said,) = _warnings(caplog)
    assert said.startswith(f"openai-agents: {path}:1: trace {trace_id}: ")
    assert "Responses API" in said and "without their text" in said and "input and output are unknown" in said
    assert "OpenAIAgentsInstrumentor" in said and "chat_completions" in said


def test_many_textless_traces_are_one_warning_and_a_count(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Two Responses API traces and a chat one in a file (one trace per line), and the same as the exporter's batch items."""
    caplog.set_level(logging.WARNING, logger="tracejudge")
    lines = [(STOP / f"export-{s}.jsonl").read_text() for s in ("stop_preamble", "responses_normal", "stop_responses")]
    per_line = tmp_path / "traces.jsonl"
    per_line.write_text("".join(lines))
    batches = tmp_path / "batches.jsonl"  # `{"data": [trace, span, ...]}` as BackendSpanExporter posts them
    batches.write_text("".join(json.dumps({"data": [d["trace"], *d["spans"]]}) + "\n" for d in map(json.loads, lines)))
    for path in (per_line, batches):
        caplog.clear()
        cases = extract(path, "openai-agents")
        assert len(cases) == 3
        first, count = _warnings(caplog)
        assert first.startswith(f"openai-agents: {path}:2: trace {json.loads(lines[1])['trace']['id']}: ")
        assert count.startswith(f"openai-agents: {path}: 2 traces in all (the first at line 2)")
