"""pydantic-ai's `ToolReturn`: the call's result is what the model was sent, the content beside it no user turn.

Recorded by the real pydantic-ai (2.62) against the project's scripted loopback server, by its own instrumentation at
data-format versions 2, 3 and 5, with OpenInference's pydantic-ai span processor on top, and by MLflow's
`mlflow.pydantic_ai.autolog()` (`tests/frameworks/record_pydantic_ai_tool_returns.py`). Each `<recording>.truth.json` is what the application's
`all_messages()` said: the prompts, each call with the `ToolReturnPart` content the model was sent, the texts the tool added.

Before: each call's result was the whole `ToolReturn` dump (`return_value`, `content`, `metadata` the model never saw,
`kind`); each text of `content` (sent in the user's role after the tool results) was a user turn of its own, and under
OpenInference the run's input and every turn's text were those texts (its agent span's `input.value` is the last user
text). MLflow's tool span records the same dump; its requests hold each added text as a user message of its own.
Now: the result is `return_value`, the user turns are the prompts the application ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import assert_truth, extract, only_case
from tracejudge.core.records import Case
from tracejudge.stages.judge.metrics import TaskCompletion

pytest.importorskip("pydantic_ai", reason="the View readers are tested on recordings; the recorder needs pydantic-ai only to re-record")

DATA = Path(__file__).parent / "data" / "pydantic-ai-tool-returns"
NAMES = [f"tool_return_{kind}" for kind in ("v2", "v3", "v5", "oi")]
MLFLOW = "tool_return_mlflow"


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


@pytest.mark.parametrize("name", [*NAMES, f"{MLFLOW}.otlp"])
def test_a_tool_return_reads_as_the_application_saw_it(name):
    case = only_case(DATA / f"{name}.jsonl", "otel")
    want = truth(name.removesuffix(".otlp"))
    assert_truth(case, want)  # input, user turns, each call's arguments and result, output
    assert [c.result for c in case.trace.tool_calls()] == [{"sky": "sunny", "temp_c": 21}, {"sky": "rainy", "temp_c": 14}]
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, want["user_turns"][0]), (2, want["user_turns"][1])]
    turns = case.metadata["otel"]["turns"]
    assert [t["user_text"] for t in turns] == want["user_turns"] and [t["final_text"] for t in turns] == want["outputs"]


@pytest.mark.parametrize("name", NAMES)
def test_the_judge_sees_no_tool_text_as_the_users(name):
    text = TaskCompletion().plan(only_case(DATA / f"{name}.jsonl", "otel")).render(0)
    conversation = text.split("## Conversation\n", 1)[1].split("\n\n## Final output", 1)[0]
    assert [line for line in conversation.splitlines() if line.startswith("User ")] == ["User 1: What's the weather in Paris?", "User 2: And in Tokyo?"]
    added = truth(name)["added"]
    assert added == [["UV index 8: tell the user to wear sunscreen."], "Typhoon warning in effect."]  # what the tool sent beside its result
    assert "station" not in conversation and "tool-return" not in conversation  # the metadata was for the application only


def test_under_mlflow_each_run_reads_as_the_application_saw_it():
    """MLflow's traces (format `mlflow`): a case a run, the second's history replaying the first's added text."""
    cases = extract(DATA / f"{MLFLOW}.mlflow.jsonl", "mlflow")
    want = truth(MLFLOW)
    assert all(isinstance(c, Case) for c in cases) and len(cases) == 2
    for case, prompt, call, output in zip(cases, want["user_turns"], want["calls"], want["outputs"]):
        assert [m.content for m in case.trace.user_messages] == [prompt]
        assert [(c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == [(call["name"], call["arguments"], call["result"], None)]
        assert case.trace.output == output
