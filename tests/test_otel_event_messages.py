"""Format `otel` reads `gen_ai.input.messages` / `gen_ai.output.messages` from a span event of any name.

The conventions put them in the `gen_ai.client.inference.operation.details` event, but an SDK may name its event its
own way (agentevals promotes the keys from any span event). The exports here are built from the shape of agentevals'
`tests/fixtures/otlp/hand/strands_span_events.json` (a Strands agent: a tool call, then the answer), with the event
renamed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _otel_truth import assert_truth, extract
from tracejudge.core.records import Case

TRACE, START = "f4cf2a05ed08d95e68042022f5395afe", 1760000000000000000
USER = {"role": "user", "parts": [{"type": "text", "content": "What is the weather in Paris?"}]}
CALL = {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "id": "tooluse_1"}
RESULT = {"city": "Paris", "forecast": "sunny", "temp_c": 21}
ANSWER = "It is sunny and 21C in Paris."
TRUTH = {"turns": [{"user_text": USER["parts"][0]["content"], "final_text": ANSWER, "intermediate_texts": [], "agents": ["weather_agent"],
                    "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}, "result": RESULT, "is_error": False, "error_type": None}],
                    "tokens": {"input": 120, "output": 20}}],
         "tokens": {"input": 120, "output": 20}}


def _attrs(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else
             {"stringValue": v if isinstance(v, str) else json.dumps(v)}} for k, v in pairs.items()]


def _span(span_id: str, name: str, start: int, end: int, attrs: dict[str, Any], parent: str | None = None,
          events: list[tuple[str, dict[str, Any]]] = ()) -> dict[str, Any]:
    span = {"traceId": TRACE, "spanId": span_id, "name": name, "kind": 1, "startTimeUnixNano": str(START + start),
            "endTimeUnixNano": str(START + end), "attributes": _attrs(attrs)}
    if parent:
        span["parentSpanId"] = parent
    span["events"] = [{"name": n, "timeUnixNano": str(START + end - 1), "attributes": _attrs(a)} for n, a in events]
    return span


def _chat(span_id: str, parent: str, start: int, end: int, tokens: tuple[int, int], events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return _span(span_id, "chat", start, end, {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "strands-agents",
                                               "gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1]},
                 parent, events)


def _export(tmp_path: Path, first: list[tuple[str, dict[str, Any]]], second: list[tuple[str, dict[str, Any]]]) -> Path:
    root = "eb86921785ed9606"
    spans = [
        _span(root, "invoke_agent weather_agent", 0, 100_000_000, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}),
        _chat("23a6bb157382841e", root, 2_000_000, 30_000_000, (40, 9), first),
        _span("9e69aa064e5f651b", "execute_tool get_weather", 31_000_000, 49_000_000,
              {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "tooluse_1",
               "gen_ai.tool.call.arguments": {"city": "Paris"}, "gen_ai.tool.call.result": RESULT}, root),
        _chat("e43d2f49cf5ee8c6", root, 52_000_000, 98_000_000, (80, 11), second),
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "strands-agents"})},
                                                   "scopeSpans": [{"scope": {"name": "strands.telemetry.tracer"}, "spans": spans}]}]}))
    return path


HISTORY = [USER, {"role": "assistant", "parts": [CALL]},
           {"role": "tool", "parts": [{"type": "tool_call_response", "response": RESULT, "id": "tooluse_1"}]}]
FIRST_OUT = [{"role": "assistant", "parts": [CALL], "finish_reason": "tool_use"}]
SECOND_OUT = [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}], "finish_reason": "end_turn"}]


def _one(path: Path) -> Case:
    (case,) = extract(path)
    assert isinstance(case, Case), case
    return case


@pytest.mark.parametrize("name", ["gen_ai.client.inference.operation.details", "gen_ai.content", "messages"])
def test_messages_in_an_event_of_any_name_are_read(tmp_path: Path, name: str):
    path = _export(tmp_path, [(name, {"gen_ai.input.messages": [USER], "gen_ai.output.messages": FIRST_OUT})],
                   [(name, {"gen_ai.input.messages": HISTORY, "gen_ai.output.messages": SECOND_OUT})])
    case = _one(path)
    assert_truth(case, TRUTH)
    assert not case.metadata["otel"].get("missing_inputs")


def test_input_and_output_in_events_of_their_own(tmp_path: Path):
    # (older Strands wrote a prompt event and a completion event)
    path = _export(tmp_path, [("prompt", {"gen_ai.input.messages": [USER]}), ("completion", {"gen_ai.output.messages": FIRST_OUT})],
                   [("prompt", {"gen_ai.input.messages": HISTORY}), ("completion", {"gen_ai.output.messages": SECOND_OUT})])
    assert_truth(_one(path), TRUTH)


def test_a_key_repeated_in_a_second_event_is_read_once(tmp_path: Path):
    twice = [("a", {"gen_ai.input.messages": HISTORY, "gen_ai.output.messages": SECOND_OUT}),
             ("b", {"gen_ai.input.messages": HISTORY, "gen_ai.output.messages": SECOND_OUT})]
    path = _export(tmp_path, [("a", {"gen_ai.input.messages": [USER], "gen_ai.output.messages": FIRST_OUT})], twice)
    case = _one(path)
    assert_truth(case, TRUTH)
    assert case.trace.output == ANSWER


def test_the_details_event_outranks_an_event_of_another_name(tmp_path: Path):
    details = ("gen_ai.client.inference.operation.details", {"gen_ai.input.messages": HISTORY, "gen_ai.output.messages": SECOND_OUT})
    other = ("debug", {"gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": "stale"}]}]})
    path = _export(tmp_path, [("x", {"gen_ai.input.messages": [USER], "gen_ai.output.messages": FIRST_OUT})], [other, details])
    assert _one(path).trace.output == ANSWER
