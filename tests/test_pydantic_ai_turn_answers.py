"""pydantic-ai's structured output: every turn's answer is its request's output, and a refused answer is said.

Recorded by the real pydantic-ai (2.62.0, data-format versions 2, 3 and 5) against the project's scripted
loopback server (`tests/frameworks/record_pydantic_ai_answers.py`; `tests/data/pydantic-ai-answers/README.md`
says what each scenario is). An `output_type=` model is answered through the `final_result` output tool:

- over several runs sharing `message_history`, each earlier run's answer was in no step and not in the judge's
  prompt (an empty `Step 3:` before `User 2:`); the request that gave it now has it as its output;
- an answer pydantic-ai refused (validation errors, an output validator's `ModelRetry`) was an empty step; the
  step now shows what the model gave and, as the step's error, what pydantic-ai sent back. It is no tool call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case
from tracejudge.stages.judge.metrics import TaskCompletion
from tracejudge.stages.judge.trace_text import final_output

pytest.importorskip("pydantic_ai", reason="the View readers are tested on recordings; the recorder needs pydantic-ai only to re-record")

DATA = Path(__file__).parent / "data" / "pydantic-ai-answers"
HISTORY = ["history_v2", "history_v3", "history_v5"]
RETRY = ["output_retry_v2", "output_retry_v5"]
PARIS = '{"city":"Paris","temp_c":21,"summary":"Sunny"}'
TOKYO = '{"city":"Tokyo","temp_c":14,"summary":"Rainy"}'
INVALID = "output rejected: temp_c: Input should be a valid integer, unable to parse string as an integer; summary: Field required"


@pytest.fixture
def extract() -> Any:
    """`only_case` of a recording of this folder, read as `otel`."""
    return lambda scenario: only_case(DATA / f"{scenario}.jsonl", "otel")


def _outputs(scenario: str) -> list[Any]:
    """What each run returned (`<scenario>.outcome.json`)."""
    return json.loads((DATA / f"{scenario}.outcome.json").read_text())["outputs"]


def _prompt(case: Case) -> str:
    return TaskCompletion().plan(case).render(0)


@pytest.mark.parametrize("scenario", HISTORY)
def test_each_turns_answer_is_the_output_of_the_request_that_gave_it(extract, scenario):
    case = extract(scenario)
    steps = case.trace.steps
    assert _outputs(scenario) == [json.loads(PARIS), json.loads(TOKYO)]
    assert [s.output for s in steps] == [None, PARIS, TOKYO]  # (it was [None, None, None]: run 1's answer was nowhere in the steps)
    assert [c.name for c in case.trace.tool_calls()] == ["get_weather"]  # final_result is the answer, never a tool call
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(0, "What's the weather in Paris?"), (2, "And in Tokyo?")]
    turns = case.metadata["otel"]["turns"]
    assert [t["final_text"] for t in turns] == [PARIS, TOKYO] and [t["intermediate_texts"] for t in turns] == [[], []]
    assert case.trace.output == TOKYO and all(s.error is None for s in steps)


@pytest.mark.parametrize("scenario", HISTORY)
def test_the_judge_sees_every_turns_answer_in_place(extract, scenario):
    text = _prompt(extract(scenario))
    conversation = text.split("## Conversation\n", 1)[1].split("\n\n## Final output", 1)[0]
    assert conversation.splitlines() == [
        "User 1: What's the weather in Paris?",
        "Step 1:", " call 1: get_weather({city:Paris})", "  result: {sky:sunny,temp_c:21}",
        "Step 2:", " output: {city:Paris,summary:Sunny,temp_c:21}",
        "User 2: And in Tokyo?",
        "Step 3:", " output: {city:Tokyo,summary:Rainy,temp_c:14}",
    ]
    assert "## Final output\n(the output of step 3 above)" in text  # said once


@pytest.mark.parametrize("scenario", RETRY)
def test_a_refused_answer_is_the_steps_output_with_what_pydantic_ai_sent_back(extract, scenario):
    case = extract(scenario)
    steps = case.trace.steps
    assert [(s.output, s.error) for s in steps] == [('{"city":"Paris","temp_c":"warm"}', INVALID), (PARIS, None), (TOKYO, None)]
    assert case.trace.tool_calls() == [] and all(not s.tool_calls for s in steps)  # output attempts are no tool calls
    assert case.trace.usage.requests == 3  # the refused request was made all the same
    turns = case.metadata["otel"]["turns"]
    assert [t["final_text"] for t in turns] == [PARIS, TOKYO] and _outputs(scenario) == [json.loads(PARIS), json.loads(TOKYO)]
    assert turns[0]["intermediate_texts"] == ['{"city":"Paris","temp_c":"warm"}']  # said, but not the answer
    assert "run_error" not in case.metadata  # the run got past it


@pytest.mark.parametrize("scenario", RETRY)
def test_the_judge_sees_the_refused_answer_and_the_validation_errors(extract, scenario):
    text = _prompt(extract(scenario))
    assert ("User 1: What's the weather in Paris?\nStep 1:\n output: {city:Paris,temp_c:warm}\n"
            f" step error: {INVALID}\nStep 2:\n output: {{city:Paris,summary:Sunny,temp_c:21}}\nUser 2: And in Tokyo?\n") in text


def test_an_output_validators_model_retry_is_the_refusal(extract):
    case = extract("validator_retry")
    retry = "output rejected: temp_c 99 is not a plausible air temperature; check the weather tool"
    assert [(s.output, s.error) for s in case.trace.steps] == [('{"city":"Paris","temp_c":99,"summary":"Hot"}', retry), (PARIS, None)]
    assert case.trace.output == PARIS and _outputs("validator_retry") == [json.loads(PARIS)]


def test_a_wrapped_output_type_answers_with_its_value(extract):
    """`output_type=int`: the model calls `final_result({"response": 21})`, pydantic-ai's answer is `21`."""
    case = extract("scalar")
    assert [s.output for s in case.trace.steps] == ["21"] and case.trace.output == "21" and _outputs("scalar") == [21]
    assert "## Final output\n(the output of step 1 above)" in _prompt(case)


def test_a_last_step_holding_the_output_as_other_json_text_is_pointed_to():
    """The model's arguments and the framework's serialisation of the same value differ in key order and spacing."""
    case = Case.model_validate({"id": "c", "input": "Paris?", "trace": {
        "steps": [{"output": '{"temp_c": 21, "city": "Paris"}'}], "output": '{"city":"Paris","temp_c":21}'}})
    assert final_output(case) == "(the output of step 1 above)"
    for other in ('{"city":"Paris","temp_c":true}', '{"city":"Paris","temp_c":21,"x":1}', "{not json"):
        changed = case.model_copy(update={"trace": case.trace.model_copy(update={"output": other})})
        assert final_output(changed) == other  # another value (`1 == True` in Python, not here), or no JSON: said as it is
