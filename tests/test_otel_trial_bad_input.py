"""Format `otel` on input that is damaged or not OTLP: an attribute value that does not decode, the SDK's console output.

Real recordings in `tests/data/langgraph-lost-root/` (README there): `oi-lg-noargs.badattr.jsonl` is
`oi-lg-noargs.jsonl` with the `LangGraph` span's `output.value` given as `{"intValue": "notanint"}`
(`tests/frameworks/damage_spans.py`); `oi-lg-checkpoint.console.txt` is what the SDK's `ConsoleSpanExporter`
printed of the spans of `oi-lg-checkpoint.jsonl`, recorded in the same run.

- A value that does not decode costs that attribute, with a warning naming the file, line, span id and key,
  not the conversation (before: the whole trace was one error naming no attribute).
- A usage count that is no number (`gen_ai.usage.input_tokens: "many"`) is its conversation's `invalid_input`, naming the
  span, the key and the span's line; the other conversations score (before: an internal error that stopped the read).
- The console exporter's pretty-printed span JSON, and `span.to_json()` one per line, is one error for the file
  saying what it is and how to export OTLP/JSON (before: one "invalid JSON" / "not an OTLP/JSON export" per line).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core.records import Case

from helpers import extract_path

DATA = Path(__file__).parent / "data" / "langgraph-lost-root"


def extract(path: Path) -> list[Any]:
    return extract_path(path, "otel")


def _summary(case: Case) -> tuple:
    trace = case.trace
    assert trace is not None
    return (case.input, [u.content for u in trace.user_messages], [(c.name, c.arguments, c.result) for c in trace.tool_calls()], trace.output)


def test_an_attribute_value_that_does_not_decode_costs_that_attribute_only(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        got = extract(DATA / "oi-lg-noargs.badattr.jsonl")
    assert len(got) == 1 and isinstance(got[0], Case), got
    whole = extract(DATA / "oi-lg-noargs.jsonl")[0]
    assert _summary(got[0]) == _summary(whole)  # the graph's recorded answer was lost: the model's last reply says it
    bad_line = next(i for i, line in enumerate((DATA / "oi-lg-noargs.badattr.jsonl").read_text().splitlines(), 1) if "notanint" in line)
    span_id = json.loads((DATA / "oi-lg-noargs.badattr.jsonl").read_text().splitlines()[bad_line - 1])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"]
    said = [r.getMessage() for r in caplog.records if "does not decode" in r.getMessage()]
    assert len(said) == 1
    assert f"oi-lg-noargs.badattr.jsonl:{bad_line}: span {span_id}: attribute output.value" in said[0]
    assert "notanint" in said[0] and "read without it" in said[0]


def test_a_bad_event_attribute_is_named_too(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    docs = [json.loads(line) for line in (DATA / "oi-lg-noargs.jsonl").read_text().splitlines()]
    span = docs[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["events"] = [{"name": "note", "timeUnixNano": "1", "attributes": [{"key": "n", "value": {"doubleValue": "NaN?"}}]}]
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    with caplog.at_level(logging.WARNING):
        got = extract(tmp_path / "e.jsonl")
    assert [type(g) for g in got] == [Case]
    assert any(f"span {span['spanId']}: event 'note' attribute n" in r.getMessage() for r in caplog.records)


def _sdk_objects(text: str) -> list[dict[str, Any]]:
    """The span objects the console exporter printed one after another."""
    decoder, out, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        obj, at = decoder.raw_decode(text, at)
        out.append(obj)
    return out


@pytest.mark.parametrize("layout", ["console", "compact"])
def test_the_sdk_console_span_json_is_one_error_saying_how_to_export_otlp(tmp_path: Path, layout: str) -> None:
    console = DATA / "oi-lg-checkpoint.console.txt"
    if layout == "console":
        path = tmp_path / "spans.jsonl"
        path.write_bytes(console.read_bytes())
    else:  # `span.to_json(indent=None)` one per line, as a hand-made exporter writes it
        path = tmp_path / "spans.json"
        path.write_text("".join(json.dumps(o) + "\n" for o in _sdk_objects(console.read_text())))
    got = extract(path)
    assert len(got) == 1 and not isinstance(got[0], Case), got
    _, err = got[0]
    assert err.kind == "invalid_input"
    assert "ConsoleSpanExporter" in err.message and "OTLP/JSON" in err.message and "Collector" in err.message
    assert "invalid JSON" not in err.message


def _genai_run(trace: str, tokens: Any) -> list[dict[str, Any]]:
    """An agent span and its one chat request (bare OTLP spans, attributes as objects), the request's input tokens `tokens`."""
    agent = {"traceId": trace, "spanId": trace[:14] + "01", "name": "invoke_agent a", "startTimeUnixNano": "1", "endTimeUnixNano": "9",
             "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}}
    chat = {"traceId": trace, "spanId": trace[:14] + "02", "parentSpanId": trace[:14] + "01", "name": "chat m",
            "startTimeUnixNano": "2", "endTimeUnixNano": "8",
            "attributes": {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": tokens, "gen_ai.usage.output_tokens": 3,
                           "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]),
                           "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}])}}
    return [agent, chat]


@pytest.mark.parametrize("group_by", ["conversation", "trace"])
def test_a_usage_count_that_is_no_number_costs_its_conversation_only(tmp_path: Path, group_by: str) -> None:
    spans = _genai_run("a" * 32, 5) + _genai_run("b" * 32, "many") + _genai_run("c" * 32, 7)
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in spans))
    got = extract_path(path, "otel", {"group_by": group_by})
    assert sorted(g.id for g in got if isinstance(g, Case)) == ["a" * 32, "c" * 32]
    (case_id, err), = [g for g in got if not isinstance(g, Case)]
    assert case_id == "b" * 32 and err.kind == "invalid_input"
    assert f"span {'b' * 14}02: gen_ai.usage.input_tokens is not an integer ('many') (spans.jsonl line 4)" in err.message
