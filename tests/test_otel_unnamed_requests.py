"""Format `otel` reads a GenAI span with no `gen_ai.operation.name` as a model request when it records one.

A span naming a model and a provider (`gen_ai.provider.name`, or the deprecated `gen_ai.system`) that carries a
call's usage or messages is a request, as agentevals infers a chat; model and provider alone are identity (kagent
copies its resource's onto every Claude Code span), not a call. The exports here are built from the shapes of
agentevals' `tests/fixtures/otlp/hand/deprecated_aliases.json` and `hand/tool_error_no_error_type.json` with the
operation name left out, and of `kagent/v1.0.0-alpha9/claude_native_2turn.json`'s `claude_code.llm_request` span.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _otel_truth import assert_truth, extract
from tracejudge.core.records import Case

TRACE, START = "f7811dd77e5c41ec3967c96b941edb51", 1760000000000000000


def _attrs(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else
             {"stringValue": v if isinstance(v, str) else json.dumps(v)}} for k, v in pairs.items()]


def _span(span_id: str, name: str, start: int, end: int, attrs: dict[str, Any], parent: str | None = None,
          status: dict[str, Any] | None = None) -> dict[str, Any]:
    span = {"traceId": TRACE, "spanId": span_id, "name": name, "kind": 3, "startTimeUnixNano": str(START + start),
            "endTimeUnixNano": str(START + end), "attributes": _attrs(attrs)}
    if parent:
        span["parentSpanId"] = parent
    if status:
        span["status"] = status
    return span


def _read(tmp_path: Path, spans: list[dict[str, Any]]) -> list[Any]:
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "fixture-agent"})},
                                                   "scopeSpans": [{"scope": {"name": "fixture.provider"}, "spans": spans}]}]}))
    return extract(path)


def _text(role: str, text: str) -> list[dict[str, Any]]:
    return [{"role": role, "parts": [{"type": "text", "content": text}]}]


def _turn(user: str, answer: str, agents: list[str], tokens: tuple[int, int], calls: list[dict[str, Any]] = ()) -> dict[str, Any]:
    return {"turns": [{"user_text": user, "final_text": answer, "intermediate_texts": [], "agents": agents, "tool_calls": list(calls),
                       "tokens": {"input": tokens[0], "output": tokens[1]}}], "tokens": {"input": tokens[0], "output": tokens[1]}}


def test_deprecated_keys_without_an_operation_name(tmp_path: Path):
    span = _span("23a6bb157382841e", "chat claude-sonnet-5", 0, 40_000_000, {
        "gen_ai.system": "anthropic", "gen_ai.request.model": "claude-sonnet-5", "gen_ai.usage.prompt_tokens": 70,
        "gen_ai.usage.completion_tokens": 14, "gen_ai.input.messages": _text("user", "Name three primes."),
        "gen_ai.output.messages": _text("assistant", "2, 3 and 5.")})
    (case,) = _read(tmp_path, [span])
    assert isinstance(case, Case), case
    assert_truth(case, _turn("Name three primes.", "2, 3 and 5.", [], (70, 14)))
    assert case.trace.usage.requests == 1


def test_requests_without_an_operation_name_around_a_failed_tool(tmp_path: Path):
    chat = {"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1-mini"}
    call = {"type": "tool_call", "name": "get_stock_price", "arguments": {"ticker": "XYZ"}, "id": "call_s"}
    root = "eb86921785ed9606"
    spans = [
        _span(root, "invoke_agent stock_agent", 0, 100_000_000, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "stock_agent"}),
        _span("23a6bb157382841e", "chat gpt-4.1-mini", 1_000_000, 20_000_000, {
            **chat, "gen_ai.usage.input_tokens": 18, "gen_ai.usage.output_tokens": 6,
            "gen_ai.input.messages": _text("user", "What is the price of XYZ?"),
            "gen_ai.output.messages": [{"role": "assistant", "parts": [call]}]}, root),
        _span("9e69aa064e5f651b", "execute_tool get_stock_price", 21_000_000, 30_000_000, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_stock_price", "gen_ai.tool.call.id": "call_s",
            "gen_ai.tool.call.arguments": {"ticker": "XYZ"}}, root, {"code": 2, "message": "ticker not found"}),
        _span("e43d2f49cf5ee8c6", "chat gpt-4.1-mini", 31_000_000, 99_000_000, {
            **chat, "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 12,
            "gen_ai.output.messages": _text("assistant", "Sorry, I could not find XYZ.")}, root),
    ]
    (case,) = _read(tmp_path, spans)
    assert isinstance(case, Case), case
    failed = {"name": "get_stock_price", "args": {"ticker": "XYZ"}, "result": None, "is_error": True, "error_type": "_OTHER"}
    assert_truth(case, _turn("What is the price of XYZ?", "Sorry, I could not find XYZ.", ["stock_agent"], (58, 18), [failed]))


def test_model_and_provider_alone_are_no_request(tmp_path: Path):
    # a Claude Code span under kagent: its resource's model and provider copied on, its usage in keys of its own
    root = "fdbd6f5ea750e69f"
    spans = [
        _span(root, "invoke_agent claude-test", 0, 100_000_000, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "claude-test",
            "gen_ai.input.messages": _text("user", "List the namespaces."),
            "gen_ai.output.messages": _text("assistant", "There are 10.")}),
        _span("5b0a8f0a0e694825", "claude_code.llm_request", 1_000_000, 90_000_000, {
            "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-haiku-4-5", "gen_ai.system": "anthropic",
            "input_tokens": 10, "output_tokens": 273, "gen_ai.response.id": "req_1"}, root),
    ]
    (case,) = _read(tmp_path, spans)
    assert isinstance(case, Case), case
    assert case.metadata["otel"]["turns"][0]["usage"]["requests"] == 0
    assert case.input == "List the namespaces." and case.trace.output == "There are 10."
