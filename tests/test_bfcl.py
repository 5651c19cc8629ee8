"""The BFCL adapter: accepted answers as matchers, ground truth scoring 1.0, perturbations scoring per semantics."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from helpers import DATA
from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.bfcl import accepted_values, parse_call, standardize
from tracejudge.stages.score import ArgumentCorrectness, ToolCallAccuracy, ToolCalls, ToolCorrectness, TrajectoryMatch

BFCL = DATA / "bfcl"
pytestmark = pytest.mark.skipif(not BFCL.exists(), reason="the BFCL developer files are not beside the repository")


class _Dataset:
    def __init__(self, path: Path) -> None:
        self.path, self.tasks, self.limit, self.options = path, None, None, {}


def load(category: str) -> list[Case]:
    fmt = format_for("bfcl")
    ds = _Dataset(BFCL / f"BFCL_v4_{category}.json")
    ctx = fmt.prepare(ds)
    out = []
    for raw in fmt.read(ds):
        case = extract_record(raw, fmt, ctx)
        assert isinstance(case, Case), case
        out.append(case)
    return out


ANSWERED = ["simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_parallel", "live_parallel_multiple", "multi_turn_base"]


@pytest.fixture(scope="module")
def cases() -> dict[str, list[Case]]:
    return {cat: load(cat) for cat in ANSWERED + ["irrelevance", "live_relevance"]}


def concrete(value: Any) -> Any:
    """The first accepted value of a matcher; `None` stands for "leave the parameter out"."""
    if isinstance(value, dict) and "$any_of" in value:
        first = concrete(value["$any_of"][0])
        return None if first == "" else first
    if isinstance(value, dict) and "$loose" in value:
        return value["$loose"]  # (a string compared as BFCL's checker compares it: the answer as written meets it)
    if isinstance(value, list):
        return [concrete(v) for v in value]
    if isinstance(value, dict):
        return {k: v for k, v in ((k, concrete(v)) for k, v in value.items()) if v is not None}
    return value


def as_calls(case: Case) -> list[dict[str, Any]]:
    return [{"name": e.name, "arguments": concrete(e.arguments or {})} for e in case.expected_tool_calls]


def with_trace(case: Case, calls: list[dict[str, Any]]) -> Case:
    return case.model_copy(update={"trace": Case.model_validate({"id": "x", "trace": {"steps": [{"tool_calls": calls}]}}).trace})


def test_accepted_value_lists_become_values_and_matchers():
    assert accepted_values([10]) == 10
    assert accepted_values(["units", ""]) == {"$any_of": ["units", "", {"$absent": True}]}
    assert accepted_values([]) == []
    assert accepted_values([{"min": [1], "max": [2, 3]}]) == {"min": 1, "max": {"$any_of": [2, 3]}}
    assert parse_call("cd('archives')", {"cd": ["folder"]}) == {"name": "cd", "arguments": {"folder": "archives"}}
    assert parse_call("mean([1, 2.5])", {"mean": ["numbers"]}) == {"name": "mean", "arguments": {"numbers": [1, 2.5]}}


def test_every_question_is_read(cases):
    counts = {cat: len(v) for cat, v in cases.items()}
    assert counts == {
        "simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200, "live_simple": 258,
        "live_parallel": 16, "live_parallel_multiple": 24, "multi_turn_base": 200, "irrelevance": 240, "live_relevance": 16,
    }  # fmt: skip
    assert all(c.expected_tool_calls == [] for c in cases["irrelevance"])
    assert all(c.expected_tool_calls is None for c in cases["live_relevance"])
    assert all(c.trace is None for v in cases.values() for c in v)
    first = cases["simple_python"][0]
    assert first.input.startswith("Find the area of a triangle") and first.tags == ["bfcl", "simple_python"]
    assert cases["multi_turn_base"][0].turns and len(cases["multi_turn_base"][0].expected_tool_calls) == 10


ALL_METRICS = [ToolCalls(arguments="exact"), ToolCalls(), TrajectoryMatch(), ToolCorrectness(), ToolCallAccuracy(require_order=True)]


def test_ground_truth_as_actual_calls_scores_one(cases):
    n = 0
    for cat in ANSWERED:
        for case in cases[cat]:
            scored = with_trace(case, as_calls(case))
            for metric in ALL_METRICS:
                s = metric.evaluate(scored)
                assert s.value == 1.0, (case.id, metric, s.reason)
            n += 1
    assert n == 1498
    for case in cases["irrelevance"]:
        assert ToolCalls(arguments="exact").evaluate(with_trace(case, [])).value == 1.0


def test_wrong_value_breaks_the_pair_but_not_the_names(cases):
    checked = 0
    for case in cases["simple_python"]:
        calls = as_calls(case)
        key = next((k for k, v in calls[0]["arguments"].items() if isinstance(v, str)), None)
        if key is None:
            continue
        calls[0]["arguments"][key] = "__wrong__"
        s = with_trace(case, calls)
        assert ToolCalls(arguments="exact").evaluate(s).value == 0.0
        assert ToolCalls(arguments="exact").evaluate(s).details["missing"] == [0]
        assert TrajectoryMatch().evaluate(s).value == 1.0
        assert ToolCallAccuracy().evaluate(s).value == 1.0
        args = ArgumentCorrectness(tool_name=case.expected_tool_calls[0].name, expected_arguments=case.expected_tool_calls[0].arguments)
        assert args.evaluate(s).value == 0.0
        checked += 1
    assert checked == 295


def test_dropped_required_parameter_breaks_the_pair(cases):
    checked = 0
    for case in cases["simple_python"]:
        expected = case.expected_tool_calls[0].arguments
        required = [k for k, v in expected.items() if not (isinstance(v, dict) and {"$absent": True} in v.get("$any_of", []))]
        if not required:
            continue
        calls = as_calls(case)
        del calls[0]["arguments"][required[0]]
        s = with_trace(case, calls)
        assert ToolCalls(arguments="exact").evaluate(s).value == 0.0
        assert ToolCalls(arguments="subset").evaluate(s).value == 0.0
        assert ToolCalls(arguments="ignore").evaluate(s).value == 1.0
        checked += 1
    assert checked == 400


def test_extra_call_lowers_precision_only(cases):
    for case in cases["parallel"]:
        calls = as_calls(case)
        n = len(calls)
        extra = with_trace(case, calls + [copy.deepcopy(calls[0])])
        s = ToolCalls(arguments="exact").evaluate(extra)
        f1 = 2 * (n / (n + 1)) / (n / (n + 1) + 1)  # precision n/(n+1), recall 1, in the order the peers compute F1
        assert s.value == f1 and s.details["unexpected"] == [n]
        assert ToolCalls(arguments="exact", score="recall").evaluate(extra).value == 1.0
        assert TrajectoryMatch().evaluate(extra).value == pytest.approx(2 * n / (2 * n + 1), rel=1e-15)
        assert ToolCorrectness().evaluate(extra).passed is False
        assert ToolCorrectness(allow_extra=True).evaluate(extra).passed is True
        assert ToolCallAccuracy().evaluate(extra).value == 1.0


def test_swapped_parallel_order_is_only_an_ordered_difference(cases):
    differs = 0
    for cat in ("parallel", "parallel_multiple", "live_parallel", "live_parallel_multiple"):
        for case in cases[cat]:
            calls = as_calls(case)
            swapped = with_trace(case, calls[::-1])
            assert ToolCalls(arguments="exact").evaluate(swapped).value == 1.0
            assert TrajectoryMatch(order="any_order").evaluate(swapped).value == 1.0
            assert ToolCorrectness().evaluate(swapped).passed is True
            in_order = ToolCalls(arguments="exact", order="in_order").evaluate(swapped).value
            n = len(calls)
            # (differ as BFCL's checker compares strings: parallel_116's genotypes "AA", "Aa", "aa" are one to it)
            if n > 1 and any(_bfcl_form(calls[i]) != _bfcl_form(calls[n - 1 - i]) for i in range(n)):
                assert in_order < 1.0
                differs += 1
    assert differs == 439


def _bfcl_form(value: Any) -> Any:
    """`value` with every string standardized as BFCL's AST checker compares it (`bfcl.standardize`)."""
    if isinstance(value, str):
        return standardize(value)
    if isinstance(value, dict):
        return {k: v if k == "name" else _bfcl_form(v) for k, v in value.items()}
    return [_bfcl_form(v) for v in value] if isinstance(value, list) else value
