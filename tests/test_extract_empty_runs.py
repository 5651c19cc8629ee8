"""A framework record that holds nothing the agent did is one invalid record, never an `ok` case that passes."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import extract_lines
from tracejudge.core.records import Case

EMPTY = [
    ("smolagents", []),
    ("smolagents", {"id": "x", "steps": []}),
    ("openai-agents", {"trace": {"id": "trace_1"}, "spans": []}),
    ("langfuse", {"id": "t1", "observations": []}),
    ("mlflow", {"info": {"trace_id": "tr-1"}, "data": {"spans": []}}),
]


@pytest.mark.parametrize(("fmt", "record"), EMPTY, ids=[f"{f}-{i}" for i, (f, _) in enumerate(EMPTY)])
def test_an_empty_run_is_invalid_input(tmp_path, fmt: str, record: Any) -> None:
    [got] = extract_lines(tmp_path, fmt, [record])
    assert not isinstance(got, Case), got
    _, info = got
    assert info.kind == "invalid_input" and info.line == 1 and ("no step" in info.message or "no span" in info.message), info


def test_a_wrong_typed_step_list_says_what_it_got(tmp_path) -> None:
    [(_, info)] = extract_lines(tmp_path, "smolagents", [{"steps": "x"}])
    assert info.message == "steps: expected a list of memory steps, got a string" and info.field == "steps"
