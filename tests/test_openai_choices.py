"""Format `otel` on plain Chat Completions loops asking for `n=2` choices, or answered with a refusal.

Recorded by `tests/frameworks/record_openai_choices.py` under openinference-instrumentation-openai and
opentelemetry-instrumentation-openai (OpenLLMetry); the folder's README says what each scenario holds, each
`<scenario>.truth.json` what the application itself sent and got.
What was wrong before: with `n=2` both choices were read as the step's output (the answer was the two answers
joined, and the call of the choice the application never took was a call with no result); a refusal (OpenAI's
`message.refusal`, its content null) was no answer at all. Now the step's output is the first choice, the one
`choices[0]` gives the application, and a refusal is the answer's text, as format `openai-messages` reads it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import extract_path
from test_otel_loop_faults import facts  # (the same facts of a conversation)
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "openai-choices"
SCENARIOS = ["oi-n2", "tl-n2", "oi-refusal", "tl-refusal", "oi-stream-refusal"]




@pytest.mark.parametrize("name", SCENARIOS)
def test_loop_reads_as_its_truth(name: str) -> None:
    cases = extract_path(DATA / f"{name}.jsonl", "otel")
    assert all(isinstance(c, Case) for c in cases), cases
    assert [facts(c) for c in cases] == json.loads((DATA / f"{name}.truth.json").read_text())["cases"]


@pytest.mark.parametrize("name", ["oi-n2", "tl-n2"])
def test_choice_not_taken_is_no_step(name: str) -> None:
    """The first request's step is the first choice: its text and its two calls, nothing of the other choice."""
    (case,) = extract_path(DATA / f"{name}.jsonl", "otel")
    first = case.trace.steps[0]
    assert (first.thought, [c.id for c in first.tool_calls]) == ("Checking both cities.", ["call_p", "call_t"])
    assert case.trace.steps[-1].output == "Paris is sunny (21 C); Tokyo is rainy (14 C)."
