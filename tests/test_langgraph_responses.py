"""A LangGraph agent whose model speaks OpenAI's Responses API, read from real recordings in `tests/data/langgraph-responses/`.

Recorded by `tests/frameworks/record_langgraph_responses.py` (its docstring says what runs): `create_react_agent` with
`ChatOpenAI(use_responses_api=True)`; the model asks `get_weather` for Paris and Tokyo in one reply (`function_call`
items `fc_1` / `fc_2`, call ids `call_P` / `call_T`), then answers (`reasoned`: each reply led by a reasoning
summary); each reply's usage has cached input tokens and
reasoning output tokens. Under OpenInference, OpenLLMetry, Langfuse (its OTLP and the API's JSON) and MLflow (its
trace JSON and its OTLP copy) the run has the two calls the model asked for, each with its result, no words but the answer, and the tokens the
server counted.

Before, Langfuse's reading had four calls: LangChain's `AIMessage` holds each call twice, as a `function_call` block of
its `content` (the item id `fc_…` read as the call's id) and as its `tool_calls` entry (`call_…`), so `fc_1` and
`fc_2` were calls that never returned. And Langfuse's usage counts read short: its handler takes the cached and the
reasoning tokens out of `input` / `output` and lists them as `input_cache_read` / `output_reasoning`; only `input` /
`output` were read (81 of the 201 input tokens, 11 of the 21 output tokens). OpenLLMetry writes each block of the
`AIMessage`'s `content` that is not text (a `function_call`, a `reasoning` item) as a text part holding its JSON, which
read as words the model said before its calls (the turn's `intermediate_texts`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "langgraph-responses"
# (recording, format, scenario whose truth it holds)
READINGS = [(f"{kind}-{variant}{suffix}", fmt, f"{kind}-{variant}") for variant in ("responses", "reasoned")
            for kind, suffix, fmt in (("oi", ".jsonl", "otel"), ("tl", ".jsonl", "otel"), ("lf", ".jsonl", "otel"), ("lf", ".api.json", "langfuse"),
                                      ("ml", ".mlflow.jsonl", "mlflow"), ("ml", ".otlp.jsonl", "otel"))]


def only_case(name: str, fmt: str) -> tuple[Case, dict[str, Any]]:
    [case] = extract_path(DATA / name, fmt)
    assert isinstance(case, Case), case
    return case, json.loads((DATA / f"{name.split('.')[0]}.truth.json").read_text())


@pytest.mark.parametrize("name,fmt,scenario", READINGS)
def test_each_call_is_read_once_under_its_call_id_with_its_result(name: str, fmt: str, scenario: str) -> None:
    case, truth = only_case(name, fmt)
    assert case.input == truth["asked"] and case.trace is not None and case.trace.output == truth["answer"]
    sent = {m["tool_call_id"]: m["content"] for m in truth["tool_messages"]}
    asked = sorted((c["id"], c["name"], c["arguments"], sent[c["id"]], None) for c in truth["model_calls"])
    assert sorted((c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()) == asked == [
        ("call_P", "get_weather", {"city": "Paris"}, "sunny, 21 C", None), ("call_T", "get_weather", {"city": "Tokyo"}, "rainy, 14 C", None)]
    assert [c["item_id"] for c in truth["model_calls"]] == ["fc_1", "fc_2"]  # (what the reply named the items: not calls)


@pytest.mark.parametrize("name,fmt,scenario", READINGS)
def test_the_model_said_nothing_but_its_answer(name: str, fmt: str, scenario: str) -> None:
    """The reply that asked for the calls has no text (`AIMessage.text` is empty): its blocks are no words said on the way."""
    case, truth = only_case(name, fmt)
    assert truth["said"] == ["", truth["answer"]]
    assert case.trace is not None and [s.output for s in case.trace.steps] == [None, truth["answer"]]
    [turn] = case.metadata["otel"]["turns"]
    assert (turn["final_text"], turn["intermediate_texts"]) == (truth["answer"], [])


@pytest.mark.parametrize("name,fmt,scenario", READINGS)
def test_tokens_are_the_servers_counts_cached_and_reasoning_included(name: str, fmt: str, scenario: str) -> None:
    case, truth = only_case(name, fmt)
    usage = case.trace.usage if case.trace is not None else None
    assert usage is not None and usage.requests == truth["requests"] == len(truth["usage"]) == 2
    assert (usage.input_tokens, usage.output_tokens) == (sum(u["input_tokens"] for u in truth["usage"]), sum(u["output_tokens"] for u in truth["usage"])) == (201, 21)
    assert all(u["input_tokens_details"]["cached_tokens"] == 60 and u["output_tokens_details"]["reasoning_tokens"] == 5 for u in truth["usage"])
