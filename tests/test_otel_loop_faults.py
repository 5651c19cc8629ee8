"""Format `otel` on plain OpenAI loops and RAG runs recorded by the real instrumentations, in `tests/data/otel-loop-faults/`.

Recorded by `tests/frameworks/record_otel_loop_faults.py` (its docstring says what each scenario runs); each
`<scenario>.truth.json` is what the application itself sent and got.

- OpenLLMetry, four concurrent chat loops asking the same question (streamed, or replaying `content: ""`):
  each conversation keeps its own call, result, answer and usage. OpenLLMetry records an empty text part on a
  tool-call reply that the replay leaves out; the call ids a request replays are its own conversation's.
  A request that could go on with several conversations is kept apart, and a warning says so.
- A Responses API loop chained with `previous_response_id`: under OpenInference one conversation with both user
  turns and the calls' results; OpenLLMetry records no `previous_response_id`, so its tool rounds are joined
  (a request of tool results alone goes on from the one response that asked for them) and its second user turn
  stays a conversation of its own.
- A retriever span with no parent joins the request that asked its question next.
- OpenLLMetry's LangChain retriever spans are retrieved passages; OpenInference keeps the id and score that a
  LangChain document holds in its metadata.
- OpenInference: a tool that returned `""` has the result `""`.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import rewrite_spans
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.judge.trace_text import render_steps

DATA = Path(__file__).parent / "data" / "otel-loop-faults"


def extract(path: Path) -> list[Case]:
    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=path, format="otel", options={})
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def truth(name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / f"{name}.truth.json").read_text())["cases"]


def facts(case: Case) -> dict[str, Any]:
    """What a case says a conversation was: user turns, calls (id, name, arguments, result), answer, usage."""
    u = case.trace.usage
    return {"user_turns": [m.content for m in case.trace.user_messages],
            "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result} for c in case.trace.tool_calls()],
            "output": case.trace.output,
            "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "requests": u.requests}}


def by_call(cases: list[Case]) -> dict[str, dict[str, Any]]:
    return {facts(c)["calls"][0]["id"]: facts(c) for c in cases}


rewrite = rewrite_spans


def _edit_messages(attrs: dict[str, Any], key: str, change: Any) -> None:
    if key in attrs:
        attrs[key] = {"stringValue": json.dumps(change(json.loads(attrs[key]["stringValue"])))}


def twice(src: Path, dst: Path, shift_ns: int) -> Path:
    """`src` followed by a copy of it run `shift_ns` later (0: at the same time), with its own trace and span ids."""
    docs = [json.loads(line) for line in src.read_text().splitlines()]
    again = copy.deepcopy(docs)
    for doc in again:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if span.get(key):
                            span[key] = f"{(int(span[key][0], 16) + 8) % 16:x}{span[key][1:]}"
                    span["startTimeUnixNano"] = str(int(span["startTimeUnixNano"]) + shift_ns)
                    span["endTimeUnixNano"] = str(int(span["endTimeUnixNano"]) + shift_ns)
    dst.write_text("".join(json.dumps(d) + "\n" for d in docs + again))
    return dst


@pytest.mark.parametrize("name", ["tl-concurrent-stream", "tl-concurrent-empty"])
def test_concurrent_openllmetry_loops_keep_their_own_calls_results_and_answers(name: str) -> None:
    cases = extract(DATA / f"{name}.jsonl")
    want = {c["calls"][0]["id"]: {k: c[k] for k in ("user_turns", "calls", "output", "usage")} for c in truth(name)}
    assert len(cases) == 4
    assert by_call(cases) == want
    # the recorded mix: two runs asked for Paris, two for Tokyo, and each answer quotes its own result
    assert sorted(f["calls"][0]["arguments"]["city"] + ": " + f["output"] for f in want.values()) == [
        "Paris: It is sunny, 21 C (run 0).", "Paris: It is sunny, 21 C (run 2).", "Tokyo: It is rainy, 14 C (run 1).", "Tokyo: It is rainy, 14 C (run 3)."]


def test_call_ids_tell_concurrent_loops_apart_when_the_replay_is_not_exact(tmp_path: Path) -> None:
    # The tool-call reply recorded with a text the replay leaves out: only the user's and system's texts are
    # replayed verbatim, and they are the same in all four runs; the call ids are each run's own.
    def edit(span: dict[str, Any], attrs: dict[str, Any]) -> None:
        _edit_messages(attrs, "gen_ai.output.messages", lambda ms: [
            {**m, "parts": [{"type": "text", "content": "Checking."} if p.get("type") == "text" and p.get("content") == "" else p for p in m["parts"]]}
            for m in ms])

    cases = extract(rewrite(DATA / "tl-concurrent-stream.jsonl", tmp_path / "texts.jsonl", edit))
    assert len(cases) == 4
    assert {cid: (f["calls"][0]["result"], f["output"], f["usage"]) for cid, f in by_call(cases).items()} == {
        c["calls"][0]["id"]: (c["calls"][0]["result"], c["output"], c["usage"]) for c in truth("tl-concurrent-stream")}


def test_concurrent_loops_that_cannot_be_told_apart_stay_apart_and_say_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # As above, and no call ids either: each continuation could be any of the four runs'.
    def edit(span: dict[str, Any], attrs: dict[str, Any]) -> None:
        def strip(ms: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [{**m, "parts": [{**p, "id": None} if p.get("type") in ("tool_call", "tool_call_response") else
                                    {"type": "text", "content": "Checking."} if p.get("type") == "text" and p.get("content") == "" else p
                                    for p in m["parts"]]} for m in ms]
        _edit_messages(attrs, "gen_ai.output.messages", strip)
        _edit_messages(attrs, "gen_ai.input.messages", strip)

    with caplog.at_level(logging.WARNING):
        cases = extract(rewrite(DATA / "tl-concurrent-stream.jsonl", tmp_path / "noids.jsonl", edit))
    assert len(cases) == 8  # each request its own conversation: none mixes two runs
    assert all(len(c.trace.steps) == 1 for c in cases)
    said = [r.getMessage() for r in caplog.records if "kept as conversations of their own" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("otel: 4 trace(s) kept as conversations of their own") and "no call id tells which" in said[0]


def test_responses_chained_by_previous_response_id_are_one_conversation() -> None:
    (case,) = extract(DATA / "oi-responses-prev.jsonl")
    (want,) = truth("oi-responses-prev")
    assert facts(case) == {k: want[k] for k in ("user_turns", "calls", "output", "usage")}
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, want["user_turns"][0]), (2, want["user_turns"][1])]
    turns = case.metadata["otel"]["turns"]
    assert [(t["user_text"], t["final_text"], t["calls"], t["usage"]) for t in turns] == [
        (want["user_turns"][0], want["answers"][0], [0, 2], {"input_tokens": 201, "output_tokens": 21, "requests": 2}),
        (want["user_turns"][1], want["answers"][1], [2, 3], {"input_tokens": 205, "output_tokens": 25, "requests": 2})]


def test_openllmetry_responses_rounds_join_but_its_next_user_turn_cannot() -> None:
    cases = extract(DATA / "tl-responses-prev.jsonl")
    (want,) = truth("tl-responses-prev")
    # OpenLLMetry names each call by its item id (`fc_…`), and records no previous_response_id: the request of tool
    # results alone goes on from the one response that asked for as many calls; the second question is a new case.
    assert [facts(c) for c in cases] == [
        {"user_turns": want["user_turns"][:1], "output": want["answers"][0], "usage": {"input_tokens": 201, "output_tokens": 21, "requests": 2},
         "calls": [{**c, "id": "fc_" + c["id"][5:]} for c in want["calls"][:2]]},
        {"user_turns": want["user_turns"][1:], "output": want["answers"][1], "usage": {"input_tokens": 205, "output_tokens": 25, "requests": 2},
         "calls": [{**c, "id": "fc_" + c["id"][5:]} for c in want["calls"][2:]]}]


def test_responses_rounds_of_two_runs_at_once_stay_apart_and_say_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    later = extract(twice(DATA / "tl-responses-prev.jsonl", tmp_path / "later.jsonl", 10**10))
    assert [len(c.trace.steps) for c in later] == [2, 2, 2, 2]  # one run after the other: each round joins its own
    with caplog.at_level(logging.WARNING):
        together = extract(twice(DATA / "tl-responses-prev.jsonl", tmp_path / "together.jsonl", 0))
    assert [len(c.trace.steps) for c in together] == [1] * 8
    assert any("several conversations asked for as many calls" in r.getMessage() for r in caplog.records)


def test_a_retrieval_with_no_parent_joins_the_request_it_retrieved_for() -> None:
    cases = extract(DATA / "oi-rag-bare.jsonl")
    want = truth("oi-rag-bare")
    assert [facts(c) for c in cases] == [{k: w[k] for k in ("user_turns", "calls", "output", "usage")} for w in want]
    assert [[p.model_dump(exclude_none=True) for p in c.trace.retrieved] for c in cases] == [w["retrieved"] for w in want]


def test_retrievals_of_two_runs_at_once_stay_apart_and_say_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        cases = extract(twice(DATA / "oi-rag-bare.jsonl", tmp_path / "together.jsonl", 0))
    assert len(cases) == 8 and sum(1 for c in cases if c.trace.retrieved) == 4 and not any(c.trace.retrieved and c.trace.steps for c in cases)
    assert any("requests that started at once" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("name", ["tl-rag-graph", "oi-rag-graph"])
def test_langchain_retrievers_give_their_passages_with_ids_and_scores(name: str) -> None:
    (case,) = extract(DATA / f"{name}.jsonl")
    (want,) = truth(name)
    assert [p.model_dump(exclude_none=True) for p in case.trace.retrieved] == want["retrieved"]
    assert facts(case) == {k: want[k] for k in ("user_turns", "calls", "output", "usage")}


def test_a_tool_that_returned_an_empty_string_has_that_result() -> None:
    (case,) = extract(DATA / "oi-empty-result.jsonl")
    (want,) = truth("oi-empty-result")
    assert facts(case) == {k: want[k] for k in ("user_turns", "calls", "output", "usage")}
    assert [c.result for c in case.trace.tool_calls()] == ["Tokyo: 14M people", ""]
    prompt = render_steps(case.trace.steps).splitlines()
    assert prompt[prompt.index(" call 2: ping({})") + 1] == '  result: "" (empty text)'


def test_an_agent_functions_arguments_give_the_one_the_model_was_asked_not_a_shorter_one_inside_it() -> None:
    # `concierge(city="Paris", ask="What is the weather in Paris today?")`: both arguments are candidates for the user's
    # text, and the city is contained in the question the model was asked too; the input read "Paris".
    (case,) = extract(DATA / "oi-agent-args.jsonl")
    (want,) = truth("oi-agent-args")
    assert case.input == "What is the weather in Paris today?"
    assert facts(case) == {k: want[k] for k in ("user_turns", "calls", "output", "usage")}
