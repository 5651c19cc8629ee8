"""Format `otel` groups conversations by a key its resource carries, as it does by one its spans carry.

The GenAI conventions let `gen_ai.conversation.id` and `session.id` sit on the resource (a process serving one
conversation, `OTEL_RESOURCE_ATTRIBUTES=session.id=…`), and agentevals groups by them in this order: its own
`agentevals.session_name` resource attribute (stamped by its session download), then `gen_ai.conversation.id` on a
span, then on the resource, then `session.id` on a span, then on the resource. The exports here are built from the
shape of agentevals' `tests/fixtures/otlp/hand/three_trace_conversation.json`: three traces, one turn each, with the
key moved from the spans to the resource.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _otel_truth import extract
from tracejudge.core.records import Case

TURNS = [("Hi, my name is Ada.", "Nice to meet you, Ada!"), ("What is the weather in Rome?", "It is cloudy and 17C in Rome."),
         ("Thanks, bye!", "Goodbye, Ada!")]
START = 1760000000000000000


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}


def _attrs(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in pairs.items()]


def _turn(i: int, span_keys: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent span and model span of turn `i`, in a trace of their own, each carrying `span_keys`."""
    user, answer = TURNS[i]
    trace, start = f"{i + 1:032x}", START + i * 1_000_000_000
    messages = {"gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}])}
    agent = {"traceId": trace, "spanId": f"{i + 1:016x}", "name": "invoke_agent assistant", "kind": 1,
             "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 50_000_000),
             "attributes": _attrs({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "assistant", **span_keys, **messages})}
    chat = {"traceId": trace, "spanId": f"{i + 11:016x}", "parentSpanId": agent["spanId"], "name": "chat gpt-4.1-mini", "kind": 3,
            "startTimeUnixNano": str(start + 1_000_000), "endTimeUnixNano": str(start + 49_000_000),
            "attributes": _attrs({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", **span_keys,
                                  "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5})}
    return [agent, chat]


def _resource(resource_keys: dict[str, Any], turns: list[int], span_keys: dict[str, Any] | None = None) -> dict[str, Any]:
    spans = [s for i in turns for s in _turn(i, span_keys or {})]
    return {"resource": {"attributes": _attrs({"service.name": "fixture-agent", **resource_keys})},
            "scopeSpans": [{"scope": {"name": "fixture.agent"}, "spans": spans}]}


def _read(tmp_path: Path, *resources: dict[str, Any], **options: Any) -> list[Case]:
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"resourceSpans": list(resources)}))
    cases = extract(path, **options)
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def test_conversation_id_on_the_resource_joins_its_traces(tmp_path: Path):
    cases = _read(tmp_path, _resource({"gen_ai.conversation.id": "conv-ada-1"}, [0, 1, 2]))
    assert [c.id for c in cases] == ["conv-ada-1"]
    assert cases[0].input == TURNS[0][0] and cases[0].turns == [TURNS[1][0], TURNS[2][0]]
    assert cases[0].trace.output == TURNS[2][1]


def test_session_id_on_the_resource_joins_its_traces(tmp_path: Path):
    assert [c.id for c in _read(tmp_path, _resource({"session.id": "sess-1"}, [0, 1, 2]))] == ["sess-1"]


def test_without_a_key_each_trace_stands_alone(tmp_path: Path):
    # (the agent spans hold the messages, the model spans none: no replayed history joins them either)
    assert len(_read(tmp_path, _resource({}, [0, 1, 2]))) == 3


def test_each_resource_gives_its_own_spans_its_key(tmp_path: Path):
    cases = _read(tmp_path, _resource({"session.id": "a"}, [0, 2]), _resource({"session.id": "b"}, [1]))
    assert sorted((c.id, c.input) for c in cases) == [("a", TURNS[0][0]), ("b", TURNS[1][0])]
    assert next(c for c in cases if c.id == "a").turns == [TURNS[2][0]]


def test_a_key_on_the_spans_outranks_the_same_key_on_the_resource(tmp_path: Path):
    cases = _read(tmp_path, _resource({"gen_ai.conversation.id": "process-wide"}, [0, 1, 2], {"gen_ai.conversation.id": "conv-1"}))
    assert [c.id for c in cases] == ["conv-1"]


def test_a_conversation_id_on_the_resource_outranks_a_session_id_on_the_spans(tmp_path: Path):
    # the key order decides, wherever a key sits (agentevals' `grouping.identity_key`)
    cases = _read(tmp_path, _resource({"gen_ai.conversation.id": "conv-r"}, [0, 1, 2], {"session.id": "sess-s"}))
    assert [c.id for c in cases] == ["conv-r"]


def test_an_agentevals_session_name_outranks_every_other_key(tmp_path: Path):
    # agentevals' session download stamps `agentevals.session_name` on every resource: the session it was taken from
    cases = _read(tmp_path, _resource({"agentevals.session_name": "my-session"}, [0, 1, 2], {"gen_ai.conversation.id": "conv-1"}))
    assert [c.id for c in cases] == ["my-session"]


def test_group_by_trace_ignores_resource_keys(tmp_path: Path):
    assert len(_read(tmp_path, _resource({"session.id": "sess-1"}, [0, 1, 2]), group_by="trace")) == 3


def test_a_resource_key_that_is_no_key_refuses_the_trace(tmp_path: Path):
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"resourceSpans": [_resource({"session.id": True}, [0])]}))
    (got,) = extract(path)
    assert not isinstance(got, Case)
    _, err = got
    assert err.kind == "invalid_input" and err.field == "session.id" and "the resource of span" in err.message
