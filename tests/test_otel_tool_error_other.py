"""A tool span whose status is ERROR with no `error.type`: its type is the conventions' fallback `_OTHER`.

agentevals' corpus has the shape (`tests/fixtures/otlp/hand/tool_error_no_error_type.json` in agentevals-dev/agentevals):
an `execute_tool` span with `status: {code: 2, message: "ticker not found"}` and no `error.type`; its truth gives the
call `is_error: true, error_type: "_OTHER"`. The call's error read `ticker not found`, which names no type, so the truth
files' `error_type` (the text before the first colon, as `test_extract_otel_truth` compares it) was the message itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

TRACE = "7f803517cbe6e95dae65e268e0bfcaff"
AGENT = "eb86921785ed9606"


def _attr(key: str, value: object) -> dict:
    return {"key": key, "value": {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}}


def _chat(span_id: str, start: int, tokens: tuple[int, int], inputs: list | None, outputs: list) -> dict:
    attrs = [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.provider.name", "openai"), _attr("gen_ai.request.model", "gpt-4.1-mini"),
             _attr("gen_ai.usage.input_tokens", tokens[0]), _attr("gen_ai.usage.output_tokens", tokens[1])]
    if inputs is not None:
        attrs.append(_attr("gen_ai.input.messages", json.dumps(inputs)))
    attrs.append(_attr("gen_ai.output.messages", json.dumps(outputs)))
    return {"traceId": TRACE, "spanId": span_id, "parentSpanId": AGENT, "name": "chat gpt-4.1-mini", "kind": 3,
            "startTimeUnixNano": str(1760000000000000000 + start), "endTimeUnixNano": str(1760000000000000000 + start + 9000000), "attributes": attrs}


def write_trace(path: Path, status: dict, extra: list[dict] = ()) -> Path:
    """The fixture's four spans: the agent, a model request calling `get_stock_price`, the failed tool, the answer."""
    call = {"type": "tool_call", "name": "get_stock_price", "arguments": {"ticker": "XYZ"}, "id": "call_s"}
    tool = {"traceId": TRACE, "spanId": "9e69aa064e5f651b", "parentSpanId": AGENT, "name": "execute_tool get_stock_price", "kind": 1,
            "startTimeUnixNano": "1760000000021000000", "endTimeUnixNano": "1760000000030000000", "status": status,
            "attributes": [_attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "get_stock_price"),
                           _attr("gen_ai.tool.call.id", "call_s"), _attr("gen_ai.tool.call.arguments", '{"ticker":"XYZ"}'), *extra]}
    spans = [{"traceId": TRACE, "spanId": AGENT, "name": "invoke_agent stock_agent", "kind": 1, "startTimeUnixNano": "1760000000000000000",
              "endTimeUnixNano": "1760000000100000000",
              "attributes": [_attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "stock_agent")]},
             _chat("23a6bb157382841e", 1000000, (18, 6), [{"role": "user", "parts": [{"type": "text", "content": "What is the price of XYZ?"}]}],
                   [{"role": "assistant", "parts": [call]}]),
             tool,
             _chat("e43d2f49cf5ee8c6", 31000000, (40, 12), None,
                   [{"role": "assistant", "parts": [{"type": "text", "content": "Sorry, I could not find XYZ."}]}])]
    doc = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "fixture-agent")]},
                              "scopeSpans": [{"scope": {"name": "fixture.agent"}, "spans": spans}]}]}
    path.write_text(json.dumps(doc))
    return path


def failed_call(path: Path):
    [case] = extract_path(path, "otel")
    assert isinstance(case, Case), case
    [call] = case.trace.tool_calls()
    assert call.failed and call.result is None and call.arguments == {"ticker": "XYZ"}
    assert case.trace.output == "Sorry, I could not find XYZ."
    return call


@pytest.mark.parametrize("status, error", [({"code": 2, "message": "ticker not found"}, "_OTHER: ticker not found"),
                                           ({"code": 2}, "_OTHER")], ids=["with a message", "without one"])
def test_a_failed_tool_span_without_error_type_reads_as_type_other(tmp_path, status, error):
    call = failed_call(write_trace(tmp_path / "trace.json", status))
    assert call.error == error
    assert call.error.split(":", 1)[0] == "_OTHER"  # the truth file's error_type


def test_a_failed_tool_span_keeps_the_type_it_names(tmp_path):
    call = failed_call(write_trace(tmp_path / "trace.json", {"code": 2, "message": "ticker not found"}, [_attr("error.type", "KeyError")]))
    assert call.error == "KeyError: ticker not found"
