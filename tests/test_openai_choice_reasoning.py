"""Format `otel` on plain Chat Completions loops whose replies carry `reasoning_content`, with `n=2` choices or one
(`tests/data/openai-choice-reasoning`).

Recorded by `tests/frameworks/record_openai_choice_reasoning.py` under openinference-instrumentation-openai and
opentelemetry-instrumentation-openai (OpenLLMetry); `<scenario>.truth.json` is what the application itself sent and got.
What was wrong before: under OpenInference with `n=2`, the first choice's reasoning (only `output.value` holds it) was
given to the last choice's output message, which the reader then leaves out (the application took `choices[0]`): the
steps had no reasoning at all. Now each step's thought holds the reasoning of the choice taken, and none of the other's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import extract_path
from test_otel_loop_faults import facts  # (the same facts of a conversation)
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "openai-choice-reasoning"
SCENARIOS = ["oi-n2-reasoning", "tl-n2-reasoning", "oi-reasoning"]
NOT_TAKEN = ("Paris first; Tokyo can wait.", "Summarise in one line.")  # the second choices' reasoning


@pytest.mark.parametrize("name", SCENARIOS)
def test_loop_reads_as_its_truth(name: str) -> None:
    cases = extract_path(DATA / f"{name}.jsonl", "otel")
    assert all(isinstance(c, Case) for c in cases), cases
    (truth,) = json.loads((DATA / f"{name}.truth.json").read_text())["cases"]
    assert [facts(c) for c in cases] == [{k: v for k, v in truth.items() if k != "thoughts"}]


@pytest.mark.parametrize("name", SCENARIOS)
def test_step_thought_is_the_taken_choice_reasoning(name: str) -> None:
    """Each request's step starts its thought with the reasoning of `choices[0]`; the other choice's is nowhere."""
    (case,) = extract_path(DATA / f"{name}.jsonl", "otel")
    (truth,) = json.loads((DATA / f"{name}.truth.json").read_text())["cases"]
    thoughts = [s.thought for s in case.trace.steps]
    assert [(t or "").split("\n")[0] for t in thoughts] == truth["thoughts"]
    assert not any(other in (t or "") for t in thoughts for other in NOT_TAKEN)
    assert case.trace.output == truth["output"] and truth["thoughts"][-1] not in case.trace.output
