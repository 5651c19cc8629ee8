"""What smolagents and LangGraph runs returned and what failed in them, read as the frameworks recorded it.

Recordings in `tests/data/framework-outputs/` (`tests/frameworks/record_framework_outputs.py`; its docstring says
what each scenario runs, the folder's README the versions); each `<scenario>.truth.json` is what the application
itself sent and got.

- smolagents `CodeAgent` under OpenInference, code that raised: the `Step n` span's ERROR is that step's error
  (before: no error anywhere), as the same run's memory (format `smolagents`) says it.
- smolagents `final_answer` of a dict under OpenInference: the answer is the value as JSON, as in the memory
  format (before: its Python `repr`).
- smolagents memory, parallel calls of one tool, one raised: only that call failed (before: every call of the tool).
- LangGraph tool returning `Command(update={"messages": [ToolMessage]})`: the call's result is the message the
  model got (before: the serialised Command), OpenInference and OpenLLMetry.
- LangGraph `return_direct` tool: the graph's answer is the tool's message (before: no output).
- LangGraph `response_format`: the answer is the `structured_response`, under both instrumentations (before:
  OpenInference read the chat text, OpenLLMetry the JSON).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record

DATA = Path(__file__).parent / "data" / "framework-outputs"


def extract(name: str, fmt_name: str = "otel") -> Case:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=DATA / f"{name}.jsonl", format=fmt_name, options={})
    (case,) = [extract_record(raw, fmt, fmt.prepare(ds)) for raw in fmt.read(ds)]
    assert isinstance(case, Case), case
    return case


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def test_a_failed_code_step_keeps_its_error_under_openinference() -> None:
    want = truth("oi-smol-code-fail")
    (failure,) = want["step_errors"]
    case, memory = extract("oi-smol-code-fail"), extract("mem-oi-smol-code-fail", "smolagents")
    steps = case.trace.steps
    assert len(steps) == want["requests"] == case.trace.usage.requests
    # the step whose code raised (smolagents' step numbers count from 1) says so, as smolagents worded it; no other step
    assert [s.error for s in steps] == [None, f"{failure['type']}: {failure['message']}", None, None]
    assert "x = 21 / 0" in (steps[1].output or steps[1].thought or "")
    # the run recovered: no run error, and its answer is what `run` returned
    assert "run_error" not in case.metadata and case.trace.output == want["returned"]
    # the memory format of the same run holds the same failure (on its python_interpreter call)
    (failed,) = [c for c in memory.trace.tool_calls() if c.error]
    assert failed.error == failure["message"] and failure["message"] in steps[1].error


def test_a_dict_final_answer_is_json_as_in_the_memory_format() -> None:
    want = truth("oi-smol-dict-answer")
    assert want["returned_type"] == "dict"
    case, memory = extract("oi-smol-dict-answer"), extract("mem-oi-smol-dict-answer", "smolagents")
    assert json.loads(case.trace.output) == want["returned"]
    assert case.trace.output == memory.trace.output


@pytest.mark.parametrize("name, fmt", [("mem-oi-smol-parallel-fail", "smolagents"), ("oi-smol-parallel-fail", "otel")])
def test_only_the_parallel_call_that_raised_failed(name: str, fmt: str) -> None:
    want = truth("oi-smol-parallel-fail")
    case = extract(name, fmt)
    calls = [c for c in case.trace.tool_calls() if c.name == "get_weather"]
    raised = {json.dumps(r["arguments"], sort_keys=True): "raised" in r for r in want["tool_runs"]}
    assert {json.dumps(c.arguments, sort_keys=True): c.error is not None for c in calls} == raised
    (failed,) = [c for c in calls if c.error]
    assert "KeyError: 'Atlantis'" in failed.error
    assert case.trace.output == want["returned"]


@pytest.mark.parametrize("kind", ["oi", "tl"])
def test_a_command_tools_result_is_the_message_the_model_got(kind: str) -> None:
    name = f"{kind}-lg-command"
    want = truth(name)
    case = extract(name)
    got = {c.id: c.result for c in case.trace.tool_calls()}
    assert got == {m["tool_call_id"]: m["content"] for m in want["tool_messages"]}
    assert [c.error for c in case.trace.tool_calls()] == [None, None]
    assert case.trace.output == want["last_message"]["content"]


@pytest.mark.parametrize("kind", ["oi", "tl"])
def test_a_return_direct_tools_message_is_the_graphs_answer(kind: str) -> None:
    name = f"{kind}-lg-return-direct"
    want = truth(name)
    assert want["last_message"]["type"] == "tool" and want["requests"] == 1
    case = extract(name)
    assert case.trace.output == want["last_message"]["content"]
    assert [(c.name, c.result) for c in case.trace.tool_calls()] == [("lookup_answer", want["tool_messages"][0]["content"])]


def test_a_structured_response_is_the_answer_under_both_instrumentations() -> None:
    outputs = {}
    for kind in ("oi", "tl"):
        name = f"{kind}-lg-structured"
        want = truth(name)
        case = extract(name)
        assert json.loads(case.trace.output) == want["structured_response"]
        (turn,) = case.metadata["otel"]["turns"]
        assert turn["intermediate_texts"] == [want["last_message"]["content"]]  # the chat reply is said on the way
        # the node `generate_structured_response` (whose span holds one of the same name) is a step of the unnamed graph, no agent
        assert turn["agents"] == []
        outputs[kind] = case.trace.output
    assert outputs["oi"] == outputs["tl"]
