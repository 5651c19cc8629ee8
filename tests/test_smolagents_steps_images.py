"""One smolagents run read two ways — OpenInference's spans (`format: otel`) and its memory (`format: smolagents`) — says
the same: each call's result is what the model was shown, the same steps failed, and the run ended the same way.

The recordings in `tests/data/smolagents-steps-images/` were made with the real library and instrumentation (see its
README); each `<scenario>.truth.json` holds the memory's `observations` and step errors, and what `agent.run` returned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import only_case
from tracejudge.core.records import Case
from tracejudge.stages.extract.common import python_literal

DATA = Path(__file__).parent / "data" / "smolagents-steps-images"
MAX = "AgentMaxStepsError: Reached max steps."
STORED = "Stored 'image.png' in memory."


def _truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def _both(name: str) -> tuple[Case, Case]:
    return only_case(DATA / f"{name}.oi.jsonl", "otel"), only_case(DATA / f"{name}.memory.jsonl", "smolagents")


def _step_errors(case: Case) -> list[str | None]:
    assert case.trace is not None
    return [s.error for s in case.trace.steps]


@pytest.mark.parametrize("name", ["max-steps", "code-tool-raises", "dict-image"])
def test_both_readings_agree_on_step_errors_run_error_and_answer(name: str) -> None:
    spans, memory = _both(name)
    truth = _truth(name)
    assert _step_errors(spans) == _step_errors(memory)
    assert spans.metadata.get("run_error") is None and memory.metadata.get("run_error") is None  # every run returned an answer
    assert spans.trace.output == memory.trace.output == truth["returned"]
    assert [(c.name, c.arguments) for c in spans.trace.tool_calls() if c.name != "python_interpreter"] == \
        [(r["name"], r["arguments"]) for r in truth["tool_runs"]]


def test_a_run_that_ran_out_of_steps_marks_the_step_smolagents_added_in_both_readings() -> None:
    spans, memory = _both("max-steps")
    (error,) = _truth("max-steps")["step_errors"]
    assert f"{error['type']}: {error['message']}" == MAX
    for case in (spans, memory):
        assert _step_errors(case) == [None, None, MAX]
        assert case.trace.steps[-1].output == case.trace.output == _truth("max-steps")["returned"]
        assert case.trace.steps[-1].tool_calls == []
        assert [c.result for c in case.trace.tool_calls()] == ["sunny, 21 C", "rainy, 14 C"]


def test_a_code_step_whose_tool_raised_fails_at_its_call_not_the_step_in_both_readings() -> None:
    # smolagents' AgentExecutionError of step 1 (its `Step 1` span's status): the memory reading keeps it on the step's
    # python_interpreter call, the span reading on the get_weather call that raised; neither on the step itself.
    spans, memory = _both("code-tool-raises")
    (error,) = _truth("code-tool-raises")["step_errors"]
    assert error["step"] == 1 and error["type"] == "AgentExecutionError"
    for case in (spans, memory):
        assert _step_errors(case) == [None, None, None]
        first = case.trace.steps[0].tool_calls
        assert len(first) == 1 and first[0].error is not None and "KeyError: 'Atlantis'" in first[0].error
        assert all(c.error is None for s in case.trace.steps[1:] for c in s.tool_calls)
    assert memory.trace.steps[0].tool_calls[0].error == error["message"]


def test_an_image_result_is_what_the_model_was_shown_not_the_file_it_was_saved_to() -> None:
    spans, memory = _both("dict-image")
    shown = _truth("dict-image")["observations"][0]["observations"]
    assert shown.split("\n")[1] == STORED
    got = {c.name: c.result for c in spans.trace.tool_calls()}
    assert got["get_map"] == STORED
    assert got["lookup_order"] == python_literal(shown.split("\n")[0])  # the dict itself (the model saw its repr)
    assert "<tmp>" not in spans.model_dump_json()
    # the memory keeps the two results joined; either call may hold either line, so both keep the whole text
    assert [c.result for c in memory.trace.tool_calls()] == [shown, shown]
    assert memory.metadata["smolagents"]["shared_results"][0]["calls"] == ["c1", "c2"]


def test_a_saved_file_the_model_was_shown_stays_the_result(tmp_path: Path) -> None:
    # A tool returning an object whose text is a path (a `Path`): the step's observation shows that path, so it is the result.
    text = (DATA / "dict-image.oi.jsonl").read_text()
    path = json.loads(next(a for line in text.splitlines() for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"]
                           for s in ss["spans"] if s["name"] == "SimpleTool" for a in s["attributes"]
                           if a["key"] == "output.value" and "<tmp>" in a["value"]["stringValue"])["value"]["stringValue"])
    changed = tmp_path / "path-shown.oi.jsonl"
    changed.write_text(text.replace(STORED, path))
    got = {c.name: c.result for c in only_case(changed, "otel").trace.tool_calls()}
    assert got["get_map"] == path
