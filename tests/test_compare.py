"""Argument comparison rules and the optimal pairing every tool-call metric shares."""

from __future__ import annotations

import pytest
from tracejudge.core.records import ToolCall
from tracejudge.stages.score.matching import max_matching
from tracejudge.stages.score.value_match import ABSENT, first_difference, is_matcher, match_arguments, match_top_level, match_value


def test_json_string_arguments_are_decoded_and_numbers_compare_numerically():
    assert match_arguments({"n": 1}, '{"n": 1.0}')
    assert ToolCall(name="f", arguments='{"n": 1.0}').arguments == {"n": 1.0}
    assert match_arguments({"n": 1}, ToolCall(name="f", arguments='{"n": 1.0}').arguments)
    assert not match_arguments({"n": 1}, '{"n": 2}')


def test_undecodable_arguments_never_match_a_mapping():
    call = ToolCall(name="f", arguments="{not json")
    assert call.arguments_invalid and call.arguments == "{not json"
    assert not match_arguments({}, call.arguments)
    assert match_arguments(None, call.arguments)  # name-only expectation
    assert first_difference({"a": 1}, call.arguments).startswith("arguments are not a JSON object")


@pytest.mark.parametrize(("expected", "actual"), [(True, 1), (1, True), (False, 0), (0.0, False), ({"$approx": 1.0, "tol": 0.5}, True)])
def test_a_bool_is_never_a_number(expected, actual):
    assert not match_value(expected, actual)


def test_bools_equal_bools_and_none_equals_none():
    assert match_value(True, True) and not match_value(True, False)
    assert match_value(None, None) and not match_value(None, 0)


def test_key_order_never_matters_and_nested_mappings_compare_key_by_key():
    exp = {"a": {"x": 1, "y": [1, {"z": 2}]}, "b": "s"}
    act = {"b": "s", "a": {"y": [1.0, {"z": 2.0}], "x": 1}}
    assert match_arguments(exp, act, "exact")
    # subset: extra keys allowed at every depth
    assert match_arguments({"a": {"x": 1}}, {"a": {"x": 1, "extra": 0}, "k": 1}, "subset")
    assert not match_arguments({"a": {"x": 1}}, {"a": {"x": 1, "extra": 0}}, "exact")
    assert first_difference({"a": {"x": 1}}, {"a": {"x": 2}}) == "a.x: expected 1, got 2"


def test_lists_compare_item_by_item_in_order():
    assert match_value([1, 2], [1, 2])
    assert not match_value([1, 2], [2, 1])
    assert not match_value([1, 2], [1, 2, 3])
    assert not match_value([1], "1")


def test_strings_compare_exactly():
    assert not match_value("NY", "ny")
    assert not match_value("1", 1)


def test_matchers_and_their_nesting():
    assert match_value({"$any_of": ["NY", "New York"]}, "New York")
    assert match_value({"$regex": r"^#W\d+$"}, "#W123") and not match_value({"$regex": "x"}, 5)
    assert match_value({"$approx": 3.0, "tol": 0.01}, 3.005) and not match_value({"$approx": 3.0, "tol": 0.01}, 3.02)
    # matcher keys in any order
    assert is_matcher({"tol": 0.1, "$approx": 1}) and match_value({"tol": 0.1, "$approx": 1}, 1.05)
    # nested: $any_of of matchers, matchers inside lists and mappings
    assert match_value({"$any_of": [{"$regex": "^a"}, {"$approx": 5, "tol": 1}]}, 5.5)
    assert match_arguments({"items": [{"id": {"$regex": "^i"}}]}, {"items": [{"id": "i7", "q": 1}]})
    # $absent: the key must be missing; inside $any_of it makes a parameter optional
    optional = {"unit": {"$any_of": ["units", {"$absent": True}]}}
    assert match_arguments(optional, {}, "exact")
    assert match_arguments(optional, {"unit": "units"}, "exact")
    assert not match_arguments(optional, {"unit": "cm"}, "exact")
    assert match_arguments({"k": {"$absent": True}}, {"other": 1})
    assert not match_arguments({"k": {"$absent": True}}, {"k": None})
    assert match_value({"$absent": False}, "anything") and not match_value({"$absent": False}, ABSENT)
    # a mapping with extra keys is a literal, not a matcher
    assert not is_matcher({"$regex": "x", "flags": 1})
    assert match_value({"$regex": "x", "flags": 1}, {"flags": 1, "$regex": "x"})


def test_top_level_subset_compares_nested_values_in_full():
    assert match_top_level({"a": {"x": 1}}, {"a": {"x": 1}, "b": 2}, "subset")
    assert not match_top_level({"a": {"x": 1}}, {"a": {"x": 1, "y": 2}}, "subset")
    assert not match_top_level({"a": 1}, {"a": 1, "b": 2}, "exact")


def test_max_matching_is_optimal_not_greedy():
    # Greedy in list order would give expected[0] the only actual that expected[1] can use.
    expected = ["ab", "a"]
    actual = ["a", "ab"]
    pairs = max_matching(expected, actual, lambda e, a: a in e)
    assert pairs == [(0, 1), (1, 0)]
    # one actual call serves at most one expected call
    assert len(max_matching(["x", "x"], ["x"], lambda e, a: e == a)) == 1


def test_a_catastrophic_regex_costs_one_score_not_the_run():
    from tracejudge.core.records import Case
    from tracejudge.stages.score import ToolCalls, score_case

    case = Case.model_validate({
        "id": "r", "expected_tool_calls": [{"name": "s", "arguments": {"q": {"$regex": "(a|a)+$"}}}],
        "trace": {"steps": [{"tool_calls": [{"name": "s", "arguments": {"q": "a" * 30 + "!"}}]}]},
    })
    score = score_case(case, [ToolCalls()])["ToolCalls"]
    assert score.value is None and "took over 1 s" in score.reason
