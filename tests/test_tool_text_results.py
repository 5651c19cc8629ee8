"""A tool's text result that reads as a JSON scalar (`"42"`, `"-1.5"`, `"\\"ok\\""`) stays the text the tool gave, as
`"true"` always did, under every instrumentation recorded; a mapping's JSON is the mapping, and a number is a number
where the recording says so (OpenInference's `intValue`).

Recordings: `tests/frameworks/record_tool_text_results.py` (`tests/data/tool-text-results`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path

DATA = Path(__file__).parent / "data" / "tool-text-results"
TEXTS = {"t_int": "42", "t_bool": "true", "t_float": "-1.5", "t_quoted": '"ok"'}
READINGS = ["loop-oi", "loop-tl", "loop-v2", "langgraph-oi", "langgraph-tl", "oi-agents", "export-agents"]


def _results(name: str) -> dict[str, Any]:
    (case,) = extract_path(DATA / f"{name}.jsonl", "openai-agents" if name.startswith("export-") else "otel")
    assert not isinstance(case, tuple), case
    return {c.name: c.result for c in case.trace.tool_calls()}


@pytest.mark.parametrize("name", READINGS)
def test_a_text_that_reads_as_a_json_scalar_stays_the_text(name: str) -> None:
    results = _results(name)
    assert {k: results[k] for k in TEXTS} == TEXTS


@pytest.mark.parametrize("name", READINGS)
def test_a_mapping_and_a_number_read_as_the_recording_says(name: str) -> None:
    results = _results(name)
    # (the SDK's own export keeps the `str()` it sent the model; a plain loop and ToolNode send JSON text, read as its value)
    assert results["mapping"] == ("{'n': 42}" if name.startswith("export-") else {"n": 42})
    # (OpenInference's Agents SDK spans record the returned int as an `intValue`; every other recording has the text)
    assert results["number"] == (42 if name == "oi-agents" else "42")
