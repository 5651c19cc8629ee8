"""`{"$strict": v}`: the value with every number of the same JSON kind, at any depth (BFCL's type check: an `integer`
parameter refuses `5.0`, a list of integers `[1.0, 2]`), through `match_value` and a `ToolCalls` score whose reason names
the argument that differs."""

from __future__ import annotations

import pytest
from helpers import make_case
from tracejudge.stages.score import ToolCalls
from tracejudge.stages.score.value_match import match_value


@pytest.mark.parametrize(("expected", "actual", "met"), [
    (5, 5, True), (5, 5.0, False), (5.0, 5, False), (5.0, 5.0, True), (True, 1, False), (1, True, False), ("5", 5, False),
    ([1, 2], [1, 2], True), ([1, 2], [1.0, 2], False), ([1.5, 2.0], [1.5, 2], False),  # (the items too, not the list alone)
    ({"a": 1.0, "b": [1]}, {"a": 1.0, "b": [1]}, True), ({"a": 1.0}, {"a": 1}, False), ({"b": [1]}, {"b": [True]}, False),
    ([[1]], [[1.0]], False), (None, None, True), ("x", "x", True),
])
def test_strict_wants_the_same_kind_of_value_at_every_depth(expected, actual, met):
    assert match_value({"$strict": expected}, actual, "exact") is met
    if met is False and type(expected) is type(actual) is list:
        assert match_value(expected, actual, "exact") is (expected == actual)  # (plain: numbers by value, as before)


def test_a_strict_list_missed_is_a_reason_naming_the_argument():
    case = make_case([{"name": "area", "arguments": {"sides": {"$strict": [3, 4]}}}],
                     [{"name": "area", "arguments": {"sides": [3.0, 4]}}])
    score = ToolCalls(arguments="exact").evaluate(case)
    assert score.value == 0.0 and "sides" in score.reason, score.reason
