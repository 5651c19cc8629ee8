"""`{"$python_eq": v}`: a value Python's `==` finds equal to `v` (`True == 1 == 1.0`, lists and mappings compared whole
by `==`), whatever the `arguments` mode; what τ²-bench's action check compares argument values with, so the
`tau2-bench` format's expectations use it."""

from __future__ import annotations

import pytest
from helpers import make_case
from tracejudge.stages.score import DeepEvalToolCorrectness, ToolCalls
from tracejudge.stages.score.value_match import ABSENT, match_arguments, match_value, python_values


@pytest.mark.parametrize(("expected", "actual"), [
    (True, 1), (1, True), (0, False), (1.0, True), (1, 1.0), ([1, 2], [True, 2.0]), ({"a": 1}, {"a": True}),
    ([{"a": [0]}], [{"a": [False]}]), ({"$regex": "^A"}, {"$regex": "^A"}), (None, None), ("x", "x"),
    (True, 2), ("1", 1), ({"a": 1}, {"a": 1, "b": 2}), ({"$regex": "^A"}, "Abc"), ([1], [1, 1]), (None, ABSENT),
])
@pytest.mark.parametrize("mode", ["subset", "exact"])
def test_python_eq_is_pythons_equality_in_every_mode(expected, actual, mode):
    assert match_value({"$python_eq": expected}, actual, mode) is (actual is not ABSENT and expected == actual)


def test_the_matcher_mapping_itself_is_no_equal_of_its_value():
    # (other matchers are met by a copy of themselves, for a call whose argument is `$`-keyed; `==` says otherwise here)
    assert match_value({"$python_eq": 1}, {"$python_eq": 1}) is False
    assert match_arguments({"q": {"$python_eq": {"$regex": "^A"}}}, {"q": {"$regex": "^A"}}) is True


def test_python_values_reads_each_matcher_as_its_value_at_any_depth():
    plain = {"a": [1, {"b": "x"}], "c": None}
    assert python_values(plain) is plain  # (nothing to read: the same object, no copy)
    assert python_values({"a": {"$python_eq": {"$regex": "^A"}}, "b": [{"$python_eq": True}], "c": {"$strict": 1}}) == \
        {"a": {"$regex": "^A"}, "b": [True], "c": {"$strict": 1}}


def test_python_values_leave_out_a_key_that_must_be_absent():
    # (`==` over a mapping without the key wants the other without it too: `{"$absent": true}`'s own rule)
    assert python_values({"a": {"$python_eq": 1}, "z": {"$absent": True}, "n": {"y": {"$absent": 1}, "k": 2}}) == {"a": 1, "n": {"k": 2}}
    kept = {"z": {"$absent": False}, "l": [{"$absent": True}], "q": {"$python_eq": {"x": {"$absent": True}}}}
    assert python_values(kept) == {"z": {"$absent": False}, "l": [{"$absent": True}], "q": {"x": {"$absent": True}}}


def test_deepeval_compares_the_value_with_its_own_equality():
    # deepeval compares `input_parameters` with `==`: a τ² expectation's wrapped value is the value there, as before it was wrapped.
    calls = [{"name": "f", "arguments": {"a": True, "b": 3}}]
    wrapped = make_case([{"name": "f", "arguments": {"a": {"$python_eq": 1}, "b": {"$python_eq": 2}}}], calls)
    bare = make_case([{"name": "f", "arguments": {"a": 1, "b": 2}}], calls)
    metric = DeepEvalToolCorrectness(evaluation_params=["input_parameters"])
    assert metric.evaluate(wrapped).value == metric.evaluate(bare).value == 0.5


def test_a_missed_value_is_shown_bare_in_the_reason():
    case = make_case([{"name": "f", "arguments": {"n": {"$python_eq": 2}, "m": {"$python_eq": {"k": [1]}}}}],
                     [{"name": "f", "arguments": {"n": 2.0, "m": {"k": [True], "z": 0}}}])
    score = ToolCalls(arguments="subset").evaluate(case)
    assert score.value == 0.0 and "m.z: unexpected argument 0" in score.reason, score.reason
