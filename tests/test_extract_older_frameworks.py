"""Traces written by older releases of the agent frameworks than tests/data/frameworks was recorded with.

Each fixture in `tests/data/framework-versions/` is trimmed from a run of the scripted tasks
(`tests/frameworks/tasks.py`) recorded with the library version its README names; the test says
what that version wrote differently and what the reader must still get right.
"""

from __future__ import annotations

from pathlib import Path

from framework_truth import only_case

DATA = Path(__file__).parent / "data" / "framework-versions"


def test_smolagents_that_ran_only_the_first_of_two_calls_gives_the_second_no_result() -> None:
    """smolagents 1.17 ran only the first call of a message with two; the other never got the first's result."""
    case = only_case(DATA / "smolagents-1.17-parallel.jsonl", "smolagents")
    calls = [(c.name, c.arguments, c.result) for c in case.trace.tool_calls()]
    assert calls == [("get_weather", {"city": "Paris"}, "sunny, 21 C"), ("get_weather", {"city": "Tokyo"}, None)]
    assert case.trace.output == "Paris is sunny at 21 C; Tokyo is rainy at 14 C."
