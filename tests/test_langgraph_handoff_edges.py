"""More LangGraph handoff forms, read from real recordings in `tests/data/langgraph-handoff-edges/`.

Recorded by `tests/frameworks/record_langgraph_handoff_edges.py` (its docstring says what runs, the folder's README what
each recording holds), under OpenInference, OpenLLMetry, Langfuse's `CallbackHandler` and MLflow (`otel`, and `mlflow`
for MLflow's own traces). Each truth file holds every call the model asked for (`model_calls`), what each request sent
(`sent`), what each tool returned (`tool_runs`, a Command's `Send`s as `sends`) and which agents ran (`answered_by`):

- two "task description" handoffs in one reply (`two-send`): create_react_agent runs each call as a task of its own,
  and the parent graph goes on with the first `ParentCommand` only: the other's agent never runs. That handoff keeps
  its `Send` as its result and fails saying it was dropped (before: both read as delivered, no error), also when
  both go to one agent with different tasks (`two-send-same`: which one went on differs from run to run); when
  ToolNode runs both calls at once (`two-send-joined`, `version="v1"`) their `Send`s go on together: neither fails;
- `Command(goto="weather", graph=Command.PARENT)` with no update (`bare`) answers its call with no message: its result
  is where it went, `{"node": "weather"}` (before: the serialised Command); the model sent it `{}` as arguments,
  which reads as `{}`, not as missing arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_langgraph_handoff import extract, truth  # (read the same way as the first handoff folder)
from test_langgraph_handoff_forms import sent_results

DATA = Path(__file__).parent / "data" / "langgraph-handoff-edges"
VARIANTS = ("two-send", "two-send-same", "two-send-joined", "bare")
READINGS = [(f"{k}-{v}", f"{k}-{v}{ext}", fmt) for v in VARIANTS
            for k, ext, fmt in (("oi", ".jsonl", "otel"), ("tl", ".jsonl", "otel"), ("lf", ".jsonl", "otel"), ("ml", ".otlp.jsonl", "otel"), ("ml", ".mlflow.jsonl", "mlflow"))]
IDS = [f"{f}:{fmt}" for _, f, fmt in READINGS]


@pytest.mark.parametrize("name, file, fmt", READINGS, ids=IDS)
def test_each_call_reads_as_what_ran_and_where_it_went(name: str, file: str, fmt: str) -> None:
    want = truth(name, DATA)
    runs = {r["name"]: r for r in want["tool_runs"]}
    assert len(want["tool_runs"]) == len(want["model_calls"])  # every call ran once
    sent = sent_results(want)
    case = extract(file, fmt, DATA)
    calls = case.trace.tool_calls()
    assert [(c.id, c.name, c.arguments, c.arguments_missing) for c in calls] == [(c["id"], c["name"], c["arguments"], False) for c in want["model_calls"]]
    for call in calls:
        run = runs[call.name]
        if call.id in sent:  # a request sent its result
            assert (call.result, call.error) == (sent[call.id], None)
        elif "sends" in run:  # a task-description handoff: no message answered it; its Send is where it went, with what
            send = next(r["sends"][0] for r in want["tool_runs"] if r["arguments"] == call.arguments)
            assert len(run["sends"]) == 1 and call.result == send
            if send["arg"]["messages"] in want["sent"]:  # its agent ran: a request held the task it sent
                assert call.error is None
            else:  # LangGraph dropped it for another handoff of the reply
                assert call.error is not None and call.error.startswith("ran, but its handoff was dropped: the parent graph went on with another handoff")
                assert call.error.endswith(f"(this one's Send to '{send['node']}' never ran)")
        else:  # the bare handoff: no message answered it, nothing carried
            assert run["result"] == "Command(graph='__parent__', goto='weather')" and want["answered_by"] == ["weather"]
            assert (call.result, call.error) == ({"node": "weather"}, None)


@pytest.mark.parametrize("name, file, fmt", READINGS, ids=IDS)
def test_the_run_answers_without_error(name: str, file: str, fmt: str) -> None:
    want = truth(name, DATA)
    case = extract(file, fmt, DATA)
    assert "run_error" not in case.metadata
    assert case.trace.output == want["last_message"]["content"] and want["last_message"]["type"] == "ai"
    assert case.input == want["asked"] and case.trace.usage.requests == want["requests"] == len(want["sent"])
    assert [m.content for m in case.trace.user_messages] == [want["asked"]]  # (a task handed on is no user turn)
    assert [s.error for s in case.trace.steps] == [None] * want["requests"]
    assert not (case.metadata.get("mlflow") or {}).get("errors")
