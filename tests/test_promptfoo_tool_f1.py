"""promptfoo's `tool-call-f1` (and `not-tool-call-f1`): F1 of the tools called against those expected, as sets.

The hand cases are promptfoo's own (`test/assertions/toolCallF1.test.ts`, "F1 score calculation"): the same expected
tools and the same calls, with promptfoo's expected score, pass and reason figures. promptfoo reads the calls out of
one model output; here they are the trace's calls (`stages/score/promptfoo_tool_f1.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_promptfoo_trajectory import case, refused, run_cli
from tracejudge.core.records import Case
from tracejudge.core.registry import build_metric
from tracejudge.stages.score.promptfoo_tool_f1 import to_fixed


def f1(value: Any, on: Case, **spec: Any) -> tuple[float | None, bool | None, str]:
    s = build_metric({"type": "tool-call-f1", "value": value, **spec}).evaluate(on)
    return s.value, s.passed, s.reason


def calls(*names: str) -> Case:
    return case([(n, {}) for n in names])


BOTH = ["get_weather", "book_flight"]


@pytest.mark.parametrize("on, score, passed, parts", [
    (calls("get_weather", "book_flight"), 1.0, True, ["precision=1.000", "recall=1.000"]),  # exact match
    (calls("search_web"), 0.0, False, ["Precision=0.000", "Recall=0.000"]),  # none match
    (calls("get_weather", "book_flight", "extra_tool"), 0.8, False, ["Precision=0.667", "Recall=1.000"]),  # over-calling: 2·(2/3)/(5/3)
    (calls("get_weather"), 2 / 3, False, ["Precision=1.000", "Recall=0.500"]),  # under-calling: 2·0.5/1.5
    (calls(), 0.0, False, ["Called: [(none)]"]),  # nothing called
])
def test_f1_as_promptfoo_computes_it(on: Case, score: float, passed: bool, parts: list[str]) -> None:
    value, ok, reason = f1(BOTH, on)
    assert value == pytest.approx(score, abs=1e-12) and ok is passed
    assert all(p in reason for p in parts), reason


def test_the_reason_gives_both_lists_sorted_and_the_figures_to_recompute_it() -> None:
    assert f1(BOTH, calls("get_weather", "extra_tool", "get_weather")) == (
        0.5, False, "Tool Call F1 score 0.500 is below threshold 1. Expected: [book_flight, get_weather], "
                    "Called: [extra_tool, get_weather]. Precision=0.500, Recall=0.500")
    assert f1("get_weather , book_flight,", calls("book_flight", "get_weather"))[2] == (
        "Tool Call F1: 1.000 (precision=1.000, recall=1.000). Expected: [book_flight, get_weather], Called: [book_flight, get_weather]")


def test_threshold_and_the_inverse() -> None:
    on = calls("get_weather", "book_flight", "extra_tool")  # F1 0.8
    assert f1(BOTH, on, threshold=0.8)[:2] == (0.8, True)
    assert f1(BOTH, on, threshold=0.81)[1] is False
    value, passed, reason = build_metric({"type": "not-tool-call-f1", "value": BOTH, "threshold": 0.5}).evaluate(on).model_dump(
        include={"value", "passed", "reason"}).values()
    assert (value, passed) == (0.8, False) and reason.startswith("Tool Call F1 score 0.800 is above threshold 0.5.")
    assert build_metric({"type": "not-tool-call-f1", "value": BOTH}).evaluate(on).passed is True  # below the default 1.0


def test_a_failed_call_counts_and_a_case_without_a_trace_is_not_scored() -> None:
    failed = Case.model_validate({"id": "c", "trace": {"steps": [{"tool_calls": [{"name": "get_weather", "arguments": {}, "error": "503"}]}]}})
    assert f1(["get_weather"], failed)[:2] == (1.0, True)
    assert f1(["get_weather"], Case.model_validate({"id": "c", "input": "hi"}))[0] is None


def test_names_are_trimmed_as_javascript_trims() -> None:
    # promptfoo trims with `String.prototype.trim`: a byte-order mark is space to it, U+001C–U+001F and U+0085 are not
    # (Python's `strip` has it the other way round). Values as promptfoo 0.123.1's `runAssertion` scores them.
    assert f1(["\ufeffa"], calls("a"))[:2] == (1.0, True)
    assert f1("a,\ufeffb", calls("a", "b"))[:2] == (1.0, True)
    assert f1(["\x1ca"], calls("a"))[:2] == (0.0, False)
    assert f1(["\x85a"], calls("a"))[:2] == (0.0, False)
    assert f1("a,\x1cb", calls("a", "b"))[:2] == (0.5, False)  # expected {a, \x1cb}, called {a, b}


def test_js_to_fixed_rounds_an_exact_tie_up() -> None:
    assert (to_fixed(0.125, 2), to_fixed(2 / 3), to_fixed(0.0), to_fixed(1.0)) == ("0.13", "0.667", "0.000", "1.000")


@pytest.mark.parametrize("value, message", [
    ("", "requires at least one expected tool name"),
    ([" ", ""], "requires at least one expected tool name"),
    ({"name": "x"}, "array of tool names or comma-separated string"),
    ([{"name": "x"}], "not an object or a list"),
])
def test_values_promptfoo_refuses_are_config_errors(value: Any, message: str) -> None:
    assert message in refused("tool-call-f1", value)


def test_end_to_end_through_the_command_line(tmp_path: Path) -> None:
    cases = [{"id": "c1", "trace": {"steps": [{"tool_calls": [{"name": "get_weather", "arguments": {"city": "NYC"}},
                                                              {"name": "extra_tool", "arguments": {}}]}], "output": "sunny"}}]
    done = run_cli(tmp_path, [{"type": "tool-call-f1", "value": "get_weather", "threshold": 0.6}], cases)
    assert done.returncode == 0, done.stdout + done.stderr
    got = json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[0])["scores"]["tool-call-f1"]
    assert (round(got["value"], 6), got["passed"]) == (0.666667, True) and "precision=0.500, recall=1.000" in got["reason"]
