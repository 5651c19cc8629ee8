"""An application's own text that looks like a value the attribute length limit cut is read as the text it is.

The recordings (`tests/frameworks/record_value_lookalike.py`, no length limit set): a tool returns JSON its service cut
at exactly 1,000 characters, a length a limit could have. Taken for the SDK's cut, it was no result: a false warning,
and with `stop_on_first_tool` a run read as paused for approval (its call "not run: awaiting approval").
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "value-limit"


def _case(name: str) -> tuple[Case, dict]:
    [case] = extract_path(DATA / f"oi-{name}.jsonl", "otel")
    assert isinstance(case, Case), case
    return case, json.loads((DATA / f"{name}.truth.json").read_text())


def test_a_text_shorter_than_the_traces_longest_value_was_cut_by_no_limit() -> None:
    case, truth = _case("lookalike-1000")
    [call] = case.trace.tool_calls()
    assert (call.name, call.arguments, call.result, call.error) == (truth["call"], truth["arguments"], truth["result"], None)
    assert case.trace.output == truth["output"] and len(call.result) == 1000
    assert "cut_attributes" not in case.metadata.get("otel", {})


def test_a_tool_whose_output_reads_as_cut_ran_and_is_held_for_no_approval() -> None:
    case, truth = _case("lookalike-stop-1000")
    [call] = case.trace.tool_calls()
    assert call.name == truth["call"] and call.error is None, call
    assert "run_error" not in case.metadata, case.metadata.get("run_error")
