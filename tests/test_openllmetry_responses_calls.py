"""Responses API loops under OpenLLMetry's OpenAI instrumentation: what it drops, and how its function calls pair.

Recorded by `tests/frameworks/record_openllmetry_responses.py` (opentelemetry-instrumentation-openai 0.62.4; the
folder's README says what each scenario is; `<scenario>.truth.json` is what the application got and did). The
instrumentation writes nothing of hosted tools (web search, file search, code interpreter), which no reading can give
back (the README says so), and writes a function call with its item id (`fc_…`), its output with its `call_id`.
What was wrong before: when the application sent its calls back without their item ids, the replay named the
`call_id`s, which the conversation's previous request (naming `fc_…`) did not: the traces were read as two
conversations, the first one's calls without results, and, joined, the outputs would have paired by order only
(wrong, when sent in another order). Now ids of the two kinds do not keep traces apart, and the call takes the
`call_id` its replay names, so its output pairs by id.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "openllmetry-responses"
README = Path(__file__).parents[1] / "README.md"
BY_ORDER = "paired with the tool messages that answered them by order only"
HOSTED = ("web_search_call", "file_search_call", "code_interpreter_call")


def extract(name: str) -> list[Case]:
    cases = extract_path(DATA / f"{name}.jsonl", "otel")
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def ran_in_model_order(name: str) -> list[dict[str, Any]]:
    """The calls the application ran, in the order the responses asked for them (`ran` is in the order it sent them)."""
    asked = [i["call_id"] for r in truth(name)["responses"] for i in r if i["type"] == "function_call"]
    return sorted(truth(name)["ran"], key=lambda c: asked.index(c["call_id"]))


def calls(case: Case) -> list[tuple[Any, ...]]:
    assert case.trace is not None
    return [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]


def _span_text(name: str) -> str:
    return (DATA / f"{name}.jsonl").read_text()


@pytest.mark.parametrize("name", ["tl-hosted-loop", "tl-hosted-parallel"])
def test_hosted_tool_items_are_not_recorded_and_the_function_calls_read_whole(name: str) -> None:
    t = truth(name)
    kinds = {i["type"] for r in t["responses"] for i in r}
    assert kinds & set(HOSTED)  # the model did run hosted tools
    text = _span_text(name)
    assert not any(k in text for k in (*HOSTED, "ws_1", "ci_1", "fs_4", "web_search_preview"))  # nothing of them was written
    (case,) = extract(name)
    assert case.input == t["question"] and case.trace is not None and case.trace.output == t["output"]
    # the function calls under their item ids, each with the output the application sent for it (paired in order)
    assert calls(case) == [(c["item_id"], c["name"], c["arguments"], c["result"], None) for c in ran_in_model_order(name)]
    assert "nothing of hosted tools" in " ".join(README.read_text().split())


def test_a_lone_call_and_the_preamble_beside_it() -> None:
    (case,) = extract("tl-hosted-loop")
    assert case.trace is not None
    first = case.trace.steps[0]
    assert first.thought == "Looked up Tokyo; now Paris."  # the words beside the call, not an answer
    assert [s.output for s in case.trace.steps] == [None, truth("tl-hosted-loop")["output"]]


def test_calls_replayed_under_their_call_ids_are_one_conversation_paired_by_id(caplog: pytest.LogCaptureFixture) -> None:
    name = "tl-replay-call-ids"
    t = truth(name)
    assert [c["call_id"] for c in t["ran"]][:2] == ["call_t", "call_p"]  # Tokyo's output was sent first
    text = _span_text(name)
    assert all(c["item_id"] in text and c["call_id"] in text for c in t["ran"])  # the responses' calls: item ids; the replays: call ids
    with caplog.at_level(logging.WARNING):
        cases = extract(name)
    (case,) = cases  # one conversation, not the first request's calls apart without results
    assert case.input == t["question"] and case.trace is not None and case.trace.output == t["output"]
    # each call under its `call_id`, with its own output though the outputs came in another order than the calls
    assert calls(case) == [(c["call_id"], c["name"], c["arguments"], c["result"], None) for c in ran_in_model_order(name)]
    assert [len(s.tool_calls) for s in case.trace.steps] == [2, 1, 0]
    assert not [r for r in caplog.records if BY_ORDER in r.getMessage()]  # the ids decided, not the order


def test_outputs_nothing_ties_to_their_calls_are_paired_in_order_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        extract("tl-hosted-parallel")
    (said,) = [r.getMessage() for r in caplog.records if BY_ORDER in r.getMessage()]
    assert "fc_2" in said and "fc_3" in said and "fc_5" not in said  # the parallel pair, not the lone call after
