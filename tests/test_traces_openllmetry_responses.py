"""OpenLLMetry's Responses API loop chained by `previous_response_id`: what its spans hold to link the turns (nothing).

Recording: `tests/data/otel-loop-faults/tl-responses-prev.jsonl` (`record_otel_loop_faults.py`,
opentelemetry-instrumentation-openai 0.62.4): two user turns, each request sent with only its new items and the
previous response's id. Each request is a trace of its own; a span records its own `gen_ai.response.id` but neither
`previous_response_id` nor a conversation or session id, and the second question's input is that question alone, so
which conversation it continues cannot be told (OpenInference records the id and joins it: `test_otel_loop_faults`).
The README states the limit and the way out, a `session.id` on the spans, checked here.
"""

from __future__ import annotations

import json
from pathlib import Path

from tracejudge.core.records import Case

from helpers import extract_path

RECORDED = Path(__file__).parent / "data" / "otel-loop-faults" / "tl-responses-prev.jsonl"
README = Path(__file__).parents[1] / "README.md"
TURNS = ["Compare the weather in Paris and Tokyo.", "And what time is it?"]


def extract(path: Path) -> list[Case]:
    cases = extract_path(path, "otel")
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def _spans(docs: list[dict]) -> list[dict]:
    return [s for d in docs for rs in d["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def test_the_spans_hold_nothing_that_links_the_second_turn() -> None:
    spans = _spans([json.loads(line) for line in RECORDED.read_text().splitlines()])
    keys = {a["key"] for s in spans for a in s["attributes"]}
    assert "gen_ai.response.id" in keys
    assert not {k for k in keys if "previous" in k or "conversation" in k or "session" in k}
    assert len({s["traceId"] for s in spans}) == len(spans) == 4  # a trace per request
    assert [c.input for c in extract(RECORDED)] == TURNS  # so the second question is a case of its own
    assert "records neither that id nor a conversation id" in " ".join(README.read_text().split())


def test_a_session_id_on_the_spans_keeps_the_conversation_one_case(tmp_path: Path) -> None:
    docs = [json.loads(line) for line in RECORDED.read_text().splitlines()]
    for span in _spans(docs):  # what a span processor setting `session.id` writes
        span["attributes"].append({"key": "session.id", "value": {"stringValue": "chat-1"}})
    path = tmp_path / "with-session.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    (case,) = extract(path)
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, TURNS[0]), (2, TURNS[1])]
    assert len(case.trace.tool_calls()) == 3 and case.trace.output == "It is 12:00 UTC."
