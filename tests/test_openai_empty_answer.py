"""Format `otel` on plain Chat Completions loops whose answer is `""` (`tests/data/openai-empty-answer`).

Recorded by `tests/frameworks/record_openai_empty_answer.py` under openinference-instrumentation-openai and
opentelemetry-instrumentation-openai (OpenLLMetry); `<scenario>.truth.json` is what the application itself sent and got.
What was wrong before: under OpenInference, whose flattening writes no empty content, the answer read as none (`None`),
while the application got `""` and OpenLLMetry's recording of the same loop reads `""`; other formats read an empty
answer as `""` too. Now the completion in `output.value` gives it back, streamed or not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import extract_path
from test_otel_loop_faults import facts  # (the same facts of a conversation)
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "openai-empty-answer"


@pytest.mark.parametrize("name", ["oi-empty", "oi-stream-empty", "tl-empty", "tl-stream-empty"])
def test_loop_reads_as_its_truth(name: str) -> None:
    cases = extract_path(DATA / f"{name}.jsonl", "otel")
    assert all(isinstance(c, Case) for c in cases), cases
    assert [facts(c) for c in cases] == json.loads((DATA / f"{name}.truth.json").read_text())["cases"]


@pytest.mark.parametrize("name", ["oi-empty", "oi-stream-empty"])
def test_empty_answer_is_the_last_step_output(name: str) -> None:
    """The answer's step says `""`, and the run's one turn ended on it."""
    (case,) = extract_path(DATA / f"{name}.jsonl", "otel")
    assert [s.output for s in case.trace.steps] == [None, ""]
    assert [t["final_text"] for t in case.metadata["otel"]["turns"]] == [""]
