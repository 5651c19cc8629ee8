"""Format `otel` on LangGraph runs whose root span was lost, and on a tool called with no arguments.

Real recordings in `tests/data/langgraph-lost-root/` (README there), made by
`tests/frameworks/record_langgraph_lost_root.py`; the damaged copies by `tests/frameworks/damage_spans.py`.

- OpenInference + LangGraph, three invokes of a checkpointed `create_react_agent` on one thread: with every root
  span dropped (an exporter lost that batch), and with every other parent lost too, the case has the same input,
  user messages, calls and output as with them, and a warning names the traces that lost a span; the graph's
  `tools` node (`{"__type": "tool_call_with_context", …}`) and `agent` node are no user turns. OpenLLMetry's
  recording of the same runs reads the same with its roots dropped.
- A LangGraph tool called with `{}` has empty arguments, not missing ones, under both instrumentations
  (OpenInference writes no `function.arguments` attribute for it; the `LLMResult` in `output.value` has `"args": {}`).
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


def one_case(path: Path) -> Case:
    got = extract(path)
    assert len(got) == 1 and isinstance(got[0], Case), got
    return got[0]


def what_counts(case: Case) -> tuple:
    trace = case.trace
    assert trace is not None
    return (case.input, case.turns, [(u.step, u.content) for u in trace.user_messages],
            [(c.id, c.name, json.dumps(c.arguments, sort_keys=True), json.dumps(c.result, sort_keys=True), c.error) for c in trace.tool_calls()],
            trace.output, trace.usage.input_tokens, trace.usage.output_tokens, len(trace.steps))


@pytest.mark.parametrize("damaged", ["oi-lg-checkpoint.noroot.jsonl", "oi-lg-checkpoint.lost-parents.jsonl", "tl-lg-checkpoint.noroot.jsonl"])
def test_a_checkpointed_graph_whose_roots_were_lost_reads_as_with_them(damaged: str, caplog: pytest.LogCaptureFixture) -> None:
    # Before: the graph's `tools` and `agent` nodes became top-level turns, 7 user messages instead of 3
    # ('tool_call_with_context', the question again).
    whole = one_case(DATA / (damaged.split(".")[0] + ".jsonl"))
    truth = json.loads((DATA / (damaged.split(".")[0] + ".truth.json")).read_text())
    with caplog.at_level(logging.WARNING):
        lost = one_case(DATA / damaged)
    assert [u.content for u in lost.trace.user_messages] == truth["user_turns"]
    assert [(c.name, c.arguments, c.result) for c in lost.trace.tool_calls()] == [(c["name"], c["arguments"], c["result"]) for c in truth["calls"]]
    assert lost.trace.output == truth["answers"][-1]
    assert what_counts(lost) == what_counts(whole)
    assert [t["final_text"] for t in lost.metadata["otel"]["turns"]] == truth["answers"]
    if damaged.startswith("oi-"):  # (OpenLLMetry's dropped roots had one child each: it is the root then, and nothing is stood in for)
        said = [r.getMessage() for r in caplog.records if "lost a span several of their spans hang from" in r.getMessage()]
        assert len(said) == 1 and "taken from its model requests" in said[0]
        assert all(t in said[0] for t in lost.metadata["otel"]["traces"][:2])


def test_the_lost_root_is_not_counted_as_a_span_of_no_convention() -> None:
    whole = one_case(DATA / "oi-lg-checkpoint.jsonl").metadata["otel"]["conventions"]
    lost = one_case(DATA / "oi-lg-checkpoint.noroot.jsonl").metadata["otel"]["conventions"]
    assert set(lost) == {"openinference"} == set(whole)
    assert lost["openinference"]["used"] == whole["openinference"]["used"] - 3  # the three roots dropped; the stand-ins count for none


def test_a_lone_span_whose_parent_was_lost_stays_the_root(tmp_path: Path) -> None:
    # Only a parent several spans name gets a stand-in: one span under a lost parent (a graph under a web request the
    # export never held) keeps its own input as the user's text.
    lines = (DATA / "oi-lg-noargs.jsonl").read_text().splitlines()
    docs = [json.loads(line) for line in lines]
    for doc in docs:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    if not span.get("parentSpanId"):
                        span["parentSpanId"] = "BBBBBBBBBBBBBBBB"
    (tmp_path / "lone.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    assert what_counts(one_case(tmp_path / "lone.jsonl")) == what_counts(one_case(DATA / "oi-lg-noargs.jsonl"))


@pytest.mark.parametrize("recording", ["oi-lg-noargs.jsonl", "tl-lg-noargs.jsonl", "oi-lg-noargs.noroot.jsonl"])
def test_a_langgraph_tool_called_without_arguments_has_empty_arguments(recording: str) -> None:
    # Before: OpenInference's `get_blob` call was `arguments_missing` (its `function.arguments` attribute is not written for "{}").
    case = one_case(DATA / recording)
    truth = json.loads((DATA / (recording.split(".")[0] + ".truth.json")).read_text())
    calls = case.trace.tool_calls()
    assert [(c.id, c.name, c.arguments, c.result) for c in calls] == [(c["id"], c["name"], c["arguments"], c["result"]) for c in truth["calls"]]
    blob = next(c for c in calls if c.name == "get_blob")
    assert blob.arguments == {} and not blob.arguments_missing
