"""OpenAI Agents SDK runs with a failed MCP tool, a tool a guardrail kept from running, a run no request of which was
answered, and content hidden: read as the application saw them, alike under the SDK's export and OpenInference.

Recorded by the real SDK (0.24.0) against the project's loopback fake server, with a real MCP server over stdio, under
OpenInference's `OpenAIAgentsInstrumentor` (`oi-<s>.jsonl`, format `otel`) and the SDK's own export (`export-<s>.jsonl`,
format `openai-agents`) at once: `tests/frameworks/record_agents_tool_guards.py`, whose docstring and
`tests/data/agents-tool-guards/README.md` say what each scenario did; `<s>.truth.json` is what the application saw.

Before: the MCP tool that raised `ToolError` read as a success (the server's `isError` text as its result, no error);
the run whose only request the provider failed, and the one an input guardrail stopped before any request
(`agents-sdk-faults/input_guardrail`), read 0 input and 0 output tokens under OpenInference, unknown under the export;
OpenInference's requests without input (the SDK's `trace_include_sensitive_data=False`) were warned of as
OpenInference's own `OPENINFERENCE_HIDE_INPUTS`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from _agents_recordings import KINDS, only_case, truth_in
from tracejudge.stages.extract import said_once

DATA = Path(__file__).parent / "data"
HERE = DATA / "agents-tool-guards"


def truth(scenario: str) -> dict[str, Any]:
    return truth_in(HERE, scenario)


@pytest.mark.parametrize("kind, fmt", KINDS)
def test_an_mcp_tool_that_raised_reads_failed_with_the_servers_text(kind: str, fmt: str) -> None:
    """`refund_order` raised `ToolError`: the server answered `isError` with `Error executing tool refund_order: <text>`,
    which the SDK sent the model as the output; that text is the call's error. `cancel_order` returned its own
    `isError` result: no trace keeps the flag, and its text is no failure's wording, so it reads as its output."""
    want = truth("mcp_errors")
    case = only_case(HERE / f"{kind}-mcp_errors.jsonl", fmt)
    got = [(c.id, c.name, c.arguments, c.result) for c in case.trace.tool_calls()]
    assert got == [(c["id"], c["name"], c["arguments"], c["sent_to_model"]) for c in want["calls"]]
    errors = {c.name: c.error for c in case.trace.tool_calls()}
    refund = next(c for c in want["calls"] if c["name"] == "refund_order")
    assert refund["server_is_error"] and errors["refund_order"] == refund["sent_to_model"]
    assert errors["order_status"] is None and errors["cancel_order"] is None  # (the latter: in no trace, README)
    assert case.trace.output == want["output"] and case.metadata.get("run_error") is None


@pytest.mark.parametrize("kind, fmt", KINDS)
def test_a_tool_input_guardrails_rejection_is_in_no_trace(kind: str, fmt: str) -> None:
    """The guardrail's `reject_content` message is the `function` span's output, with no error and no guardrail span:
    nothing tells it from the tool's own output, so it reads as that (README)."""
    want = truth("tool_guardrail")
    rejected = next(c for c in want["calls"] if not c["body_ran"])
    (call,) = [c for c in only_case(HERE / f"{kind}-tool_guardrail.jsonl", fmt).trace.tool_calls() if c.id == rejected["id"]]
    assert (call.result, call.error) == (rejected["sent_to_model"], None)


@pytest.mark.parametrize("folder, scenario", [("agents-tool-guards", "provider_error"), ("agents-sdk-faults", "input_guardrail")])
def test_a_run_no_request_of_which_was_answered_has_unknown_tokens_under_both(folder: str, scenario: str) -> None:
    read = {kind: only_case(DATA / folder / f"{kind}-{scenario}.jsonl", fmt) for kind, fmt in KINDS}
    for kind, case in read.items():
        usage = case.trace.usage
        assert (usage.input_tokens, usage.output_tokens) == (None, None), kind
    assert read["oi"].trace.usage.requests == read["export"].trace.usage.requests
    assert read["oi"].metadata["run_error"] == read["export"].metadata["run_error"]


def test_openinference_names_the_sdks_setting_when_the_sdk_hid_the_content(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """`trace_include_sensitive_data=False` leaves no `input.value` at all; OpenInference's `OPENINFERENCE_HIDE_INPUTS`
    writes `__REDACTED__`: the warning names the setting the spans show."""
    monkeypatch.setattr(said_once, "_SAID", set())  # (said once per file in a process)
    def warning(path: Path) -> str:
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            only_case(path, "otel")
        (said,) = [r.getMessage() for r in caplog.records if "without any input message" in r.getMessage()]
        return said

    sdk = warning(DATA / "agents-sensitive-data" / "oi-hidden_chat.jsonl")
    assert "trace_include_sensitive_data=False" in sdk and "content capture of inputs off" not in sdk
    assert truth("hide_inputs")["openinference_hide_inputs"]
    oi = warning(HERE / "oi-hide_inputs.jsonl")
    assert "OPENINFERENCE_HIDE_INPUTS" in oi and "trace_include_sensitive_data" not in oi
