"""LangGraph handoffs beyond the reply form, read from real recordings in `tests/data/langgraph-handoff/`.

Recorded by `tests/frameworks/record_langgraph_handoff.py` (variants `send`, `parallel`, `send-parallel`; its docstring
says what runs, the folder's README what each recording holds), under OpenInference, OpenLLMetry, Langfuse's
`CallbackHandler` and MLflow (`otel`, and `mlflow` for MLflow's own traces). Each truth file holds every call the model
asked for (`model_calls`), what each request sent (`sent`) and what each tool returned (`tool_runs`, a Command's `Send`s
as `sends`):

- the "task description" handoff, `Command(goto=[Send("weather", input)], graph=Command.PARENT)`, answers its call
  with no message: its result is the `Send`, `{"node", "arg"}` (before: the serialised Command, its `Send` a Python
  `repr` string under three of the four instrumentations, a mapping under Langfuse's);
- a call asked for in the same reply as a handoff ran, but LangGraph goes on in the parent graph with only what the
  handoff's Command carries, so no request ever holds its result: it keeps the result and fails saying it reached no
  model (before: its result read as if the model had used it);
- a call whose result a request did send reads as before, that result and no error.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_langgraph_handoff import extract, truth  # (the same folder, read the same way)

VARIANTS = ("send", "parallel", "send-parallel")
READINGS = [(f"{k}-{v}", f"{k}-{v}{ext}", fmt) for v in VARIANTS
            for k, ext, fmt in (("oi", ".jsonl", "otel"), ("tl", ".jsonl", "otel"), ("lf", ".jsonl", "otel"), ("ml", ".otlp.jsonl", "otel"), ("ml", ".mlflow.jsonl", "mlflow"))]
IDS = [f"{f}:{fmt}" for _, f, fmt in READINGS]


def sent_results(want: dict[str, Any]) -> dict[str, Any]:
    """Each call id some request answered -> the content it sent."""
    return {m["tool_call_id"]: m.get("content") for body in want["sent"] for m in body if m["role"] == "tool"}


@pytest.mark.parametrize("name, file, fmt", READINGS, ids=IDS)
def test_each_call_reads_as_what_ran_and_what_a_model_got(name: str, file: str, fmt: str) -> None:
    want = truth(name)
    runs = {r["name"]: r for r in want["tool_runs"]}
    assert len(runs) == len(want["tool_runs"]) == len(want["model_calls"])  # every call ran once
    sent = sent_results(want)
    case = extract(file, fmt)
    calls = case.trace.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [(c["id"], c["name"], c["arguments"]) for c in want["model_calls"]]
    for call in calls:
        run = runs[call.name]
        if call.id in sent:  # a request sent its result
            assert (call.result, call.error) == (sent[call.id], None)
        elif "sends" in run:  # the task-description handoff: no message answered it; it sent the task on
            assert len(run["sends"]) == 1 and (call.result, call.error) == (run["sends"][0], None)
            assert want["sent"][-1] == run["sends"][0]["arg"]["messages"]  # (what the next agent's request held)
        else:  # ran, and no request ever held its result
            assert call.result == run["result"]
            assert call.error is not None and call.error.startswith("ran, but its result reached no model: transfer_to_weather, a handoff")
            assert "'weather'" in call.error


@pytest.mark.parametrize("name, file, fmt", READINGS, ids=IDS)
def test_the_run_answers_without_error(name: str, file: str, fmt: str) -> None:
    want = truth(name)
    case = extract(file, fmt)
    assert "run_error" not in case.metadata
    assert case.trace.output == want["last_message"]["content"] and want["last_message"]["type"] == "ai"
    assert case.input == want["asked"] and case.trace.usage.requests == want["requests"]
    assert [m.content for m in case.trace.user_messages] == [want["asked"]]  # (the task handed on is no user turn)
    assert [s.error for s in case.trace.steps] == [None] * want["requests"]
    assert not (case.metadata.get("mlflow") or {}).get("errors")
