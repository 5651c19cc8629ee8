"""OpenAI Agents SDK runs read as they went, in OpenInference's recording (`otel`) and the SDK's own export alike.

Recorded by the real SDK (0.24.0; `responses_incomplete` 0.25.0) against the project's scripted loopback server, under OpenInference's
`OpenAIAgentsInstrumentor` and the SDK's export at once (`tests/frameworks/record_agents_faults.py`; the
folder's README says what each scenario is; `<scenario>.outcome.json` is what `Runner.run` returned or raised).
What was wrong before:

- A run error the SDK puts only on its `turn` span (a tool the agent does not have: `ModelBehaviorError`; a
  tripped input guardrail) was dropped: no `metadata.run_error`, the preamble beside the hallucinated call was
  the output, and that call, which never ran, looked like a call with no result.
- OpenInference's handoff calls with the arguments `"{}"` read as `arguments_missing`.
- A run whose output guardrail tripped had the blocked text as its output.
- A streamed run's calls all had the SDK's placeholder id `__fake_id__`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "agents-sdk-faults"
READERS = [("oi", "otel"), ("export", "openai-agents")]


def read(scenario: str, prefix: str, fmt: str) -> Case:
    """The one case format `fmt` makes of `<prefix>-<scenario>.jsonl`."""
    (case,) = extract_path(DATA / f"{prefix}-{scenario}.jsonl", fmt)
    assert isinstance(case, Case), case
    return case


def outcome(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.outcome.json").read_text())


@pytest.mark.parametrize(("prefix", "fmt"), READERS)
def test_a_tool_the_agent_lacks_ends_the_run_with_its_error_and_the_call_did_not_run(prefix: str, fmt: str) -> None:
    assert outcome("hallucinated_tool")["raised"].startswith("ModelBehaviorError: Tool get_wether not found")
    case = read("hallucinated_tool", prefix, fmt)
    assert case.metadata["run_error"].startswith("Tool not found: ") and "get_wether" in case.metadata["run_error"]
    assert case.trace is not None
    assert case.trace.output is None  # the run raised: "Let me check." was never an answer
    (step,) = case.trace.steps
    assert step.thought == "Let me check."
    (call,) = step.tool_calls  # the model did make the call: call metrics see it
    assert (call.id, call.name, call.arguments, call.result) == ("call_x1", "get_wether", {"city": "Paris"}, None)
    assert call.failed and "Tool not found: get_wether" in call.error  # it never ran: not a call with "no result"


@pytest.mark.parametrize(("prefix", "fmt"), READERS)
def test_a_tool_not_found_error_the_run_went_on_after_is_no_run_error(prefix: str, fmt: str) -> None:
    case = read("tool_not_found_returned", prefix, fmt)
    assert "run_error" not in case.metadata
    assert case.trace is not None
    assert case.trace.output == outcome("tool_not_found_returned")["final_output"]
    calls = [c for s in case.trace.steps for c in s.tool_calls]
    assert [(c.name, c.failed) for c in calls] == [("get_wether", True), ("get_weather", False)]
    assert calls[0].result == "Tool 'get_wether' not found."  # what the SDK told the model instead
    assert "Tool not found: get_wether" in calls[0].error


@pytest.mark.parametrize(("prefix", "fmt"), READERS)
def test_a_tripped_input_guardrail_is_the_runs_error(prefix: str, fmt: str) -> None:
    assert outcome("input_guardrail")["requests"] == 0
    case = read("input_guardrail", prefix, fmt)
    assert case.metadata["run_error"].startswith("Guardrail tripwire triggered: ") and "no_weather" in case.metadata["run_error"]
    assert case.trace is not None
    assert case.trace.steps == [] and case.trace.output is None
    assert case.input is None  # no span of either recording holds the user's text


@pytest.mark.parametrize(("prefix", "fmt"), READERS)
def test_a_tripped_output_guardrail_leaves_no_output(prefix: str, fmt: str) -> None:
    case = read("output_guardrail", prefix, fmt)
    assert "no_secrets" in case.metadata["run_error"]
    assert case.trace is not None
    assert case.trace.output is None  # the user got the exception, not the blocked text
    assert case.trace.steps[-1].output == "Paris is sunny, and my password is hunter2."  # still what the model said
    assert case.metadata["otel"]["turns"][-1]["intermediate_texts"] == ["Paris is sunny, and my password is hunter2."]


def test_openinference_handoff_calls_keep_their_empty_arguments_as_the_export_does() -> None:
    expected = [("call_h1", "transfer_to_weather", {}, False), ("call_h2", "get_weather", {"city": "Paris"}, False),
                ("call_h3", "transfer_to_triage", {}, False)]
    for prefix, fmt in READERS:  # the export always read them so; OpenInference's recording now does too
        case = read("handoff_back", prefix, fmt)
        assert case.trace is not None
        calls = [c for s in case.trace.steps for c in s.tool_calls]
        assert [(c.id, c.name, c.arguments, c.arguments_missing) for c in calls] == expected, prefix
        assert case.trace.output == outcome("handoff_back")["final_output"]


@pytest.mark.parametrize(("prefix", "fmt"), READERS)
def test_a_streamed_runs_calls_have_their_real_ids(prefix: str, fmt: str) -> None:
    case = read("streamed_parallel", prefix, fmt)
    assert case.trace is not None
    calls = [c for s in case.trace.steps for c in s.tool_calls]
    assert [(c.id, c.arguments, c.result) for c in calls] == [
        ("call_sp1", {"city": "Paris"}, "sunny, 21 C"), ("call_sp2", {"city": "Tokyo"}, "rainy, 14 C")]
    assert case.trace.output == outcome("streamed_parallel")["final_output"]


def test_a_streamed_call_without_call_id_has_no_id_rather_than_the_placeholder() -> None:
    from tracejudge.stages.extract.otel.conventions.agents_sdk import response_calls

    item = {"type": "function_call", "id": "__fake_id__", "name": "get_weather", "arguments": "{}"}
    got = response_calls([{"object": "response", "output": [item, {**item, "call_id": "call_2"}]}])
    assert [p["id"] for m in got or [] for p in m["parts"]] == [None, "call_2"]


@pytest.mark.parametrize(("prefix", "fmt", "tokens"), [("export", "openai-agents", (201, 21)), ("oi", "otel", (100, 10))])
def test_a_response_cut_off_counts_the_tokens_its_span_kept(prefix: str, fmt: str, tokens: tuple[int, int]) -> None:
    """A Responses API reply `status: incomplete` (max_output_tokens) after a tool round: `ModelBehaviorError` out of the
    run. From openai-agents 0.25.0 the failed `response` span keeps that response's usage, so the export's case counts both
    requests' tokens, as the server served them (100 + 101 in, 10 + 11 out); OpenInference (2.6.0) writes no token count
    on that span, so its case counts the first request's only."""
    assert outcome("responses_incomplete")["raised"].startswith("ModelBehaviorError: Responses stream ended with terminal event `response.incomplete`")
    case = read("responses_incomplete", prefix, fmt)
    assert case.trace is not None and case.trace.output is None
    # the error only the failed `response` span holds (no turn span does) ended the run
    assert case.metadata["run_error"] == "Error getting response: " + outcome("responses_incomplete")["raised"].removeprefix("ModelBehaviorError: ")
    assert [(c.name, c.arguments, c.result, c.failed) for c in case.trace.tool_calls()] == [("get_weather", {"city": "Paris"}, "sunny, 21 C", False)]
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (*tokens, 2)
