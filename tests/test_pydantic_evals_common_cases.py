"""The cases of pydantic-evals' own tests of `Equals`, `EqualsExpected`, `Contains` and `MaxDuration`, scored by tracejudge.

Source: pydantic/pydantic-ai `tests/evals/test_evaluator_common.py`. A trace's final output is text here, so the cases on
text and numbers map (`ExactMatch` with `case_sensitive: true, strip: false` is `Equals` / `EqualsExpected`, a number
compared with the output read as JSON; `Contains` with `case_sensitive: true` is theirs on text; `Latency` is
`MaxDuration`); the cases whose output is a dict, list, model or dataclass have no counterpart. `EqualsExpected` without
an expected output gives no result there and `value: null` here.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import make_case
from tracejudge.core.registry import build_metric

_EQUALS = {"type": "ExactMatch", "case_sensitive": True, "strip": False}

# (peer test, our metric, the output, expected_output, latency, the peer's evaluator and parameters, the peer's value)
CASES: list[tuple[str, dict[str, Any], str, Any, float | None, tuple[str, dict[str, Any]], float | None]] = [
    ("test_equals[equal]", {**_EQUALS, "expected": 42}, "42", None, None, ("Equals", {"value": 42}), 1.0),
    ("test_equals[unequal]", {**_EQUALS, "expected": 42}, "43", None, None, ("Equals", {"value": 42}), 0.0),
    ("test_equals_expected[equal]", _EQUALS, "42", 42, None, ("EqualsExpected", {}), 1.0),
    ("test_equals_expected[unequal]", _EQUALS, "42", 43, None, ("EqualsExpected", {}), 0.0),
    ("test_equals_expected[no expected output]", _EQUALS, "42", None, None, ("EqualsExpected", {}), None),
    ("test_contains_string[contained]", {"type": "Contains", "value": "test", "case_sensitive": True}, "this is a test", None, None,
     ("Contains", {"value": "test"}), 1.0),
    ("test_contains_string[not contained]", {"type": "Contains", "value": "test", "case_sensitive": True}, "no match", None, None,
     ("Contains", {"value": "test"}), 0.0),
    ("test_contains_string[case insensitive]", {"type": "Contains", "value": "TEST"}, "this is a test", None, None,
     ("Contains", {"value": "TEST", "case_sensitive": False}), 1.0),
    ("test_contains_as_strings", {"type": "Contains", "value": "42", "case_sensitive": True}, "The answer is 42", None, None,
     ("Contains", {"value": 42, "as_strings": True}), 1.0),
    ("test_max_duration[within]", {"type": "Latency", "max_seconds": 1.0}, "", None, 0.5, ("MaxDuration", {"seconds": 1.0}), 1.0),
    ("test_max_duration[over]", {"type": "Latency", "max_seconds": 1.0}, "", None, 1.5, ("MaxDuration", {"seconds": 1.0}), 0.0),
]


def _ours(metric: dict[str, Any], output: str, expected: Any, latency: float | None) -> Any:
    trace = {"output": output, **({"usage": {"latency_s": latency}} if latency is not None else {})}
    return build_metric(metric).evaluate(make_case(None, [], expected_output=expected, trace=trace))


@pytest.mark.parametrize("row", CASES, ids=[r[0] for r in CASES])
def test_pydantic_evals_common_case(row: tuple[Any, ...]) -> None:
    _, metric, output, expected, latency, _, want = row
    got = _ours(metric, output, expected, latency)
    assert (got.value, got.passed) == (want, None if want is None else want == 1.0)
    if want == 0.0 and metric["type"] == "Contains":
        assert "'test'" in got.reason  # the peer: "Output string 'no match' does not contain expected string 'test'"


def test_pydantic_evals_gives_the_values_its_tests_assert() -> None:
    common = pytest.importorskip("pydantic_evals.evaluators.common")
    from pydantic_evals.evaluators import EvaluationReason, EvaluatorContext

    def theirs(output: str, expected: Any, latency: float | None, evaluator: str, params: dict[str, Any]) -> float | None:
        value: Any = output
        if evaluator in ("Equals", "EqualsExpected"):
            value = int(output)  # their output is the number the task returned; ours, its JSON text
        ctx = EvaluatorContext(name="t", inputs={}, metadata=None, expected_output=expected, output=value, duration=latency or 0.0,
                               _span_tree=None, attributes={}, metrics={})  # type: ignore[arg-type]
        got = getattr(common, evaluator)(**params).evaluate(ctx)
        got = got.value if isinstance(got, EvaluationReason) else got
        return None if got == {} else float(got)

    assert [(r[0], theirs(r[2], r[3], r[4], *r[5])) for r in CASES] == [(r[0], r[6]) for r in CASES]
