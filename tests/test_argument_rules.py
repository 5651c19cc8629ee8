"""`ToolCalls(arguments=shallow)` is τ²-bench's action rule and pydantic-evals' subset rule; `ArgumentCorrectness(occurrence=…)` follows pydantic-evals."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import make_case
from tracejudge.stages.extract.tau2_bench import expected_from_action
from tracejudge.stages.score import ArgumentCorrectness, ToolCalls

FLIGHTS = {"flights": [{"flight_number": "HAT170", "date": "2024-05-22"}], "payment_id": "cc_1"}
# (expected arguments, actual arguments); each pair is one tool `book` call.
PAIRS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (FLIGHTS, {**FLIGHTS, "insurance": "no"}),  # extra top-level key: allowed
    (FLIGHTS, {"flights": [{"flight_number": "HAT170", "date": "2024-05-22", "origin": "JFK", "price": 120}], "payment_id": "cc_1"}),  # extra nested keys
    (FLIGHTS, {"flights": [{"date": "2024-05-22", "flight_number": "HAT170"}], "payment_id": "cc_1"}),  # nested key order
    (FLIGHTS, {"flights": [{"flight_number": "HAT170"}], "payment_id": "cc_1"}),  # a nested key missing
    (FLIGHTS, {"payment_id": "cc_1"}),  # a top-level key missing
    ({"user": {"id": "u1"}}, {"user": {"id": "u1", "name": "Ann"}}),
    ({"amount": 10}, {"amount": 10.0}),
    ({"n": [1, 2]}, {"n": [2, 1]}),
    ({}, {"anything": 1}),
]


def _tau2_check(action: dict[str, Any], call_args: dict[str, Any]) -> bool:
    """τ²-bench's `Action.compare_with_tool_call` argument rule: the compared keys' values with `==`.

    The compared keys are `compare_args`, else the call's keys (`tool_call.arguments.keys()`), as in every release.
    """
    keys = action.get("compare_args")
    if keys is None:
        keys = call_args.keys()
    if not keys:
        return True
    return {k: v for k, v in call_args.items() if k in keys} == {k: v for k, v in action["arguments"].items() if k in keys}


def _pairs(metric: ToolCalls, expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Does one `book` call with `actual` arguments pair with the expectation: `expected` arguments, or a whole
    expected call (`{"name", "arguments", …}`, as `expected_from_action` gives it)?"""
    exp = expected if "name" in expected else {"name": "book", "arguments": expected}
    case = make_case([exp], [{"name": "book", "arguments": actual}])
    return bool(metric.evaluate(case).details["pairs"])


@pytest.mark.parametrize("expected,actual", PAIRS)
def test_shallow_with_reuse_is_tau2s_action_check(expected, actual):
    action = {"name": "book", "arguments": expected, "compare_args": None}
    metric = ToolCalls(arguments="shallow", pairing="reuse")
    assert _pairs(metric, expected_from_action(action), actual) is _tau2_check(action, actual)
    # And with compare_args restricting the comparison to one key.
    if expected:
        key = next(iter(expected))
        action = {**action, "compare_args": [key]}
        assert _pairs(metric, expected_from_action(action), actual) is _tau2_check(action, actual)


# Where comparing the call's keys and comparing the action's keys part: (compare_args, call arguments) for the
# action book(a=1, b=2). Upstream's verdict is `_tau2_check`'s.
KEY_RULES = [
    (None, {"a": 1}),  # a call omitting an expected key: matches upstream
    (None, {"a": 1, "b": 2, "c": 3}),  # a call with an extra key: fails upstream
    (None, {}),  # a call with no arguments: nothing to compare, matches upstream
    (None, {"a": 1, "b": 3}),  # a value differs
    (["a"], {"a": 1, "c": 3}),  # compare_args given: only its keys
    (["a", "z"], {"a": 1}),  # a listed key on neither side
    (["a", "z"], {"a": 1, "z": 0}),  # a listed key the call alone carries
    ([], {"x": 9}),  # compare_args empty: the name alone
    (["a"], {"a": 1, "b": 2, "c": {"d": 1}}),  # keys compare_args leaves out, the action's and others: ignored
    (["a", "b"], {"a": 1, "b": 2.0, "c": 3}),  # equal as Python's `==` has it, a key left out beside them
    (["a"], {"a": 2, "c": 3}),  # the listed key differs
]


@pytest.mark.parametrize("compare_args,call", KEY_RULES)
def test_each_compare_args_rule_gives_upstreams_verdict(compare_args, call):
    # In `exact` too: it refused a key compare_args leaves out, which upstream never reads.
    action = {"name": "book", "arguments": {"a": 1, "b": 2}, "compare_args": compare_args}
    for arguments in ("shallow", "subset", "exact"):
        metric = ToolCalls(arguments=arguments, pairing="reuse", score="recall")
        assert _pairs(metric, expected_from_action(action), call) is _tau2_check(action, call)


def test_a_call_key_the_action_lacks_is_named_in_the_reason():
    action = {"name": "book", "arguments": {"a": 1, "b": 2}, "compare_args": None}
    case = make_case([expected_from_action(action)], [{"name": "book", "arguments": {"a": 1, "c": 3}}])
    score = ToolCalls(arguments="shallow", pairing="reuse", score="recall").evaluate(case)
    assert score.value == 0.0 and "c" in score.reason.split("closest:", 1)[1]


def test_argument_keys_call_leaves_expectations_without_it_alone():
    # Other formats give no `argument_keys`: their expectations keep comparing their own keys.
    metric = ToolCalls(arguments="shallow")
    assert _pairs(metric, {"a": 1, "b": 2}, {"a": 1}) is False
    assert _pairs(metric, {"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3}) is True
    assert _pairs(ToolCalls(arguments="exact"), {"name": "book", "arguments": {"a": 1, "b": 2}, "argument_keys": "call"}, {"a": 1}) is True
    assert _pairs(ToolCalls(arguments="exact"), {"a": 1}, {"a": 1, "c": 3}) is False
    exact_on_its_keys = {"name": "book", "arguments": {"a": {"n": 1}}, "argument_keys": "expected"}
    assert _pairs(ToolCalls(arguments="exact"), exact_on_its_keys, {"a": {"n": 1}, "c": 3}) is True
    assert _pairs(ToolCalls(arguments="exact"), exact_on_its_keys, {"a": {"n": 1, "m": 2}}) is False  # (nested: still exact)


def test_nested_extra_keys_fail_shallow_but_pass_subset():
    expected, actual = PAIRS[1]
    assert _pairs(ToolCalls(arguments="subset"), expected, actual) is True
    assert _pairs(ToolCalls(arguments="shallow"), expected, actual) is False
    case = make_case([{"name": "book", "arguments": expected}], [{"name": "book", "arguments": actual}])
    score = ToolCalls(arguments="shallow").evaluate(case)
    assert "flights" in score.reason and "(arguments=shallow" in score.reason


@pytest.mark.parametrize("expected,actual", PAIRS)
def test_shallow_is_pydantic_evals_subset_rule(expected, actual):
    case = make_case(None, [{"name": "book", "arguments": actual}])
    ours = ArgumentCorrectness(tool_name="book", expected_arguments=expected).evaluate(case).value == 1.0
    assert _pairs(ToolCalls(arguments="shallow"), expected, actual) is ours
    agentic = pytest.importorskip("pydantic_evals.evaluators.agentic")
    assert ours is (agentic._diff_arguments(actual, expected, "subset") == [])


def test_shallow_keeps_matchers():
    expected = {"flights": {"$any_of": [[{"flight_number": "HAT170"}], []]}, "payment_id": {"$regex": "^cc_"}}
    assert _pairs(ToolCalls(arguments="shallow"), expected, {"flights": [{"flight_number": "HAT170"}], "payment_id": "cc_9", "x": 1})
    assert not _pairs(ToolCalls(arguments="shallow"), expected, {"flights": [{"flight_number": "HAT170", "date": "d"}], "payment_id": "cc_9"})


CALLS = [{"name": "f", "arguments": {"a": 1}}, {"name": "f", "arguments": {"a": 2}}]


SELECTS = [("first", 1.0, True), ("last", 0.0, True), (0, 1.0, True), (1, 0.0, True)]
SELECTS_NONE = [(-1, 0.0, False), (2, 0.0, False), ("middle", 0.0, False), (None, 0.0, False), (1.5, 0.0, False), (True, 0.0, False)]


@pytest.mark.parametrize("occurrence,value,exists", SELECTS + SELECTS_NONE)
def test_any_occurrence_is_accepted_and_a_missing_one_scores_false(occurrence, value, exists):
    metric = ArgumentCorrectness.model_validate({"tool_name": "f", "expected_arguments": {"a": 1}, "occurrence": occurrence})
    score = metric.evaluate(make_case(None, CALLS))
    assert score.value == value
    if not exists:
        assert f"occurrence={occurrence!r} selects none of them" in score.reason


def test_a_bad_case_level_spec_costs_only_that_metric():
    import tracejudge

    case = {"id": "c", "expected_tool_calls": [{"name": "f", "arguments": {"a": 1}}], "trace": {"steps": [{"tool_calls": CALLS}]}}
    bad = [
        {"type": "ArgumentCorrectness", "name": "no_tool", "occurrence": "first"},  # tool_name missing
        {"type": "ToolCalls", "name": "odd", "arguments": "deep"},
        {"type": "NoSuchMetric"},
        {"name": "untyped"},
        {"type": "ArgumentCorrectness", "tool_name": "f", "expected_arguments": {"a": 1}, "occurrence": -1, "name": "neg"},
    ]
    result = tracejudge.evaluate([{**case, "metrics": bad}], [tracejudge.ToolCalls()]).results[0]
    assert result.status.value == "ok" and result.scores["ToolCalls"].value == 2 / 3
    for key, field in (("no_tool", "metrics.0.tool_name"), ("odd", "metrics.1.arguments"), ("NoSuchMetric", "metrics.2.type"), ("untyped", "metrics.3.type")):
        score = result.scores[key]
        assert score.value is None and score.passed is None
        assert score.reason.startswith(f"not computed: case metric spec {field} does not validate"), score.reason
    assert result.scores["neg"].value == 0.0 and "occurrence=-1 selects none" in result.scores["neg"].reason


def test_a_case_without_trace_stays_invalid_input_and_the_docstrings_say_how_pydantic_evals_differs():
    import tracejudge
    from tracejudge.stages.score import MaxModelRequests, MaxToolCalls, ToolCorrectness, TrajectoryMatch

    metrics = [ToolCorrectness(), TrajectoryMatch(), ArgumentCorrectness(tool_name="f"), MaxToolCalls(max_calls=3), MaxModelRequests(max_requests=3), ToolCalls()]
    [result] = tracejudge.evaluate([{"id": "no-trace", "expected_tool_calls": [{"name": "f"}]}], metrics).results
    assert result.status.value == "invalid_input" and result.error.field == "trace" and result.scores == {}
    for metric in metrics:
        assert "No span tree available" in " ".join((type(metric).__doc__ or "").split()), type(metric).__name__


def test_a_matcher_is_met_by_a_copy_of_itself() -> None:
    """Arguments copied from a real call whose values are `$`-keyed mappings (a query language's filter) match that call,
    as pydantic-evals' `ArgumentCorrectness` (plain equality) finds; before, `{"$regex": "^A"}` failed against itself."""
    from tracejudge.stages.score.value_match import match_arguments

    for args in ({"filter": {"$regex": "^A"}}, {"f": {"$any_of": [1, 2]}}, {"f": {"$absent": True}}, {"f": {"$approx": 1, "tol": 0.5}},
                 {"f": [{"$regex": "x"}]}, {"f": {"g": {"$absent": False}}}):
        assert match_arguments(args, dict(args), "subset") and match_arguments(args, dict(args), "exact"), args
    assert match_arguments({"f": {"$regex": "^A"}}, {"f": "Alice"})  # still a matcher for any other value
    assert not match_arguments({"f": {"$absent": True}}, {"f": {"$absent": 1}})  # a bool is never a number, here too


def test_loose_is_bfcls_string_comparison_and_its_reason_shows_the_answer() -> None:
    """`{"$loose": s}` meets the strings BFCL's `standardize_string` makes equal to `s` (spaces and `,./-_*^` dropped,
    lower-cased, `'` as `"`); a BFCL reason showed its old form, a 100-character regex cut to `…`, for "units"."""
    from tracejudge.stages.extract.bfcl import accepted_values
    from tracejudge.stages.score.value_match import match_value, standardize

    m = {"$loose": "New York, NY"}
    for ok in ("New York, NY", "new york ny", "NewYork,NY", "new_york/ny", "NEW-YORK.NY*^"):
        assert match_value(m, ok), ok
    for bad in ("New-York!", "New York", 1, None, ["New York, NY"]):
        assert not match_value(m, bad), bad
    assert match_value({"$loose": "O'Neil"}, 'o"neil') and standardize("April 1, 2024") == "april12024"
    assert match_value({"$loose": "İ"}, "i̇")  # str.lower, as upstream's `.lower()` (a regex's (?i) did not fold this so)
    expected = [{"name": "area", "arguments": {"unit": accepted_values(["units", ""], "string")}}]
    reason = ToolCalls(arguments="exact").evaluate(make_case(expected=expected, calls=[{"name": "area", "arguments": {"unit": "meters"}}])).reason
    assert '"unit":{"$any_of":[{"$loose":"units"},{"$loose":""},{"$absent":true}]}' in reason, reason
    for met in ({"unit": "Units"}, {"unit": " u.n.i.t.s "}, {}):
        assert ToolCalls(arguments="exact").evaluate(make_case(expected=expected, calls=[{"name": "area", "arguments": met}])).value == 1.0, met
