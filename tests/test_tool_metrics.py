"""The tool-call metrics on the issue's edge cases, with their exact values, reasons and details."""

from __future__ import annotations

import pytest
from helpers import call, exp, make_case
from tracejudge.core.registry import build_metric
from tracejudge.stages.score import ToolCallAccuracy, ToolCalls, ToolCorrectness, TrajectoryMatch

# --- ToolCallAccuracy (multivon-eval) ---------------------------------------------------------


def test_ordered_walk_rotated_calls_score_one_third():
    s = ToolCallAccuracy(require_order=True).evaluate(make_case(["a", "b", "c"], ["b", "c", "a"]))
    assert s.value == pytest.approx(1 / 3, abs=1e-6)
    assert s.passed is False  # default threshold 0.7
    assert s.details == {"matched": 1, "missing": ["b", "c"], "unexpected": []}
    assert "first divergence at expected [1] 'b'" in s.reason and "step 2" in s.reason


def test_ordered_walk_never_passing_the_first_expected_name_scores_zero():
    s = ToolCallAccuracy(require_order=True).evaluate(make_case(["search", "fetch", "lookup"], ["fetch", "lookup"]))
    assert s.value == 0.0
    assert s.details["missing"] == ["search", "fetch", "lookup"]
    assert "no call is 'search'" in s.reason


def test_duplicate_expected_names_ordered_unordered_and_peers():
    case = make_case(["search", "search"], ["search"])
    assert ToolCallAccuracy(require_order=True).evaluate(case).value == 0.5
    assert ToolCallAccuracy().evaluate(case).value == 1.0  # names are a set there
    assert TrajectoryMatch(order="any_order").evaluate(case).value == 2 / 3
    tc = ToolCorrectness().evaluate(case)
    assert tc.passed is False and tc.value == 0.0 and "missing tools: 'search' (x1)" in tc.reason


def test_tool_call_accuracy_unordered_penalize_and_empty_expectation():
    case = make_case(["search", "summarize"], ["search", "translate", "translate"])
    assert ToolCallAccuracy().evaluate(case).value == 0.5
    # union of names: {search, summarize, translate}
    assert ToolCallAccuracy(penalize_unexpected=True).evaluate(case).value == pytest.approx(1 / 3, abs=1e-6)
    # ordered: reached 1 / (2 expected + 2 unexpected calls)
    assert ToolCallAccuracy(require_order=True, penalize_unexpected=True).evaluate(case).value == 0.25
    assert ToolCallAccuracy().evaluate(make_case([], [])).value == 1.0
    assert ToolCallAccuracy().evaluate(make_case([], ["x"])).value == 0.0
    assert ToolCallAccuracy().evaluate(make_case(None, ["x"])).value is None


def test_tool_call_accuracy_counts_failed_calls_by_default():
    case = make_case(["search"], [call("search", error="timeout")])
    assert ToolCallAccuracy().evaluate(case).value == 1.0
    assert ToolCallAccuracy(include_failed=False).evaluate(case).value == 0.0


# --- ToolCalls (cogitator) --------------------------------------------------------------------


def test_duplicate_expected_calls_with_the_same_arguments_pair_one_to_one():
    case = make_case([exp("search", q="a"), exp("search", q="a")], [call("search", q="a"), call("search", q="a")])
    s = ToolCalls().evaluate(case)
    assert s.value == 1.0 and s.details["pairs"] == [[0, 0], [1, 1]]
    once = ToolCalls().evaluate(make_case([exp("search", q="a"), exp("search", q="a")], [call("search", q="a")]))
    assert once.value == 2 / 3 and once.details["missing"] == [1]


def test_weather_one_missing_one_unexpected():
    expected = [exp("weather", city="NY"), exp("weather", city="SH")]
    s = ToolCalls().evaluate(make_case(expected, [call("weather", city="SH"), call("weather", city="SH")]))
    assert s.value == 0.5
    assert s.details["pairs"] == [[1, 0]] and s.details["missing"] == [0] and s.details["unexpected"] == [1]
    assert 'missing: [0] weather({"city":"NY"})' in s.reason
    assert "closest: call #1, step 1: city: expected \"NY\", got \"SH\"" in s.reason
    assert 'unexpected: #1 (step 1) weather({"city":"SH"})' in s.reason


def test_weather_swapped_is_full_unordered_but_not_ordered():
    expected = [exp("weather", city="NY"), exp("weather", city="SH")]
    case = make_case(expected, [call("weather", city="SH"), call("weather", city="NY")])
    s = ToolCalls().evaluate(case)
    assert s.value == 1.0 and s.details["pairs"] == [[0, 1], [1, 0]]
    # the reason still says where an ordered reading diverges: step index, tool, expected vs actual
    # (`#N` is the trace's own 0-based call number everywhere in a reason; a place in the order is an ordinal)
    assert 'first divergence at the 1st call (trace call #0, step 0, tool \'weather\'): expected [0] weather({"city":"NY"}), got weather({"city":"SH"})' in s.reason
    ordered = ToolCalls(order="in_order").evaluate(case)
    assert ordered.value == 0.5 and ordered.details["pairs"] == [[0, 1]]
    assert ordered.details["missing"] == [1] and ordered.details["unexpected"] == [0]
    with pytest.raises(Exception, match="in_order cannot be combined"):
        build_metric({"type": "ToolCalls", "order": "in_order", "pairing": "reuse"})


def test_first_fit_pairing_takes_the_first_free_call_and_never_re_pairs():
    # BFCL's `parallel_function_checker_no_order`: an expected call that accepts either call takes the first one
    expected = [exp("weather", city={"$any_of": ["NY", "SH"]}), exp("weather", city="NY")]
    case = make_case(expected, [call("weather", city="NY"), call("weather", city="SH")])
    assert ToolCalls().evaluate(case).value == 1.0
    s = ToolCalls(pairing="first_fit").evaluate(case)
    assert s.value == 0.5 and s.details["pairs"] == [[0, 0]] and s.details["missing"] == [1] and "pairing=first_fit" in s.reason
    swapped = make_case(expected, [call("weather", city="SH"), call("weather", city="NY")])
    assert ToolCalls(pairing="first_fit").evaluate(swapped).details["pairs"] == [[0, 0], [1, 1]]
    with pytest.raises(Exception, match="in_order cannot be combined"):
        build_metric({"type": "ToolCalls", "order": "in_order", "pairing": "first_fit"})


def test_string_arguments_decoded_before_matching():
    case = make_case([exp("f", n=1)], [{"name": "f", "arguments": '{"n": 1.0}'}])
    assert ToolCalls(arguments="exact").evaluate(case).value == 1.0


def test_tool_calls_argument_modes_and_scores():
    case = make_case([exp("f", a=1)], [call("f", a=1, b=2), call("g")])
    assert ToolCalls(arguments="subset", score="recall").evaluate(case).value == 1.0
    assert ToolCalls(arguments="subset", score="precision").evaluate(case).value == 0.5
    assert ToolCalls(arguments="subset").evaluate(case).value == 2 / 3
    assert ToolCalls(arguments="exact").evaluate(case).value == 0.0
    assert ToolCalls(arguments="ignore", score="recall").evaluate(case).value == 1.0


def test_tool_calls_empty_sides_and_no_expectation():
    assert ToolCalls().evaluate(make_case([], [])).value == 1.0
    s = ToolCalls().evaluate(make_case([], ["x"]))
    assert s.value == 0.0 and "no call expected, but 1 made" in s.reason
    assert ToolCalls().evaluate(make_case(["x"], [])).value == 0.0
    assert ToolCalls().evaluate(make_case(None, ["x"])).value is None


def test_tool_calls_with_nothing_expected_scores_the_figure_score_names():
    # Recall of an empty expectation is 1.0 whatever was called (τ²-bench rewards a task without actions 1.0);
    # precision and F1 are 1.0 only when nothing was called. The value agrees with details either way.
    made, none = make_case([], ["x", "y"]), make_case([], [])
    for score, with_calls in (("recall", 1.0), ("precision", 0.0), ("f1", 0.0)):
        s = ToolCalls(score=score).evaluate(made)
        assert s.value == with_calls == s.details[score], score
        assert ToolCalls(score=score).evaluate(none).value == 1.0
    assert ToolCalls(pairing="reuse", score="recall").evaluate(made).value == 1.0


def test_tool_calls_reuse_pairing_lets_one_call_meet_two_expectations():
    case = make_case([exp("get", id=1), exp("get", id=1)], [call("get", id=1)])
    assert ToolCalls(pairing="reuse").evaluate(case).value == 1.0
    assert ToolCalls(pairing="reuse").evaluate(case).details["pairs"] == [[0, 0], [1, 0]]
    assert ToolCalls().evaluate(case).value == 2 / 3


def test_tool_calls_reuse_pairing_says_so_and_counts_the_duplicate_calls_it_credits():
    # τ²-bench's rule credits a repeated call: [weather(NY), weather(SH)] vs [weather(SH), weather(SH)].
    case = make_case([exp("weather", city="NY"), exp("weather", city="SH")], [call("weather", city="SH"), call("weather", city="SH")])
    s = ToolCalls(pairing="reuse", arguments="exact").evaluate(case)
    assert s.details["precision"] == 1.0 and s.value == 2 / 3
    assert s.details["duplicates_credited"] == 1
    assert "pairing=reuse" in s.reason and "1 duplicate call(s) credited" in s.reason
    plain = ToolCalls(arguments="exact").evaluate(case)
    assert "duplicates_credited" not in plain.details and "reuse" not in plain.reason


def test_failed_calls_switch():
    case = make_case([exp("f")], [call("f", error="boom")])
    assert ToolCalls().evaluate(case).value == 1.0  # cogitator records every call
    assert ToolCalls(include_failed=False).evaluate(case).value == 0.0
    assert TrajectoryMatch().evaluate(case).value == 0.0  # pydantic-evals leaves failed attempts out
    assert TrajectoryMatch(include_failed=True).evaluate(case).value == 1.0


def test_include_exclude_globs_apply_to_both_sides():
    case = make_case([exp("get_x"), exp("book")], [call("book"), call("get_y")])
    m = build_metric({"type": "ToolCalls", "exclude_tools": ["get_*"]})
    s = m.evaluate(case)
    assert s.value == 1.0 and s.details["pairs"] == [[1, 0]]


# --- TrajectoryMatch / ToolCorrectness (pydantic-evals) ---------------------------------------


def test_trajectory_match_modes_and_scores():
    case = make_case(["a", "b", "c"], ["a", "x", "b"])
    s = TrajectoryMatch().evaluate(case)
    assert s.value == 2 / 3
    assert "first divergence at the 2nd call (trace call #1, step 1) x({})" in s.reason
    assert TrajectoryMatch(order="exact").evaluate(case).value == 0.0
    assert TrajectoryMatch(score="min").evaluate(make_case(["a", "b"], ["a", "x", "b"])).value == 2 / 3
    assert TrajectoryMatch(score="recall").evaluate(make_case(["a", "b"], ["a", "x", "b"])).value == 1.0
    assert TrajectoryMatch(order="exact").evaluate(make_case([], [])).value == 1.0
    assert TrajectoryMatch().evaluate(make_case([], ["a"])).value == 0.0


def test_tool_correctness_allow_extra():
    case = make_case(["a"], ["a", "b"])
    assert ToolCorrectness().evaluate(case).passed is False
    assert ToolCorrectness(allow_extra=True).evaluate(case).passed is True
    assert ToolCorrectness().evaluate(make_case([], [])).passed is True


def test_reason_shows_where_two_long_arguments_differ():
    # Two SQL queries that agree for 80 characters: cut at the same place they would read the same.
    common = "SELECT id, name, email FROM customers WHERE created_at > '2024-01-01' AND region = "
    s = ToolCalls(arguments="exact").evaluate(make_case([exp("sql", q=common + "'EU' ORDER BY id")], [call("sql", q=common + "'US' ORDER BY id")]))
    assert s.passed is False
    assert "'EU' ORDER BY id" in s.reason and "'US' ORDER BY id" in s.reason, s.reason


# --- one numbering in a reason ------------------------------------------------------------------------


def test_a_reason_numbers_calls_one_way_the_trace_s_own_number_after_a_hash():
    # A reason listed `#0 … #1 get_weather`, `closest: call #1` (the trace's 0-based numbers), then said `first divergence
    # at call #1 (trace call 0, …)`: 1-based there. Now `#N` is always the trace's call number; a place in order is an ordinal.
    case = make_case([exp("get_weather", city="Paris")], [call("search", q="weather"), call("get_weather", city="paris")])
    reason = ToolCalls(order="in_order").evaluate(case).reason
    assert "(closest: call #1, step 1: city: " in reason and "unexpected: #0 (step 0) search(" in reason
    assert "in order, first divergence at the 1st call (trace call #0, step 0, tool 'search')" in reason
    assert "call #1 (trace call 0" not in reason
    extra = ToolCalls(order="in_order").evaluate(make_case([exp("search")], [call("search"), call("get_weather")])).reason
    assert "in order, an extra 2nd call (trace call #1, step 1): get_weather({})" in extra
    short = ToolCalls().evaluate(make_case([exp("search"), exp("get_weather")], [call("search")])).reason
    assert "in order, the calls end after 1 call; next expected [1] get_weather({})" in short
    none = ToolCalls().evaluate(make_case([exp("search")], [])).reason
    assert "in order, the calls end after 0 calls; next expected [0] search({})" in none
    walk = ToolCallAccuracy(require_order=True).evaluate(make_case(["a", "b"], ["a", "c"])).reason
    assert "after the 1st call (trace call #0, step 0) no later call is 'b'" in walk
    ended = TrajectoryMatch(order="in_order").evaluate(make_case(["a", "b", "c"], ["a", "b"])).reason
    assert "first divergence at the 3rd call: expected 'c', but the trajectory ended" in ended
