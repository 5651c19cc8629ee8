"""The tests every recording of a plain OpenAI chat loop that resends an edited history gets (`tests/data/stripped-history`,
`tests/data/compacted-history`): `history_loop_tests(DATA, SCENARIOS)` makes a test module's two parametrized tests, each
reading `<scenario>.jsonl` (format `otel`) against `<scenario>.truth.json` (what the application itself sent and got)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import extract_path
from test_otel_loop_faults import facts  # (the same facts of a conversation)
from tracejudge.core.records import Case


def history_loop_tests(data: Path, scenarios: list[str]) -> tuple[Callable[[str], None], Callable[[str], None]]:
    """(`test_loop_reads_as_its_truth`, `test_turns_end_on_their_answers`) over `scenarios` of the folder `data`. (Their
    asserts name what they compared: pytest rewrites the asserts of test modules only.)"""

    @pytest.mark.parametrize("name", scenarios)
    def test_loop_reads_as_its_truth(name: str) -> None:
        cases = extract_path(data / f"{name}.jsonl", "otel")
        assert all(isinstance(c, Case) for c in cases), cases
        truth = json.loads((data / f"{name}.truth.json").read_text())["cases"]
        got, want = [facts(c) for c in cases], [{k: v for k, v in t.items() if k != "answers"} for t in truth]
        assert got == want, (got, want)

    @pytest.mark.parametrize("name", scenarios)
    def test_turns_end_on_their_answers(name: str) -> None:
        """One turn per question the user asked, each ending on its answer; the text beside a call is no answer."""
        (case,) = extract_path(data / f"{name}.jsonl", "otel")
        (truth,) = json.loads((data / f"{name}.truth.json").read_text())["cases"]
        turns = case.metadata["otel"]["turns"]
        got, want = [(t["user_text"], t["final_text"]) for t in turns], list(zip(truth["user_turns"], truth["answers"]))
        assert got == want, (got, want)
        assert len(case.metadata["otel"]["traces"]) == truth["usage"]["requests"], (len(case.metadata["otel"]["traces"]), truth["usage"])

    return test_loop_reads_as_its_truth, test_turns_end_on_their_answers
