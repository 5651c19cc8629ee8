"""The cases of pydantic-evals' own tests of its agentic evaluators, scored by tracejudge.

Source: pydantic/pydantic-ai `tests/evals/test_agentic_evaluators.py` (hand-built spans for `ToolCorrectness`,
`TrajectoryMatch`, `ArgumentCorrectness`, `MaxToolCalls`, `MaxModelRequests`). Each row states the peer test's spans, the
evaluator and its parameters, the value the peer asserts, and — where the peer asserts what its reason says — the same
facts as tracejudge words them. The spans are read by format `otel`, as an exported pydantic-ai run would be.

The cases `test_pydantic_evals_agentic_parity.py` already scores are left out here unless the peer also asserts their
reason. Not mapped, on purpose: the "no span tree" cases (a case without a trace is `invalid_input` here, where the peer
scores False / 0.0), `MaxModelRequests` read from `ctx.metrics` (tracejudge's `usage.requests`, covered in
`test_other_metrics.py`) and `evaluation_name` (a metric's `name:` here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _pydantic_spans import Span, chat, our_score, peer_value, tool

_RETRIED = [tool("search", '{"q": "bad"}', 0, error=True), tool("search", '{"q": "good"}', 1)]
_DEFERRED = [tool("search", "{}", 0, v3=False), tool("delete_account", "{}", 1, **{"pydantic_ai.tool.deferral.name": "ApprovalRequired"})]


def _named(*names: str, v3: bool = False) -> list[Span]:
    """One successful call per name, in this order, with no arguments (the peer's v2 spans by default)."""
    return [tool(n, "{}", i, v3=v3) for i, n in enumerate(names)]


def _searches(*queries: str) -> list[Span]:
    return [tool("search", f'{{"q": "{q}"}}', i) for i, q in enumerate(queries)]


def _tc(expected: list[str], **options: Any) -> dict[str, Any]:
    return {"type": "ToolCorrectness", "expected_tools": expected, **options}


def _tm(expected: list[str], order: str, **options: Any) -> dict[str, Any]:
    return {"type": "TrajectoryMatch", "expected_trajectory": expected, "order": order, **options}


def _ac(expected: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {"type": "ArgumentCorrectness", "tool_name": "search", "expected_arguments": expected, **options}


# (peer test, spans, metric, the value the peer asserts, facts its reason must carry)
CASES: list[tuple[str, list[Span], dict[str, Any], float, list[str]]] = [
    # --- which spans are tool calls
    ("test_tool_spans_ignore_deferred_tool_calls[only search expected]", _DEFERRED, _tc(["search"]), 1.0, []),
    # peer: "missing tools: 'delete_account' (x1)"
    ("test_tool_spans_ignore_deferred_tool_calls[delete expected]", _DEFERRED, _tc(["search", "delete_account"]), 0.0,
     ["missing tools: 'delete_account' (x1)"]),
    ("test_failed_attempts_excluded_by_default[ToolCorrectness]", _RETRIED, _tc(["search"]), 1.0, []),
    ("test_failed_attempts_excluded_by_default[TrajectoryMatch]", _RETRIED, _tm(["search"], "exact"), 1.0, []),
    # peer: "unexpected tools: 'search' (x1)"
    ("test_failed_attempts_included_when_requested[ToolCorrectness]", _RETRIED, _tc(["search"], include_failed=True), 0.0,
     ["unexpected tools: 'search' (x1)"]),
    ("test_failed_attempts_included_when_requested[TrajectoryMatch]", _RETRIED, _tm(["search", "search"], "exact", include_failed=True),
     1.0, []),
    # peer: "2 tool call(s)"
    ("test_max_tool_calls_counts_failed_attempts_by_default", [tool("search", None, 0, error=True), tool("search", "{}", 1)],
     {"type": "MaxToolCalls", "max_calls": 1}, 0.0, ["2 tool call(s)"]),
    # a span without a model's operation name, a span of another name holding `gen_ai.tool.name`: neither is a call
    ("test_tool_spans_ignore_unrelated_spans",
     [("logfire", {}, 0, "unset"), ("chat", {"gen_ai.request.model": "gpt-5"}, 1, "unset"),
      ("some_custom_span", {"gen_ai.tool.name": "search"}, 3, "unset"), tool("search", "{}", 5, v3=False)], _tc(["search"]), 1.0, []),
    ("test_tool_spans_skip_non_string_tool_name", [("running tool", {"gen_ai.tool.name": 123, "logfire.msg": "running tool: 123"}, 0, "unset")],
     _tc([]), 1.0, []),
    # --- ToolCorrectness
    ("test_tool_correctness_happy_path", [tool("search", "{}", 0, v3=False), tool("format", "{}", 1)], _tc(["search", "format"]), 1.0, []),
    ("test_tool_correctness_multiset_requires_duplicates", _named("search"), _tc(["search", "search"]), 0.0, ["'search' (x1)"]),
    ("test_tool_correctness_missing_tool", _named("search"), _tc(["search", "format"]), 0.0, ["missing tools: 'format' (x1)"]),
    ("test_tool_correctness_extra_fails_by_default", _named("search", "extra"), _tc(["search"]), 0.0, ["unexpected tools: 'extra' (x1)"]),
    ("test_tool_correctness_allow_extra_permits_extras", _named("search", "extra"), _tc(["search"], allow_extra=True), 1.0, []),
    ("test_tool_correctness_both_missing_and_extra_reported", _named("unexpected"), _tc(["wanted"]), 0.0,
     ["missing tools:", "unexpected tools:"]),
    # --- TrajectoryMatch
    ("test_trajectory_match_exact_pass", _named("a", "b"), _tm(["a", "b"], "exact"), 1.0, []),
    ("test_trajectory_match_exact_fail", _named("a", "c"), _tm(["a", "b"], "exact"), 0.0, ["does not equal"]),
    ("test_trajectory_match_in_order_perfect", _named("a", "b"), _tm(["a", "b"], "in_order"), 1.0, ["LCS=2", "F1=1.000"]),
    ("test_trajectory_match_in_order_partial", _named("a", "x", "b"), _tm(["a", "b", "c"], "in_order"), 2 / 3, ["LCS=2", "2/3", "F1=0.667"]),
    ("test_trajectory_match_in_order_second_example", _named("search", "search", "format", "format"), _tm(["search", "format"], "in_order"),
     2 / 3, ["precision=2/4=0.500", "recall=2/2=1.000"]),
    ("test_trajectory_match_in_order_interleaved_extras", _named("a", "x", "b", "y", "c"), _tm(["a", "b", "c"], "in_order"), 0.75, ["LCS=3"]),
    ("test_trajectory_match_in_order_no_match", _named("x"), _tm(["y"], "in_order"), 0.0, []),
    ("test_trajectory_match_in_order_both_empty", [], _tm([], "in_order"), 1.0, []),
    ("test_trajectory_match_in_order_actual_empty_expected_nonempty", [], _tm(["a"], "in_order"), 0.0, []),
    ("test_trajectory_match_in_order_expected_empty_actual_nonempty", _named("a"), _tm([], "in_order"), 0.0, []),
    ("test_trajectory_match_any_order_full_overlap", _named("b", "a"), _tm(["a", "b"], "any_order"), 1.0, []),
    ("test_trajectory_match_any_order_partial_overlap", _named("a", "x"), _tm(["a", "b", "c"], "any_order"), 0.4, ["overlap=1", "F1=0.400"]),
    ("test_trajectory_match_any_order_extras_reduce_score", _named("a", "b", "x", "y"), _tm(["a", "b"], "any_order"), 2 / 3, []),
    ("test_trajectory_match_any_order_multiset_semantics", _named("a"), _tm(["a", "a"], "any_order"), 2 / 3, []),
    ("test_trajectory_match_any_order_both_empty", [], _tm([], "any_order"), 1.0, []),
    ("test_trajectory_match_any_order_expected_empty_actual_nonempty", _named("a"), _tm([], "any_order"), 0.0, []),
    # --- ArgumentCorrectness (reasons: the peer's `missing key 'limit'` is `limit: missing` here, `key 'q': expected
    # 'cats', got 'dogs'` is `q: expected "cats", got "dogs"` (values as JSON), `unexpected key 'limit'` is `limit:
    # unexpected argument`)
    ("test_argument_correctness_subset_pass", [tool("search", '{"q": "cats", "limit": 5}', 0)], _ac({"q": "cats"}), 1.0, []),
    ("test_argument_correctness_exact_fail_on_extra_keys", [tool("search", '{"q": "cats", "limit": 5}', 0)],
     _ac({"q": "cats"}, match_mode="exact"), 0.0, ["limit: unexpected argument 5"]),
    ("test_argument_correctness_value_mismatch", _searches("dogs"), _ac({"q": "cats"}), 0.0, ['q: expected "cats", got "dogs"']),
    ("test_argument_correctness_missing_key", _searches("cats"), _ac({"limit": 5}), 0.0, ["limit: missing (expected 5)"]),
    ("test_argument_correctness_tool_never_called", _named("other"), _ac({"q": "cats"}), 0.0, ["no call to tool 'search'"]),
    ("test_argument_correctness_occurrence_first", _searches("first", "second"), _ac({"q": "first"}, occurrence="first"), 1.0, []),
    ("test_argument_correctness_occurrence_last", _searches("first", "second"), _ac({"q": "second"}, occurrence="last"), 1.0, []),
    ("test_argument_correctness_occurrence_integer_index", _searches("a", "b", "c"), _ac({"q": "b"}, occurrence=1), 1.0, []),
    *[(f"test_argument_correctness_occurrence_out_of_range[{o!r}]", _searches("a"), _ac({"q": "a"}, occurrence=o), 0.0,
       [f"occurrence={o!r} selects none of them", "0-based index", "negative ones are not supported"]) for o in (5, -1, "middle", None, 1.5)],
    # peer: "arguments not available in span (`include_content` may be disabled)"
    *[(f"test_argument_correctness_include_content_false[{'v3' if v3 else 'v2'}]", [tool("search", None, 0, v3=v3)], _ac({"q": "cats"}),
       0.0, ["arguments not recorded", "include_content=False"]) for v3 in (False, True)],
    ("test_argument_correctness_invalid_json", [tool("search", "not-json", 0)], _ac({"q": "cats"}), 0.0, ["could not be parsed as JSON"]),
    ("test_argument_correctness_non_object_json", [tool("search", "[1, 2, 3]", 0)], _ac({"q": "cats"}), 0.0, ["not a JSON object"]),
    ("test_argument_correctness_v2_span_also_works", [tool("search", '{"q": "cats"}', 0, v3=False)], _ac({"q": "cats"}), 1.0, []),
    ("test_argument_correctness_nested_values_compared_by_equality", [tool("search", '{"filters": {"status": "open", "priority": "high"}}', 0)],
     _ac({"filters": {"status": "open"}}), 0.0, ['filters: expected {"status":"open"}']),
    # --- MaxToolCalls / MaxModelRequests (format `otel` records the chat spans' count as `usage.requests`: the reason
    # names that source where the peer's says "from span tree")
    ("test_max_tool_calls_under_budget", _named("a", "b"), {"type": "MaxToolCalls", "max_calls": 3}, 1.0, ["2 tool call(s)"]),
    ("test_max_tool_calls_over_budget", _named("a", "b", "c"), {"type": "MaxToolCalls", "max_calls": 2}, 0.0, ["budget=2"]),
    ("test_max_model_requests_falls_back_to_span_count", [chat(0, content=False), chat(1, content=False), tool("search", "{}", 2, v3=False)],
     {"type": "MaxModelRequests", "max_requests": 1}, 0.0, ["2 model request(s)", "budget=1"]),
]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("row", CASES, ids=[r[0] for r in CASES])
def test_pydantic_evals_own_case(tmp_path: Path, row: tuple[Any, ...]) -> None:
    _, spans, spec, want, facts = row
    got = our_score(tmp_path, spans, spec)
    assert got.value == pytest.approx(want, abs=1e-12) and got.passed is (want == 1.0)
    for fact in facts:
        assert fact in got.reason, (fact, got.reason)


def test_pydantic_evals_gives_the_values_its_tests_assert() -> None:
    # The table's values are the peer's own assertions; the installed peer confirms them on the same spans.
    pytest.importorskip("pydantic_evals.evaluators.agentic")
    assert [(r[0], peer_value(r[1], r[2])) for r in CASES] == [(r[0], pytest.approx(r[3], abs=1e-12)) for r in CASES]
