"""OpenAI Agents SDK tools that return the SDK's structured outputs, MCP servers' tools among them, read as the model got them.

Recorded by the real SDK (0.24.0) against the project's loopback fake server, with a real MCP server (`mcp` 2.x, over
stdio and over streamable HTTP on 127.0.0.1), under OpenInference's `OpenAIAgentsInstrumentor` (`oi-<s>.jsonl`,
format `otel`) and the SDK's own export (`export-<s>.jsonl`, format `openai-agents`) at once, and by OpenLLMetry's
openai-agents instrumentation (`tl-<s>.jsonl`, format `otel`): `tests/frameworks/record_agents_tool_outputs.py`, whose
docstring and `tests/data/agents-tool-outputs/README.md` say what each scenario did. `<s>.truth.json` is what the
application got: each call's result as the SDK sent it to the model.

The SDK turns an MCP tool's text into `{"type": "text", "text": …}`, a structured output like a function tool's
`ToolOutputText`, and shows the model the text. Before, a call's result was what the trace made of the returned value:
the export's `str()` of it (`"{'type': 'text', 'text': 'shipped'}"`, `"type='text' text='note about cats'"`,
`"[ToolOutputText(type='text', text='first'), …]"`), OpenInference's JSON mapping or list of `str()`s, OpenLLMetry's
JSON mapping or the Responses API's list of `input_text` items. Now it is the text (several: one a line), or, for a
text and an image, the items as mappings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case
from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.conventions.agents_outputs import tool_output

DATA = Path(__file__).parent / "data" / "agents-tool-outputs"
CHAT = ["mcp_stdio", "function_outputs"]
RESPONSES = ["mcp_http", "function_outputs_responses"]
# what the pydantic models of the SDK's outputs are to OpenLLMetry 0.62.4: a value it cannot record, and no span
TL_DROPPED = {"note_text", "note_list", "chart"}


def truth(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.truth.json").read_text())


def only_case(path: Path, fmt: str) -> Case:
    (case,) = extract_path(path, fmt)
    assert isinstance(case, Case), case
    return case


def same_result(have: Any, want: Any) -> bool:
    """The result read is the one the model got; `plain_dict`'s `str()` of a mapping is that mapping to OpenInference,
    which records it as JSON (no structured output: the reading every other mapping has)."""
    return have == want or (isinstance(want, str) and want.startswith("{'") and python_literal(want) == have)


def check_calls(case: Case, want: list[dict[str, Any]], ids: bool, skip: frozenset[str] = frozenset(), mcp_known: bool = True) -> None:
    got = [c for c in case.trace.tool_calls() if c.name not in skip]
    assert [c.name for c in got] == [c["name"] for c in want]
    for have, call in zip(got, want):
        assert have.arguments == call["arguments"], have.name
        assert same_result(have.result, call["result"]), (have.name, have.result, call["result"])
        # the SDK raised none; an MCP server's `isError` text (its server's wording for a tool that raised) is the error,
        # where the trace says the tool is an MCP server's (not OpenLLMetry's: `test_agents_tool_guards.py`)
        failed = call.get("server_is_error") and call["result"].startswith("Error executing tool ")
        assert have.error == (call["result"] if failed and mcp_known else None), have.name
        if ids:
            assert have.id == call["id"], have.name


@pytest.mark.parametrize("scenario", CHAT + RESPONSES)
@pytest.mark.parametrize("kind, fmt", [("export", "openai-agents"), ("oi", "otel")])
def test_structured_tool_outputs_read_as_what_the_model_got(scenario: str, kind: str, fmt: str) -> None:
    want = truth(scenario)
    case = only_case(DATA / f"{kind}-{scenario}.jsonl", fmt)
    textless = kind == "export" and scenario in RESPONSES  # the export keeps no Responses API text, nor call ids
    check_calls(case, want["calls"], ids=not textless)
    assert case.input == (None if textless else want["input"])
    assert case.trace.output == (None if textless else want["output"])


def test_an_mcp_tool_the_server_failed_is_its_text_as_the_sdk_passed_it_on() -> None:
    """The server answered `isError` with its text; the SDK sent the model that text as the output and recorded no error:
    that text, the MCP Python SDK server's for a tool that raised, is the call's error where the trace shows the tool is
    an MCP server's (the export's `mcp_data`, OpenInference's `mcp_tools` span), not under OpenLLMetry (it shows neither)."""
    (failed,) = [c for c in truth("mcp_stdio")["calls"] if c["server_is_error"]]
    assert failed["name"] == "refund_order" and failed["error"] is None
    for kind, fmt in [("export", "openai-agents"), ("oi", "otel"), ("tl", "otel")]:
        (call,) = [c for c in only_case(DATA / f"{kind}-mcp_stdio.jsonl", fmt).trace.tool_calls() if c.name == "refund_order"]
        error = None if kind == "tl" else "Error executing tool refund_order"
        assert (call.result, call.error) == ("Error executing tool refund_order", error), kind


@pytest.mark.parametrize("scenario", CHAT + RESPONSES)
def test_openllmetry_reads_them_alike(scenario: str) -> None:
    """OpenLLMetry's instrumentation records a mapping as JSON and no span for the SDK's models, and no output of a Chat
    Completions request: the calls (ids, arguments) are in the request's output, or in the next request's input, which
    replays the request's reply (Chat Completions), their outputs in the next request's input alike."""
    want = truth(scenario)
    case = only_case(DATA / f"tl-{scenario}.jsonl", "otel")
    charts = [c for c in case.trace.tool_calls() if c.name == "chart"]
    if scenario == "function_outputs_responses":  # the chart's text and image, as the next request's input holds them
        assert [i.get("text") for i in charts[0].result] == ["chart of cats", None]
    elif scenario == "function_outputs":  # a Chat Completions tool message holds text only: the SDK sent the model the caption
        assert [(c.id, c.arguments, c.result) for c in charts] == [("c4", {"topic": "cats"}, "chart of cats")]
    check_calls(case, [c for c in want["calls"] if c["name"] != "chart"], ids=True, skip=frozenset({"chart"}), mcp_known=False)
    assert case.trace.output == (want["output"] if scenario in RESPONSES else None)  # (no request replays the answer)


def test_openllmetry_chat_completions_calls_without_a_span_are_read_off_the_replay() -> None:
    """The three calls whose tools returned the SDK's models have no span: before, they were lost (2 of 5 calls read)."""
    case = only_case(DATA / "tl-function_outputs.jsonl", "otel")
    (step, last) = case.trace.steps
    assert [c.name for c in step.tool_calls] == [c["name"] for c in truth("function_outputs")["calls"]]  # the request that asked
    assert {c.name for c in step.tool_calls} >= TL_DROPPED and last.tool_calls == []


def test_other_outputs_are_left_as_recorded() -> None:
    for value in ["sunny, 21 C", "{'topic': 'cats', 'n': 3}", {"type": "text"}, {"type": "json", "text": "x"}, ["a", "b"], [],
                  "type='text'", "type='text' text=3", "[ToolOutputText(text=open('x').read())]", {"type": "image"}, None, ""]:
        assert tool_output(value) == value, value
    assert tool_output("type='image' image_url=None file_id='file_1' detail=None") == [{"type": "image", "file_id": "file_1"}]
    assert tool_output('[{"type": "text", "text": "a"}, "type=\'text\' text=\'b\'"]') == "a\nb"
