"""OpenAI Agents SDK runs traced with `RunConfig(trace_include_sensitive_data=False)`: the export says what it left out.

Recorded by the real SDK (0.24.0) against the project's loopback fake server, under OpenInference's
`OpenAIAgentsInstrumentor` (`oi-<s>.jsonl`, format `otel`) and the SDK's own export (`export-<s>.jsonl`, format
`openai-agents`) at once: `tests/frameworks/record_agents_sensitive_data.py` (the folder's README says what each scenario
did; `<s>.truth.json` is what the application got). The SDK exports its requests' messages and its tools' arguments
and outputs as `null`. Before, format `openai-agents` read such a trace as a case with no input, no output and calls
with no arguments or result, silently, where format `otel` warns of OpenInference's requests recorded without input;
now a warning says, once per file, what was left out, why, and how to keep it. Nothing is made up in its place.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case
from tracejudge.stages.extract import said_once

DATA = Path(__file__).parent / "data" / "agents-sensitive-data"
SAID = "were recorded without their input and output"


def truth(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.truth.json").read_text())


def read(path: Path, fmt: str) -> list[Case]:
    cases = extract_path(path, fmt)
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def warnings_of(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and text in r.getMessage()]


@pytest.mark.parametrize("scenario", ["hidden_chat", "hidden_responses"])
def test_the_export_reads_what_it_kept_and_warns_of_what_it_left_out(scenario: str, caplog: pytest.LogCaptureFixture,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(said_once, "_SAID", set())  # (said once per file in a process)
    want = truth(scenario)
    assert want["trace_include_sensitive_data"] is False
    path = DATA / f"export-{scenario}.jsonl"
    with caplog.at_level(logging.WARNING):
        (case,) = read(path, "openai-agents")
    assert case.trace is not None
    # what the export kept: the calls by name, on the request that asked; nothing is made up for what it did not
    assert [c.name for c in case.trace.tool_calls()] == [c["name"] for c in want["calls"]]
    assert all(c.arguments_missing and c.result is None and c.error is None for c in case.trace.tool_calls())
    assert (case.input, case.trace.output) == (None, None)
    (said,) = warnings_of(caplog, SAID)
    trace_id = json.loads(path.read_text().splitlines()[0])["trace"]["id"]
    assert said.startswith(f"openai-agents: {path}:1: trace {trace_id}: ")
    assert "2 of 2 tool call(s) (`function` spans)" in said and "trace_include_sensitive_data=False" in said
    # a Chat Completions request's messages are left out too; a Responses API request's never are in the export
    assert ("2 of 2 model request(s) (`generation` spans)" in said) == (scenario == "hidden_chat")
    assert "the case's `input` is then null" in said and "Nothing is made up" in said
    with caplog.at_level(logging.WARNING):
        read(path, "openai-agents")  # (a run reads a file more than once: said once)
    assert len(warnings_of(caplog, SAID)) == 1


def test_openinference_reading_the_same_run_says_its_requests_lack_their_input(caplog: pytest.LogCaptureFixture,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(said_once, "_SAID", set())
    with caplog.at_level(logging.WARNING):
        (case,) = read(DATA / "oi-hidden_chat.jsonl", "otel")
    assert (case.input, case.trace.output if case.trace else None) == (None, None)
    assert warnings_of(caplog, "2 of 2 model request(s) were recorded without any input message")


def test_a_file_of_several_such_traces_says_it_once_and_counts_them(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "export.jsonl"
    path.write_text("".join((DATA / f"export-{s}.jsonl").read_text() for s in ["hidden_chat", "hidden_responses"]))
    with caplog.at_level(logging.WARNING):
        assert len(read(path, "openai-agents")) == 2
    assert len(warnings_of(caplog, SAID)) == 1
    (count,) = warnings_of(caplog, "traces in all")
    assert count.startswith(f"openai-agents: {path}: 2 traces in all (the first at line 1) were recorded without their content")


def test_a_trace_with_its_content_says_nothing_of_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        read(Path(__file__).parent / "data" / "agents-tool-outputs" / "export-function_outputs.jsonl", "openai-agents")
        read(Path(__file__).parent / "data" / "agents-approval" / "paused.export.jsonl", "openai-agents")  # (a held call: input, no output)
    assert not warnings_of(caplog, SAID) and not warnings_of(caplog, "without their content")
