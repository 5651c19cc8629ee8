"""Anthropic's assistant prefill: the answer is the prefill followed by the model's continuation (`tests/data/anthropic-prefill`).

Recorded by `tests/frameworks/record_anthropic_prefill.py` under OpenInference and OpenLLMetry's Anthropic
instrumentations and MLflow's Anthropic autolog, with an OpenAI request ending with an assistant message beside them;
`<scenario>.truth.json` is the answer the application put together. What was wrong before: the step's output and the
case's output were the continuation alone (`Oslo", "temp_c": -3}`), not the JSON the application had; under MLflow after
the other readers had been mended, and a newline prefill lost there too. Format `anthropic-messages` read a prefill
logged as a message of its own as a step of its own, the continuation another.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.otel.conventions.anthropic_prefill import prefill

DATA = Path(__file__).parent / "data" / "anthropic-prefill"


def _case(name: str, fmt_name: str = "otel") -> Any:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=DATA / f"{name}.jsonl", format=fmt_name)
    ctx = fmt.prepare(ds)
    [case] = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    return case


@pytest.mark.parametrize("name", ["anthropic-oi", "anthropic-tl"])
def test_the_answer_to_a_prefilled_request_is_the_prefill_then_the_continuation(name: str) -> None:
    case, truth = _case(name), json.loads((DATA / f"{name}.truth.json").read_text())
    assert truth["answer"].startswith('{"city": "')
    assert [s.output for s in case.trace.steps] == [truth["answer"]]
    assert case.trace.output == truth["answer"]
    assert case.metadata["otel"]["turns"][0]["final_text"] == truth["answer"]
    assert case.input == truth["input"]
    assert case.trace.usage.requests == 1


@pytest.mark.parametrize(("name", "fmt"), [("anthropic-mlflow.mlflow", "mlflow"), ("anthropic-mlflow", "otel")])
def test_mlflow_anthropic_autolog_joins_each_prefill_to_its_continuation(name: str, fmt: str) -> None:
    case, truth = _case(name, fmt), json.loads((DATA / "anthropic-mlflow.truth.json").read_text())
    assert truth["answers"][1].startswith("\n")  # (a prefill of whitespace alone is still the answer's start)
    assert [s.output for s in case.trace.steps] == truth["answers"]
    assert case.trace.output == truth["answers"][-1]
    assert [m.content for m in case.trace.user_messages] == [truth["input"], *truth["turns"]]


def _messages_cases() -> dict[str, Any]:
    fmt = registry.format_for("anthropic-messages")
    ds = DatasetConfig(path=DATA / "anthropic-messages.jsonl", format="anthropic-messages")
    ctx = fmt.prepare(ds)
    return {c.id: c for c in (extract_record(raw, fmt, ctx) for raw in fmt.read(ds))}


@pytest.mark.parametrize("name", ["json", "newline", "tool"])
def test_anthropic_messages_reads_a_prefill_and_its_continuation_as_one_response(name: str) -> None:
    case, truth = _messages_cases()[name], json.loads((DATA / "anthropic-messages.truth.json").read_text())[name]
    assert [s.output for s in case.trace.steps] == truth["outputs"]
    assert [s.thought for s in case.trace.steps] == truth["thoughts"]
    assert [[c.name, c.arguments, c.result] for s in case.trace.steps for c in s.tool_calls] == truth.get("calls", [])
    assert case.trace.output == truth["outputs"][-1]


def test_anthropic_messages_and_otel_read_one_prefilled_answer_alike() -> None:
    assert _messages_cases()["json"].trace.steps[0].output == _case("anthropic-oi").trace.output


def test_another_providers_request_ending_with_the_assistant_keeps_its_reply() -> None:
    case, truth = _case("openai-oi"), json.loads((DATA / "openai-oi.truth.json").read_text())
    assert case.trace.output == truth["answer"] == '{"city": "Oslo"}'


def _m(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


@pytest.mark.parametrize(("inputs", "want"), [
    ([_m("user", {"type": "text", "content": "Hi"}), _m("assistant", {"type": "text", "content": "{"})], "{"),
    ([_m("user", {"type": "text", "content": "Hi"})], None),  # (no prefill: the request ends with the user)
    ([_m("assistant", {"type": "tool_call", "id": "c1", "name": "f", "arguments": {}})], None),  # (a call is no prefill)
    ([_m("assistant", {"type": "text", "content": ""})], None),
    (None, None),
])
def test_a_prefill_is_a_last_assistant_message_of_text_alone(inputs: Any, want: str | None) -> None:
    assert prefill(inputs) == want
