"""Arguments recorded as empty text: a tool span's is not JSON, a provider's is a call without arguments.

OpenAI sends `function.arguments: ""` for a strict tool that takes no parameters (and streams `""` first), and the
model's own tool-call part keeps that; an OTel tool span's `gen_ai.tool.call.arguments` is JSON text by definition,
and pydantic-evals' ArgumentCorrectness fails `""` there ("could not be parsed as JSON"). The parity with
pydantic-evals on the span alone is in `test_pydantic_evals_agentic_parity.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_extract_otel_cases import ARGS, OP, OUT, TOOL, export, one, span
from tracejudge.core.records import Case, ToolCall
from tracejudge.core.registry import build_metric

_NO_ARGS = {"type": "ArgumentCorrectness", "tool_name": "list_orders", "expected_arguments": {}, "match_mode": "exact"}


def _otel(tmp_path: Path, part_args: str | None, span_args: str = "") -> Case:
    """An agent run whose tool span recorded `span_args`; `part_args`: the arguments of the model's tool-call part for it."""
    spans = [span("root", None, 0, "agent run", **{OP: "invoke_agent", "gen_ai__agent__name": "agent"})]
    if part_args is not None:
        part = {"type": "tool_call", "id": "call_1", "name": "list_orders", "arguments": part_args}
        spans.append(span("m1", "root", 1, "chat gpt-5", **{OP: "chat", "gen_ai__request__model": "gpt-5",
                                                            OUT: json.dumps([{"role": "assistant", "parts": [part]}])}))
    spans.append(span("t1", "root", 2, "execute_tool list_orders", **{OP: "execute_tool", TOOL: "list_orders",
                                                                     "gen_ai__tool__call__id": "call_1", ARGS: span_args}))
    return one(tmp_path, export(spans))


def test_a_tool_span_alone_with_empty_text_has_invalid_arguments(tmp_path: Path) -> None:
    call = _otel(tmp_path, None).trace.tool_calls()[0]
    assert (call.arguments, call.arguments_invalid) == ("", True)
    score = build_metric(_NO_ARGS).evaluate(_otel(tmp_path, None))
    assert score.value == 0.0 and "not" in score.reason


def test_the_models_own_empty_text_is_a_call_without_arguments(tmp_path: Path) -> None:
    case = _otel(tmp_path, "")
    call = case.trace.tool_calls()[0]
    assert (call.arguments, call.arguments_invalid) == ({}, False)
    assert build_metric(_NO_ARGS).evaluate(case).value == 1.0


def test_arguments_the_tool_span_recorded_come_before_a_parts_empty_text(tmp_path: Path) -> None:
    # (a streamed part may keep only the `""` of its first chunk)
    call = _otel(tmp_path, "", '{"status": "open"}').trace.tool_calls()[0]
    assert (call.arguments, call.arguments_invalid) == ({"status": "open"}, False)


def test_openai_chat_messages_empty_arguments_are_none() -> None:
    from tracejudge.stages.extract.openai_messages import adapt

    record = {"id": "c1", "messages": [{"role": "user", "content": "my orders?"},
                           {"role": "assistant", "content": None, "tool_calls": [
                               {"id": "call_1", "type": "function", "function": {"name": "list_orders", "arguments": ""}}]},
                           {"role": "tool", "tool_call_id": "call_1", "content": "[]"},
                           {"role": "assistant", "content": "You have none."}]}
    call = adapt(record).trace.tool_calls()[0]
    assert (call.arguments, call.arguments_invalid) == ({}, False)


def test_flagged_empty_text_survives_a_round_trip_through_json() -> None:
    call = ToolCall.model_validate({"name": "list_orders", "arguments": "", "arguments_invalid": True})
    again = ToolCall.model_validate_json(call.model_dump_json())
    assert (again.arguments, again.arguments_invalid) == ("", True)
    assert ToolCall.model_validate({"name": "list_orders", "arguments": ""}).arguments == {}
