"""`ToolCallAccuracy` read from multivon `EvalCase` records gives multivon-eval's own score and verdict.

1. The cases of multivon-eval's own tests of `ToolCallAccuracy` (multivon-ai/multivon-eval
   `tests/test_agent_evaluators.py`, `tests/test_multivon_eval.py`), with the values multivon-eval 0.20.0 gives.
   Two of those tests assert what older releases did: an empty `agent_trace` (`[]`) was skipped there and is
   scored 0.0 now (an observed trace without calls), and `require_order` was positional there (`[summarize,
   search_weather]` for `[search_weather, summarize]` scored 0.0) and is a subsequence walk now (0.5).
2. When multivon-eval is installed (the `peers` extra), its own evaluator scores the same records, and a few
   hundred random ones, beside ours: value and pass/fail must agree on every one.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from tracejudge.core.registry import build_metric
from tracejudge.stages.extract.multivon import adapt


def _record(expected: list[str] | None, calls: list[list[str]] | None) -> dict[str, Any]:
    """A multivon `EvalCase` record; `calls` is the tool names of each step (None: no `agent_trace` at all)."""
    record: dict[str, Any] = {"id": "c", "input": "Find the weather and summarize it", "expected_tool_calls": expected}
    if calls is not None:
        record["agent_trace"] = [{"tool_calls": [{"name": n, "arguments": {}} for n in step]} for step in calls]
    return record


# (test, parameters, expected tools, the names called per step, multivon-eval 0.20.0's (score, passed); None: skipped)
CASES: list[tuple[str, dict[str, Any], list[str] | None, list[list[str]] | None, tuple[float, bool] | None]] = [
    ("test_passing_unordered_case", {}, ["search_weather", "summarize"], [["search_weather"], ["summarize"]], (1.0, True)),
    ("test_failing_missing_and_unexpected_tools", {}, ["search_weather", "summarize"], [["search_weather", "translate"]], (0.5, False)),
    ("test_empty_steps (0.20.0: scored)", {}, ["search_weather"], [], (0.0, False)),
    ("test_no_tool_calls_still_records_failure_when_expected", {}, ["search_weather"], [[]], (0.0, False)),
    ("test_ordered_case_fails_on_wrong_order (0.20.0: subsequence)", {"require_order": True}, ["search_weather", "summarize"],
     [["summarize"], ["search_weather"]], (0.5, False)),
    ("test_default_mode_does_not_penalize_extra_tools", {}, ["lookup_order"], [["lookup_order", "refund_order"]], (1.0, True)),
    ("test_strict_mode_penalizes_unexpected_tools", {"penalize_unexpected": True}, ["lookup_order"],
     [["lookup_order", "refund_order"]], (0.5, False)),
    ("test_strict_mode_unchanged_when_no_extras", {"penalize_unexpected": True}, ["lookup_order"], [["lookup_order"]], (1.0, True)),
    ("test_all_correct", {}, ["search", "summarize"], [["search"], ["summarize"]], (1.0, True)),
    ("test_missing_tool", {}, ["search", "summarize"], [["search"]], (0.5, False)),
    ("test_no_trace_skips", {}, ["search"], None, None),
    ("test_ordered_correct", {"require_order": True}, ["a", "b", "c"], [["a"], ["b"], ["c"]], (1.0, True)),
    ("test_ordered_wrong_order", {"require_order": True}, ["a", "b", "c"], [["b"], ["a"], ["c"]], (1 / 3, False)),
    # The edges its evaluator's comments name: no expectation skips; `[]` asserts no call, penalize or not.
    ("expected_tool_calls None", {}, None, [["a"]], None),
    ("expected [] and no call", {}, [], [[]], (1.0, True)),
    ("expected [] but a call", {"penalize_unexpected": False}, [], [["a"]], (0.0, False)),
    # The threshold (0.7) is met at equality; duplicates count in order, not as a set.
    ("threshold met at equality", {"threshold": 0.5}, ["a", "b"], [["a"]], (0.5, True)),
    ("ordered duplicates", {"require_order": True}, ["a", "a"], [["a"]], (0.5, False)),
    ("ordered penalize counts each unexpected call", {"require_order": True, "penalize_unexpected": True}, ["a", "b"],
     [["x", "a", "x", "b"]], (0.5, False)),
]


def _ours(params: dict[str, Any], record: dict[str, Any]) -> tuple[float | None, bool | None]:
    score = build_metric({"type": "ToolCallAccuracy", **params}).evaluate(adapt(json.dumps(record)))
    return score.value, score.passed


@pytest.mark.parametrize("row", CASES, ids=[r[0] for r in CASES])
def test_multivons_own_tool_call_accuracy_tests(row: tuple[Any, ...]) -> None:
    _, params, expected, calls, want = row
    assert _ours(params, _record(expected, calls)) == (want if want is not None else (None, None))


# multivon-eval's tests also assert what the reason names: `Missing tools` and `Unexpected tools`
# (test_failing_missing_and_unexpected_tools), an extra tool reported though not penalized
# (test_default_mode_does_not_penalize_extra_tools) and `strict mode` (test_strict_mode_penalizes_unexpected_tools).
# The same facts, in our words: (parameters, expected, calls per step, what the reason must say)
REASONS: list[tuple[dict[str, Any], list[str], list[list[str]], list[str]]] = [
    ({}, ["search_weather", "summarize"], [["search_weather", "translate"]], ["missing: ['summarize']", "unexpected: ['translate']"]),
    ({}, ["lookup_order"], [["lookup_order", "refund_order"]], ["unexpected: ['refund_order']"]),
    ({"penalize_unexpected": True}, ["lookup_order"], [["lookup_order", "refund_order"]], ["unexpected: ['refund_order'] (penalized)"]),
]


@pytest.mark.parametrize("row", REASONS, ids=["missing_and_unexpected", "extra_reported_not_penalized", "strict_mode"])
def test_the_reason_names_what_multivons_tests_assert(row: tuple[Any, ...]) -> None:
    params, expected, calls, facts = row
    reason = build_metric({"type": "ToolCallAccuracy", **params}).evaluate(adapt(json.dumps(_record(expected, calls)))).reason
    assert all(f in reason for f in facts), reason


def _random_cases(rng: random.Random, count: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for _ in range(count):
        expected = [rng.choice("abcd") for _ in range(rng.randint(0, 4))]
        calls = [[rng.choice("abcd") for _ in range(rng.randint(0, 2))] for _ in range(rng.randint(0, 3))]
        params: dict[str, Any] = {"require_order": rng.random() < 0.5, "penalize_unexpected": rng.random() < 0.5}
        if rng.random() < 0.3:
            params["threshold"] = rng.choice([0.25, 1 / 3, 0.5, 2 / 3, 0.75, 1.0])
        out.append((params, _record(expected, calls)))
    return out


def test_multivon_eval_scores_the_same_records_the_same() -> None:
    pytest.importorskip("multivon_eval", reason="multivon-eval (the peers extra) is not installed")
    from multivon_eval import AgentStep, EvalCase, ToolCall
    from multivon_eval.evaluators.agent import ToolCallAccuracy

    def theirs(params: dict[str, Any], record: dict[str, Any]) -> tuple[float | None, bool | None]:
        trace = record.get("agent_trace")
        steps = None if trace is None else [
            AgentStep(tool_calls=[ToolCall(name=c["name"], arguments=c["arguments"]) for c in s["tool_calls"]]) for s in trace]
        case = EvalCase(input=record["input"], agent_trace=steps, expected_tool_calls=record["expected_tool_calls"])
        got = ToolCallAccuracy(**params).evaluate(case, "done")
        return (None, None) if got.metadata.get("skipped") else (got.score, got.passed)

    rows = [(params, _record(expected, calls)) for _, params, expected, calls, _ in CASES] + _random_cases(random.Random(20260823), 600)
    differ = [(p, r, theirs(p, r), _ours(p, r)) for p, r in rows if theirs(p, r) != _ours(p, r)]
    assert not differ, differ[:5]
