"""An OpenAI Agents SDK function tool that ran out of its `timeout`, read as a failed call.

Recorded by the real SDK (0.24.0) against the project's loopback fake server under OpenInference's
`OpenAIAgentsInstrumentor` (`oi-<s>.jsonl`, format `otel`) and the SDK's own export (`export-<s>.jsonl`, format
`openai-agents`) at once, and by OpenLLMetry's openai-agents instrumentation (`tl-<s>.jsonl`, format `otel`):
`tests/frameworks/record_agents_tool_timeout.py` (its docstring and `tests/data/agents-tool-timeout/README.md` say what
each scenario did). `<s>.truth.json` is what the application saw: the tool's body was cancelled after 0.3 s.

Under the default `timeout_behavior="error_as_result"` the SDK sends the model its message `Tool 'lookup_order' timed
out after 0.3 seconds.` as the call's output and records no error on the span. Before, the call read as one that
succeeded with that text; now it is failed, the message its error (and still its result: what the model got).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel.conventions.agents_outputs import timeout_error

DATA = Path(__file__).parent / "data" / "agents-tool-timeout"
KINDS = [("export", "openai-agents"), ("oi", "otel"), ("tl", "otel")]
MESSAGE = "Tool 'lookup_order' timed out after 0.3 seconds."


def truth(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.truth.json").read_text())


def only_case(path: Path, fmt: str) -> Case:
    (case,) = extract_path(path, fmt)
    assert isinstance(case, Case), case
    return case


@pytest.mark.parametrize("scenario", ["timeout_chat", "timeout_responses", "timeout_stop"])
@pytest.mark.parametrize("kind, fmt", KINDS)
def test_a_timed_out_call_is_failed_with_the_sdks_message(scenario: str, kind: str, fmt: str) -> None:
    want = truth(scenario)
    assert want["cancelled"] == ["lookup_order"]
    case = only_case(DATA / f"{kind}-{scenario}.jsonl", fmt)
    got = case.trace.tool_calls()
    assert [(c.name, c.arguments) for c in got] == [(c["name"], c["arguments"]) for c in want["calls"]]
    assert [(c.result, c.error) for c in got] == [(c["result"], c["error"]) for c in want["calls"]]
    assert got[0].error == MESSAGE and got[0].failed
    # what the trace cannot give: the export's Responses API text, OpenLLMetry's Chat Completions outputs
    unknown = (kind == "export" and scenario == "timeout_responses") or (kind == "tl" and scenario != "timeout_responses")
    assert case.trace.output == (None if unknown else want["output"])  # timeout_stop: the SDK's message is the run's output
    assert case.metadata.get("run_error") is None


@pytest.mark.parametrize("kind, fmt", KINDS)
def test_a_timeout_that_raised_fails_the_call_and_the_run(kind: str, fmt: str) -> None:
    """`timeout_behavior="raise_exception"`: the SDK records the error on the span and the run raises (read as before)."""
    want = truth("timeout_raise")
    assert want["raised"] == f"ToolTimeoutError: {MESSAGE}"
    case = only_case(DATA / f"{kind}-timeout_raise.jsonl", fmt)
    (call,) = case.trace.tool_calls()
    assert call.name == "lookup_order" and call.result is None and MESSAGE in call.error
    assert case.trace.output is None and MESSAGE in case.metadata["run_error"]


def test_only_the_sdks_own_message_for_that_tool_is_a_timeout() -> None:
    assert timeout_error("lookup_order", MESSAGE) == MESSAGE
    assert timeout_error("lookup_order", "Tool 'lookup_order' timed out after 2 seconds.") is not None
    assert timeout_error("billing.lookup_order", MESSAGE) == MESSAGE  # a namespaced tool's span name
    for name, output in [("get_weather", MESSAGE), ("lookup_order", MESSAGE + " Retry later."), ("lookup_order", "timed out"),
                         ("lookup_order", None), (None, MESSAGE), ("lookup_order", {"error": MESSAGE})]:
        assert timeout_error(name, output) is None, (name, output)
