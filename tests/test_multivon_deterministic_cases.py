"""The cases of multivon-eval's own tests of `ExactMatch`, `Contains`, `RegexMatch`, `JSONSchemaEval` and `Latency`.

Source: multivon-ai/multivon-eval `tests/test_multivon_eval.py` (its deterministic evaluators). Their counterparts here:
`ExactMatch` and `Contains` with multivon-eval's defaults (case ignored; `Contains(substrings)` is `require: all`, with
partial credit), `Regex` with `(?i)` for `RegexMatch`'s default `re.IGNORECASE`, `JsonSchema`, and `Latency` in
seconds for `max_ms`. An `ExactMatch` without an expected output is skipped there and `value: null` here. Not mapped:
`NotEmpty`, `WordCount`, `StartsWith`, `BLEU`, `ROUGE` (no built-in metric here). When multivon-eval is installed, its
evaluators score the same inputs and must agree.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import make_case
from tracejudge.core.registry import build_metric

_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}

# (peer test, our metric, output, expected_output, latency in s, the peer's evaluator and arguments, (score, passed); None: skipped)
CASES: list[tuple[str, dict[str, Any], str, str | None, float | None, tuple[str, dict[str, Any]], tuple[float, bool] | None]] = [
    ("TestExactMatch.test_passes_on_match", {"type": "ExactMatch"}, "Paris", "Paris", None, ("ExactMatch", {}), (1.0, True)),
    ("TestExactMatch.test_fails_on_mismatch", {"type": "ExactMatch"}, "London", "Paris", None, ("ExactMatch", {}), (0.0, False)),
    ("TestExactMatch.test_case_insensitive_default", {"type": "ExactMatch"}, "PARIS", "paris", None, ("ExactMatch", {}), (1.0, True)),
    ("TestExactMatch.test_case_sensitive", {"type": "ExactMatch", "case_sensitive": True}, "PARIS", "paris", None,
     ("ExactMatch", {"case_sensitive": True}), (0.0, False)),
    ("TestExactMatch.test_no_expected_skips", {"type": "ExactMatch"}, "anything", None, None, ("ExactMatch", {}), None),
    ("TestContains.test_all_present", {"type": "Contains", "value": ["red", "blue"], "require": "all"}, "I see red and blue", None, None,
     ("Contains", {"substrings": ["red", "blue"]}), (1.0, True)),
    ("TestContains.test_partial", {"type": "Contains", "value": ["red", "blue", "green"], "require": "all"}, "red and blue", None, None,
     ("Contains", {"substrings": ["red", "blue", "green"]}), (2 / 3, False)),
    ("TestContains.test_case_insensitive", {"type": "Contains", "value": ["PARIS"], "require": "all"}, "I visited paris", None, None,
     ("Contains", {"substrings": ["PARIS"]}), (1.0, True)),
    ("TestRegexMatch.test_matches", {"type": "Regex", "pattern": r"(?i)\d{4}"}, "year 2026", None, None,
     ("RegexMatch", {"pattern": r"\d{4}"}), (1.0, True)),
    ("TestRegexMatch.test_no_match", {"type": "Regex", "pattern": r"(?i)\d{4}"}, "no numbers", None, None,
     ("RegexMatch", {"pattern": r"\d{4}"}), (0.0, False)),
    ("TestJSONSchemaEval.test_valid", {"type": "JsonSchema", "schema": _SCHEMA}, '{"name":"Alice","age":30}', None, None,
     ("JSONSchemaEval", {"schema": _SCHEMA}), (1.0, True)),
    ("TestJSONSchemaEval.test_invalid_json", {"type": "JsonSchema", "schema": _SCHEMA}, "not json", None, None,
     ("JSONSchemaEval", {"schema": _SCHEMA}), (0.0, False)),
    ("TestJSONSchemaEval.test_schema_violation", {"type": "JsonSchema", "schema": _SCHEMA}, '{"name":"Alice"}', None, None,
     ("JSONSchemaEval", {"schema": _SCHEMA}), (0.0, False)),
    ("TestLatency.test_under", {"type": "Latency", "max_seconds": 1.0}, "r", None, 0.5, ("Latency", {"max_ms": 1000}), (1.0, True)),
    ("TestLatency.test_over", {"type": "Latency", "max_seconds": 0.5}, "r", None, 1.0, ("Latency", {"max_ms": 500}), (0.0, False)),
]


def _ours(metric: dict[str, Any], output: str, expected: str | None, latency: float | None) -> tuple[float | None, bool | None]:
    trace = {"output": output, **({"usage": {"latency_s": latency}} if latency is not None else {})}
    got = build_metric(metric).evaluate(make_case(None, [], expected_output=expected, trace=trace))
    return got.value, got.passed


@pytest.mark.parametrize("row", CASES, ids=[r[0] for r in CASES])
def test_multivon_deterministic_case(row: tuple[Any, ...]) -> None:
    _, metric, output, expected, latency, _, want = row
    assert _ours(metric, output, expected, latency) == (want if want is not None else (None, None))


def test_contains_all_names_the_missing_texts_and_allows_a_threshold() -> None:
    partial = build_metric({"type": "Contains", "value": ["red", "blue", "green"], "require": "all", "threshold": 0.6})
    got = partial.evaluate(make_case(None, [], trace={"output": "Red and blue"}))
    assert (got.value, got.passed, got.details) == (2 / 3, True, {"missing": [2]})
    assert got.reason == "output 'Red and blue' contains 2 of the 3 expected texts; missing: 'green'"  # multivon-eval: "Missing: ['green']"
    empty = build_metric({"type": "Contains", "value": [], "require": "all"}).evaluate(make_case(None, [], trace={"output": "x"}))
    assert (empty.value, empty.passed) == (1.0, True)  # multivon-eval: "No substrings to check"
    with pytest.raises(Exception, match="require: all"):
        build_metric({"type": "Contains", "match": "bfcl", "require": "all"})


def test_multivon_eval_scores_the_same_inputs_the_same() -> None:
    evaluators = pytest.importorskip("multivon_eval.evaluators.deterministic", reason="multivon-eval (the peers extra) is not installed")
    from multivon_eval import EvalCase

    def theirs(output: str, expected: str | None, latency: float | None, name: str, args: dict[str, Any]) -> tuple[float, bool] | None:
        extra = {"latency_ms": latency * 1000} if latency is not None else {}
        got = getattr(evaluators, name)(**args).evaluate(EvalCase(input="test", expected_output=expected), output, **extra)
        return None if got.metadata.get("skipped") else (got.score, got.passed)

    assert [(r[0], theirs(r[2], r[3], r[4], *r[5])) for r in CASES] == [(r[0], r[6]) for r in CASES]
