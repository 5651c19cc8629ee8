"""Format `otel` joining and de-duplicating traces as the instrumentations recorded them, in `tests/data/stitch-faults/`.

Recorded by `tests/frameworks/record_stitch_faults.py` (its docstring says what each scenario runs); each
`<scenario>.truth.json` is what the application itself sent and got.

- OpenInference's LangChain and OpenAI instrumentors both on (Phoenix's `register(auto_instrument=True)`): every
  request is recorded twice, once in the LangGraph trace and once as a parentless `ChatCompletion` trace. One
  case, each request counted once (usage too); a parentless request whose messages differ is another request.
- A plain loop whose system prompt changes per request (a timestamp): one case, the call with its result; the
  replayed call id links the requests (OpenInference and OpenLLMetry).
- A chat that sends only its last messages (a sliding window): one case of three turns, each trimmed request
  joined to the conversation whose last messages it replays; when several conversations end so, none is
  joined and a warning says so.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path, rewrite_spans
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "stitch-faults"


def extract(path: Path) -> list[Case]:
    cases = extract_path(path, "otel")
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def truth(name: str) -> dict[str, Any]:
    (case,) = json.loads((DATA / f"{name}.truth.json").read_text())["cases"]
    return case


def facts(case: Case) -> dict[str, Any]:
    """What a case says a conversation was: user turns, calls (id, name, arguments, result), answers, usage."""
    u = case.trace.usage
    return {"user_turns": [m.content for m in case.trace.user_messages],
            "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result} for c in case.trace.tool_calls()],
            "output": case.trace.output,
            "answers": [t["final_text"] for t in case.metadata["otel"]["turns"]],
            "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "requests": u.requests}}


def spans(path: Path) -> list[dict[str, Any]]:
    return [s for line in path.read_text().splitlines() for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


rewrite = rewrite_spans


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "spans by convention" not in r.getMessage()]


@pytest.mark.parametrize("name", ["oi-langgraph-both", "oi-langgraph-both-stream"])
def test_both_openinference_instrumentors_read_each_request_once(name: str, caplog: pytest.LogCaptureFixture) -> None:
    bare = [s for s in spans(DATA / f"{name}.jsonl") if s["name"] == "ChatCompletion"]
    assert len(bare) == 2 and not any(s.get("parentSpanId") for s in bare)  # the recording: each request again, in a trace of its own
    with caplog.at_level(logging.WARNING):
        (case,) = extract(DATA / f"{name}.jsonl")
    assert facts(case) == truth(name)  # usage of two requests, not four
    assert not {s["traceId"] for s in bare} & set(case.metadata["otel"]["traces"])
    assert warnings_of(caplog) == []  # the messages decide it


def test_a_parentless_request_is_folded_only_into_the_request_it_repeats(tmp_path: Path) -> None:
    assert len(extract(DATA / "oi-langgraph-both.jsonl")) == 1

    def edit(span: dict[str, Any], attrs: dict[str, Any]) -> None:
        key = "llm.output_messages.0.message.content"
        if span["name"] == "ChatCompletion" and attrs.get(key, {}).get("stringValue") == "Paris sunny, Tokyo rainy.":
            attrs[key] = {"stringValue": "Something else."}

    cases = extract(rewrite(DATA / "oi-langgraph-both.jsonl", tmp_path / "other.jsonl", edit))
    assert len(cases) == 2  # the graph's run, and the request that said something else
    assert facts(next(c for c in cases if len(c.trace.steps) == 2)) == truth("oi-langgraph-both")


def test_a_parentless_request_with_no_messages_is_folded_by_time_and_said_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def edit(span: dict[str, Any], attrs: dict[str, Any]) -> None:
        if span["name"] == "ChatCompletion":  # content capture off for the OpenAI instrumentor alone
            for key in [k for k in attrs if k.startswith(("llm.input_messages", "llm.output_messages", "input.value", "output.value"))]:
                del attrs[key]

    path = rewrite(DATA / "oi-langgraph-both.jsonl", tmp_path / "blind.jsonl", edit)
    with caplog.at_level(logging.WARNING):
        (case,) = extract(path)
    assert facts(case) == truth("oi-langgraph-both")
    (said,) = warnings_of(caplog)
    bare = sorted({s["traceId"] for s in spans(path) if s["name"] == "ChatCompletion"})
    assert "by time alone" in said and "blind.jsonl" in said and all(t in said for t in bare)


@pytest.mark.parametrize("name", ["oi-sys-changes", "tl-sys-changes"])
def test_a_system_prompt_changing_per_request_keeps_one_turn(name: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        (case,) = extract(DATA / f"{name}.jsonl")
    assert facts(case) == truth(name)
    assert len(case.metadata["otel"]["turns"]) == 1
    assert warnings_of(caplog) == []


def test_a_sliding_window_chat_is_one_conversation(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        (case,) = extract(DATA / "oi-window.jsonl")
    assert facts(case) == truth("oi-window")
    assert [t["calls"] for t in case.metadata["otel"]["turns"]] == [[0, 1], [1, 2], [2, 2]]
    assert warnings_of(caplog) == []


def test_a_window_several_conversations_end_with_stays_apart_and_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Two windowed chats at once that said the same things; their own requests still carry call ids, but the
    # window of turn 3 replays only texts both conversations end with.
    docs = [json.loads(line) for line in (DATA / "oi-window.jsonl").read_text().splitlines()]
    again = copy.deepcopy(docs)
    for doc in again:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["traceId"] = f"{(int(span['traceId'][0], 16) + 8) % 16:x}{span['traceId'][1:]}"
                    span["spanId"] = f"{(int(span['spanId'][0], 16) + 8) % 16:x}{span['spanId'][1:]}"
    path = tmp_path / "twice.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs + again))
    with caplog.at_level(logging.WARNING):
        cases = extract(path)
    want = truth("oi-window")
    assert all(facts(c)["user_turns"] != want["user_turns"] for c in cases)  # no conversation joined from a guess
    said = warnings_of(caplog)
    assert any("several" in w and "trimmed history" in w for w in said), said
