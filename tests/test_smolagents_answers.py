"""smolagents `CodeAgent` steps that answer with `final_answer(value)`: the step's output is the answer, whatever its kind.

Recorded by the real smolagents (1.26) against the project's scripted loopback server, by openinference-instrumentation-
smolagents 0.1.43 (format `otel`) and as the agent's memory (format `smolagents`) at once
(`tests/frameworks/record_smolagents_answers.py` says what each scenario runs). Each `<scenario>.truth.json` holds the model's
reply and what `agent.run` returned.

Format `smolagents` reads such a step as the model's reply for its thought and the answer for its output (text as it is,
another value as JSON: the memory's `action_output`), and so did format `otel` for a string. For any other value it read
the step as answering nothing: its output was the model's code (a value passed by position), or `None` beside a tool call,
or the answer in Python's notation (`answer=` a dict); and a number or a list, whose `str()` (the agent span's output) is
JSON too, made the run's answer the model's code. Now both formats read every step alike: the reply its thought, the answer
its output, the run's output the same text.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "smolagents-answers"
SCENARIOS = ("text", "dict", "dict-keyword", "number", "list", "dict-after-tool")
FORMATS = {"oi": "otel", "memory": "smolagents"}


@cache
def reading(name: str, kind: str) -> Case:
    return only_case(DATA / f"{name}.{kind}.jsonl", FORMATS[kind])


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def answer_text(value: Any) -> str:
    """What the run answered, as text: a string as it is, any other value as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


@pytest.mark.parametrize("kind", FORMATS)
@pytest.mark.parametrize("name", SCENARIOS)
def test_the_step_that_answered_has_the_answer_as_its_output(name: str, kind: str) -> None:
    want = truth(name)
    assert want["returned"] == want["last_action_output"]
    case = reading(name, kind)
    assert case.trace is not None
    [step] = case.trace.steps
    assert step.thought == want["reply"]  # (the model's words and code)
    assert step.output == answer_text(want["returned"]) == case.trace.output
    assert case.input == want["task"] and "run_error" not in case.metadata


@pytest.mark.parametrize("name", SCENARIOS)
def test_both_formats_read_the_same_steps(name: str) -> None:
    oi, memory = reading(name, "oi"), reading(name, "memory")
    assert oi.trace is not None and memory.trace is not None
    assert [(s.thought, s.output, s.error) for s in oi.trace.steps] == [(s.thought, s.output, s.error) for s in memory.trace.steps]
    assert oi.trace.output == memory.trace.output


def test_the_tool_the_code_called_before_answering_stays_its_call() -> None:
    want = truth("dict-after-tool")
    case = reading("dict-after-tool", "oi")
    assert case.trace is not None
    assert [(c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == [
        (r["name"], r["arguments"], r["result"], None) for r in want["tool_runs"]]


# A string the run returned that reads as JSON (a number, an object, an array, a quoted string), the empty string, and
# `None`. The instrumentation records the string as it is (the `final_answer` span's output, `text/plain`; the agent span's
# output the same text). Before, the run's answer was that text decoded as JSON: no text for a number, an object or an
# array (the run read as answering its model's whole reply, code and all), `Paris` for `"Paris"`; and `final_answer(None)`
# answered `None` (its `str()`), `final_answer("")` the model's reply, which was also the step's output. (`""` then read as
# no output; it is what the run returned, and is the step's and the run's output now, as the memory reads it.)
STRINGS = ("str-number", "str-json", "str-list", "str-quoted")


@pytest.mark.parametrize("kind", FORMATS)
@pytest.mark.parametrize("name", STRINGS)
def test_a_string_that_reads_as_json_is_the_answer_as_it_is(name: str, kind: str) -> None:
    want = truth(name)
    assert isinstance(want["returned"], str) and want["returned_type"] == "AgentText"
    case = reading(name, kind)
    assert case.trace is not None
    [step] = case.trace.steps
    assert step.thought == want["reply"]
    assert step.output == want["returned"] == case.trace.output
    assert case.input == want["task"] and "run_error" not in case.metadata


@pytest.mark.parametrize("kind", FORMATS)
@pytest.mark.parametrize("name", ("str-empty", "none"))
def test_no_answer_text_is_no_output_and_the_reply_is_the_thought(name: str, kind: str) -> None:
    want = truth(name)
    assert want["returned"] in ("", None)
    case = reading(name, kind)
    assert case.trace is not None
    [step] = case.trace.steps
    assert step.thought == want["reply"]  # (the model's words and code: never what the agent said)
    assert step.output == want["returned"] == case.trace.output  # (`""` is what the run returned, `None` no answer)
    assert case.input == want["task"] and "run_error" not in case.metadata


@pytest.mark.parametrize("name", (*STRINGS, "str-empty", "none"))
def test_both_formats_read_the_same_string_answers(name: str) -> None:
    test_both_formats_read_the_same_steps(name)
