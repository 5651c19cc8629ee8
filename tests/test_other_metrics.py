"""ArgumentCorrectness, budgets, retrieval, output checks and usage metrics, with exact values."""

from __future__ import annotations

import pytest
from helpers import call, make_case
from tracejudge.core.registry import SpecError, build_metric
from tracejudge.stages.score import (
    ArgumentCorrectness,
    Contains,
    Cost,
    ExactMatch,
    Latency,
    MaxModelRequests,
    MaxToolCalls,
    Regex,
    RetrievalMRR,
    RetrievalPrecision,
    RetrievalRecall,
    TokenUsage,
)

# --- ArgumentCorrectness (pydantic-evals) -----------------------------------------------------


def refund_case():
    return make_case(
        None,
        [
            call("issue_refund", order_id="1", opts={"fast": True, "note": "x"}),
            call("issue_refund", error="denied", order_id="2"),
            call("issue_refund", order_id="3", n=1.0),
        ],
    )


def test_argument_correctness_subset_is_top_level_only():
    case = refund_case()
    assert ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"order_id": "1"}).evaluate(case).passed is True
    nested = ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"opts": {"fast": True}}).evaluate(case)
    assert nested.value == 0.0
    assert 'opts: expected {"fast":true}, got {"fast":true,"note":"x"}' in nested.reason
    assert nested.details["call"] == 0 and nested.details["mismatches"]["opts"]["present"] is True


def test_argument_correctness_occurrence_and_failed_calls():
    case = refund_case()
    last = ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"order_id": "3", "n": 1}, occurrence="last")
    assert last.evaluate(case).passed is True  # 1 == 1.0
    # failed attempts are not occurrences by default ...
    assert ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"order_id": "3"}, occurrence=1).evaluate(case).passed is True
    # ... and are when include_failed is on
    with_failed = ArgumentCorrectness(tool_name="issue_refund", expected_arguments={"order_id": "2"}, occurrence=1, include_failed=True)
    assert with_failed.evaluate(case).passed is True
    missing = ArgumentCorrectness(tool_name="issue_refund", occurrence=5).evaluate(case)
    assert missing.value == 0.0 and "called 2 time(s); occurrence=5 selects none" in missing.reason
    assert ArgumentCorrectness(tool_name="nope").evaluate(case).reason == "no call to tool 'nope' was recorded"


def test_argument_correctness_exact_and_bool_deviation():
    case = make_case(None, [call("f", a=1, flag=True)])
    assert ArgumentCorrectness(tool_name="f", expected_arguments={"a": 1}, match_mode="exact").evaluate(case).value == 0.0
    assert ArgumentCorrectness(tool_name="f", expected_arguments={"a": 1, "flag": True}, match_mode="exact").evaluate(case).value == 1.0
    # pydantic-evals would accept 1 for True (Python ==); we never do
    assert ArgumentCorrectness(tool_name="f", expected_arguments={"flag": 1}).evaluate(case).value == 0.0
    # a negative occurrence builds, as in pydantic-evals, and selects no call
    assert build_metric({"type": "ArgumentCorrectness", "tool_name": "f", "occurrence": -1}).evaluate(case).value == 0.0


# --- MaxToolCalls / MaxModelRequests ----------------------------------------------------------


def test_max_tool_calls_counts_failed_by_default():
    case = make_case(None, [call("a"), call("b", error="x"), call("c")])
    s = MaxToolCalls(max_calls=2).evaluate(case)
    assert (s.value, s.passed, s.reason) == (0.0, False, "3 tool call(s), budget=2 (over by 1)")
    assert MaxToolCalls(max_calls=2, include_failed=False).evaluate(case).passed is True
    assert MaxToolCalls(max_calls=0).evaluate(make_case(None, [])).passed is True


def test_max_model_requests_prefers_usage_then_counts_steps():
    with_usage = make_case(None, ["a", "b"], trace={"usage": {"requests": 5}})
    s = MaxModelRequests(max_requests=4).evaluate(with_usage)
    assert s.passed is False and s.details == {"count": 5, "budget": 4} and "usage.requests" in s.reason
    counted = MaxModelRequests(max_requests=2).evaluate(make_case(None, ["a", "b"]))
    assert counted.passed is True and counted.details["count"] == 2 and "counted from the trace" in counted.reason


# --- Retrieval (cogitator) --------------------------------------------------------------------

PASSAGES = [
    {"id": "doc-1", "content": "Shipping takes two days."},
    {"id": "doc-4", "content": "A refund is issued within 5 days of the return."},
    {"id": "doc-9", "content": "Refund"},
]


def retrieval_case(expected, retrieved=PASSAGES):
    return make_case(None, [], expected_passages=expected, trace={"retrieved": retrieved})


def test_retrieval_matching_rules():
    # by id, by normalized equal text, by containment of >= 3 words; a single word never contains-matches
    case = retrieval_case(["doc-1", "  REFUND is issued within 5 days  ", "refund", "warranty lasts a year"])
    recall = RetrievalRecall().evaluate(case)
    assert recall.value == 0.75 and recall.details == {"missing": [3]}
    # "refund" equals doc-9's normalized text, so doc-9 is relevant too
    assert RetrievalPrecision().evaluate(case).value == 1.0
    only_word = retrieval_case(["days"])
    assert RetrievalRecall().evaluate(only_word).value == 0.0


def test_retrieval_mrr_and_precision():
    case = retrieval_case(["refund is issued within 5 days"])
    assert RetrievalMRR().evaluate(case).value == 0.5
    assert RetrievalMRR().evaluate(case).details == {"rank": 2}
    assert RetrievalPrecision().evaluate(case).value == pytest.approx(1 / 3, abs=1e-6)
    assert RetrievalMRR().evaluate(retrieval_case(["nothing like this at all"])).value == 0.0


def test_retrieval_edge_cases():
    assert RetrievalRecall().evaluate(retrieval_case([], [])).value == 1.0
    assert RetrievalRecall().evaluate(retrieval_case([])).value == 0.0
    assert RetrievalPrecision().evaluate(retrieval_case(["doc-1"], [])).value == 0.0
    assert RetrievalMRR().evaluate(retrieval_case(None)).value is None


# --- Output checks ----------------------------------------------------------------------------


def out_case(output, expected=None):
    return make_case(None, [], expected_output=expected, trace={"output": output})


def test_exact_match_and_contains():
    assert ExactMatch().evaluate(out_case("  Paris ", "paris")).value == 1.0
    assert ExactMatch(case_sensitive=True).evaluate(out_case("Paris", "paris")).value == 0.0
    assert ExactMatch().evaluate(out_case('{"n": 1.0, "ok": true}', {"ok": True, "n": 1})).value == 1.0
    assert ExactMatch().evaluate(out_case('{"n": 1}', {"n": True})).value == 0.0
    assert ExactMatch().evaluate(out_case("x")).value is None
    assert Contains(value="ORDER #W1").evaluate(out_case("your order #w1 is cancelled")).value == 1.0
    assert Contains(value="ORDER", case_sensitive=True).evaluate(out_case("order")).value == 0.0


def test_exact_match_expected_null_written_out_is_the_json_null():
    # promptfoo's `equals` with value null (and pydantic-evals' `Equals(value=None)`) compare with null; only a case's
    # own null expected_output is no expectation (pydantic-evals' `EqualsExpected` skips it, deepeval refuses it).
    given = build_metric({"type": "ExactMatch", "expected": None})
    assert given.evaluate(out_case("null", "ignored")).value == 1.0
    miss = given.evaluate(out_case("hi", "hi"))
    assert miss.value == 0.0 and miss.reason.startswith("expected the JSON value null")
    assert ExactMatch(expected=None).evaluate(out_case("null")).value == 1.0
    assert build_metric({"type": "ExactMatch"}).evaluate(out_case("null")).value is None
    # the run's config hash and a spec rebuilt from the metric tell it from no `expected` (which dumps as before)
    assert build_metric({"type": "ExactMatch"}).model_dump(mode="json") == {
        "name": None, "threshold": None, "expected": None, "case_sensitive": False, "strip": True}
    rebuilt = build_metric({"type": "ExactMatch", **given.model_dump(mode="json")})
    assert rebuilt.evaluate(out_case("null", "x")).value == 1.0
    with pytest.raises(SpecError, match="says two things"):
        build_metric({"type": "ExactMatch", "expected": None, "expected_null": False})


def test_exact_match_trims_what_javascript_trims():
    # cogitator's `exactMatch` trims with JavaScript's `trim()`: a byte-order mark goes (Python's `strip()` keeps it),
    # U+0085 and U+001C–U+001F stay (Python's drops them). The set was checked against node's `trim()`, code point by code point.
    assert ExactMatch().evaluate(out_case("\ufeffParis", "Paris")).value == 1.0
    assert ExactMatch().evaluate(out_case("Paris\u0085", "Paris")).value == 0.0
    assert ExactMatch().evaluate(out_case("\x1fParis", "Paris")).value == 0.0
    assert ExactMatch().evaluate(out_case("\u3000Paris\u2028\xa0", "Paris")).value == 1.0


def test_regex_and_json_schema():
    assert Regex(pattern=r"#W\d{3}").evaluate(out_case("order #W123 done")).value == 1.0
    assert Regex(pattern=r"#W\d{3}", full_match=True).evaluate(out_case("order #W123 done")).value == 0.0
    with pytest.raises(SpecError):
        build_metric({"type": "Regex", "pattern": "("})
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    js = build_metric({"type": "JsonSchema", "schema": schema})
    assert js.evaluate(out_case('{"n": 3}')).value == 1.0
    bad = js.evaluate(out_case('{"n": "3"}'))
    assert bad.value == 0.0 and bad.reason == "schema validation failed at n: '3' is not of type 'integer'"
    assert js.evaluate(out_case("not json")).reason.startswith("output is not valid JSON")
    with pytest.raises(SpecError):
        build_metric({"type": "JsonSchema", "schema": {"type": "nonsense"}})


# --- Usage ------------------------------------------------------------------------------------


def test_latency_cost_tokens():
    usage = {"input_tokens": 800, "output_tokens": 95, "cost_usd": 0.0031, "latency_s": 2.5}
    case = make_case(None, [], trace={"usage": usage})
    assert Latency(max_seconds=2).evaluate(case).passed is False
    assert Latency().evaluate(case).details == {"latency_s": 2.5}
    assert Cost(max_usd=0.01).evaluate(case).passed is True
    tok = TokenUsage(max_tokens=800).evaluate(case)
    assert tok.value == 0.0 and tok.details == {"input_tokens": 800, "output_tokens": 95, "total_tokens": 895}
    assert Cost().evaluate(make_case(None, [])).value is None


def test_a_negative_latency_is_not_computed_rather_than_within_any_budget():
    # A span that ends before it starts (hosts' clocks out of step) passed every budget as "-5 s, budget 10 s".
    case = make_case(None, [], trace={"usage": {"latency_s": -5.0}})
    got = Latency(max_seconds=10).evaluate(case)
    assert (got.value, got.passed, got.details) == (None, None, {"latency_s": -5.0})
    assert got.reason == "not computed: the trace's latency_s is negative (-5 s; its clock is out of step)"
    assert Latency().evaluate(make_case(None, [], trace={"usage": {"latency_s": 0.0}})).value == 1.0
