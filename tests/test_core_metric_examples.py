"""The documented examples of the three foundation metrics, with their exact values."""

from __future__ import annotations

import pytest
from tracejudge.core.records import Case
from tracejudge.stages.score import ToolCalls, ToolCorrectness, TrajectoryMatch


def case(expected, actual, failed=()) -> Case:
    """Expected: names or (name, args); actual: names or (name, args); `failed` indexes actual calls."""
    def call(x, i=None):
        name, args = (x, {}) if isinstance(x, str) else x
        out = {"name": name, "arguments": args}
        if i is not None and i in failed:
            out["error"] = "boom"
        return out
    exp = None if expected is None else [{"name": x} if isinstance(x, str) else {"name": x[0], "arguments": x[1]} for x in expected]
    return Case.model_validate({"id": "c", "expected_tool_calls": exp, "trace": {"steps": [{"tool_calls": [call(a, i) for i, a in enumerate(actual)]}]}})


def test_trajectory_in_order_example_from_pydantic_evals():
    s = TrajectoryMatch(order="in_order").evaluate(case(["a", "b", "c"], ["a", "x", "b"]))
    assert s.value == pytest.approx(2 / 3, abs=1e-6)
    assert "LCS=2, precision=2/3=0.667, recall=2/3=0.667, F1=0.667" in s.reason
    assert "first divergence at the 2nd call (trace call #1, step 0) x({}): expected 'b', got 'x'" in s.reason
    assert s.passed is False


@pytest.mark.parametrize(
    ("order", "score", "expected", "actual", "value"),
    [
        ("exact", "f1", ["a", "b"], ["a", "b"], 1.0),
        ("exact", "f1", ["a", "b"], ["b", "a"], 0.0),
        ("exact", "f1", [], [], 1.0),
        ("in_order", "f1", [], [], 1.0),
        ("in_order", "f1", ["a"], [], 0.0),
        ("any_order", "f1", [], ["a"], 0.0),
        ("any_order", "f1", ["search", "search"], ["search"], 2 * (1 * 0.5) / 1.5),
        ("any_order", "f1", ["a", "b"], ["b", "a"], 1.0),
        ("in_order", "precision", ["a", "b", "c"], ["a", "x", "b", "y"], 0.5),
        ("in_order", "recall", ["a", "b", "c"], ["a", "x", "b", "y"], 2 / 3),
        ("in_order", "min", ["a", "b", "c"], ["a", "x", "b", "y"], 0.5),
    ],
)
def test_trajectory_modes(order, score, expected, actual, value):
    assert TrajectoryMatch(order=order, score=score).evaluate(case(expected, actual)).value == pytest.approx(value, abs=1e-6)


def test_trajectory_leaves_failed_calls_out_by_default():
    c = case(["a", "b"], ["a", "b", "b"], failed={1})
    assert TrajectoryMatch().evaluate(c).value == 1.0
    assert TrajectoryMatch(include_failed=True).evaluate(c).value == pytest.approx(0.8)


def test_tool_correctness_is_a_multiset_check():
    s = ToolCorrectness().evaluate(case(["search", "search"], ["search"]))
    assert (s.value, s.passed) == (0.0, False) and s.reason == "missing tools: 'search' (x1)"
    s = ToolCorrectness().evaluate(case(["a"], ["a", "b", "b"]))
    assert s.passed is False and s.reason == "unexpected tools: 'b' (x2)"
    assert ToolCorrectness(allow_extra=True).evaluate(case(["a"], ["a", "b"])).passed is True
    assert ToolCorrectness().evaluate(case([], [])).passed is True
    assert ToolCorrectness().evaluate(case(["a"], ["a", "a"], failed={1})).passed is True
    assert ToolCorrectness(include_failed=True).evaluate(case(["a"], ["a", "a"], failed={1})).passed is False


def test_tool_calls_pairs_duplicates_and_reports_missing_and_unexpected():
    exp = [("weather", {"city": "NY"}), ("weather", {"city": "SH"})]
    s = ToolCalls().evaluate(case(exp, [("weather", {"city": "SH"}), ("weather", {"city": "SH"})]))
    assert s.value == pytest.approx(0.5)
    assert s.details["pairs"] == [[1, 0]] and s.details["missing"] == [0] and s.details["unexpected"] == [1]
    assert 'missing: [0] weather({"city":"NY"}) (closest: call #1, step 0: city: expected "NY", got "SH")' in s.reason
    same = [("search", {"q": "a"}), ("search", {"q": "a"})]
    assert ToolCalls().evaluate(case(same, same)).value == 1.0
    # Reordering the expected list never changes the score.
    swapped = ToolCalls().evaluate(case(list(reversed(exp)), [("weather", {"city": "SH"}), ("weather", {"city": "SH"})]))
    assert swapped.value == s.value


def test_tool_calls_argument_modes_and_empty_expectation():
    exp = [("book", {"id": 1, "seat": {"row": 3}})]
    act = [("book", {"id": 1.0, "seat": {"row": 3, "col": "A"}, "note": "x"})]
    assert ToolCalls(arguments="subset").evaluate(case(exp, act)).value == 1.0
    exact = ToolCalls(arguments="exact").evaluate(case(exp, act))
    assert exact.value == 0.0 and "seat.col: unexpected argument" in exact.reason
    assert ToolCalls(arguments="ignore").evaluate(case([("book", {"id": 2})], act)).value == 1.0
    assert ToolCalls().evaluate(case([("flag", {"on": 1})], [("flag", {"on": True})])).value == 0.0  # a bool is never a number
    assert ToolCalls().evaluate(case([], [])).value == 1.0
    none_expected = ToolCalls().evaluate(case([], ["x"]))
    assert none_expected.value == 0.0 and "no call expected, but 1 made" in none_expected.reason
    assert ToolCalls().evaluate(case(["x"], [])).value == 0.0
    assert ToolCalls().evaluate(case(None, ["x"])).value is None


def test_tool_filters_apply_to_both_sides():
    exp = [("get_user", {}), ("cancel", {"id": 1})]
    act = [("get_user", {}), ("get_user", {}), ("cancel", {"id": 1}), ("think", {})]
    m = ToolCalls(exclude_tools=["get_*", "think"])
    s = m.evaluate(case(exp, act))
    assert s.value == 1.0 and s.details["pairs"] == [[1, 2]]  # indices stay those of the full lists
    assert ToolCalls(include_tools=["cancel"]).evaluate(case(exp, act)).value == 1.0
    assert TrajectoryMatch(order="exact", exclude_tools=["get_*", "think"]).evaluate(case(exp, act)).value == 1.0
