"""The cases of cogitator's own tests of `exactMatch()`, `contains()`, `regex()` and `jsonSchema()`, scored by tracejudge.

Source: cogitator-ai/Cogitator-AI `packages/evals/src/__tests__/deterministic.test.ts`. Cogitator's `contains()` looks for
the case's `expected` in the output, as `Contains` does without `value`; a `RegExp` flag is an inline flag here
(`/^yes$/i` is `(?i)^yes$`); the zod schema `{name: string, age: number}` is the JSON Schema below. Where the peer
asserts its `details`, the reason must carry the same fact. Not mapped, on purpose: a case without `expected` scores 0
there ("no expected value provided") and `value: null` here.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import make_case
from tracejudge.core.registry import build_metric

_PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "number"}}, "required": ["name", "age"]}

# (peer test, our metric, the output, the case's expected, the value the peer asserts, a fact its details must carry)
CASES: list[tuple[str, dict[str, Any], str, str | None, float, str | None]] = [
    ("exactMatch: scores 1 when output matches expected", {"type": "ExactMatch"}, "hello", "hello", 1.0, None),
    ("exactMatch: scores 0 when output does not match", {"type": "ExactMatch"}, "hello", "world", 0.0, "expected 'world'"),
    ("exactMatch: is case-insensitive by default", {"type": "ExactMatch"}, "Hello World", "hello world", 1.0, None),
    ("exactMatch: respects caseSensitive option [differs]", {"type": "ExactMatch", "case_sensitive": True}, "Hello", "hello", 0.0, None),
    ("exactMatch: respects caseSensitive option [same]", {"type": "ExactMatch", "case_sensitive": True}, "Hello", "Hello", 1.0, None),
    ("exactMatch: trims whitespace before comparing", {"type": "ExactMatch"}, "  hello  ", "hello", 1.0, None),
    ("exactMatch: handles empty strings", {"type": "ExactMatch"}, "", "", 1.0, None),
    ("contains: scores 1 when output contains expected", {"type": "Contains"}, "the answer is 42", "42", 1.0, None),
    ("contains: scores 0 when output does not contain expected", {"type": "Contains"}, "no match here", "missing", 0.0, "does not contain"),
    ("contains: is case-insensitive by default", {"type": "Contains"}, "Hello World", "hello", 1.0, None),
    ("contains: respects caseSensitive option [differs]", {"type": "Contains", "case_sensitive": True}, "Hello World", "hello", 0.0, None),
    ("contains: respects caseSensitive option [same]", {"type": "Contains", "case_sensitive": True}, "Hello World", "Hello", 1.0, None),
    ("contains: handles empty substring", {"type": "Contains"}, "anything", "", 1.0, None),
    ("contains: handles multiline output", {"type": "Contains"}, "line one\nline two\nline three", "line two", 1.0, None),
    ("regex: scores 1 when output matches pattern", {"type": "Regex", "pattern": r"\d+"}, "answer is 42", None, 1.0, None),
    ("regex: scores 0 when output does not match", {"type": "Regex", "pattern": r"^\d+$"}, "not a number", None, 0.0, "does not match"),
    ("regex: accepts RegExp object", {"type": "Regex", "pattern": "(?i)^yes$"}, "Yes", None, 1.0, None),
    ("regex: accepts string pattern", {"type": "Regex", "pattern": "^[a-z]+$"}, "hello", None, 1.0, None),
    ("regex: handles multiline output", {"type": "Regex", "pattern": "second"}, "first\nsecond\nthird", None, 1.0, None),
    ("jsonSchema: valid JSON matching schema", {"type": "JsonSchema", "schema": _PERSON}, '{"name": "Alice", "age": 30}', None, 1.0, None),
    ("jsonSchema: JSON does not match schema", {"type": "JsonSchema", "schema": _PERSON}, '{"name": "Alice", "age": "thirty"}', None, 0.0,
     "schema validation failed"),
    ("jsonSchema: output is not valid JSON", {"type": "JsonSchema", "schema": _PERSON}, "not json", None, 0.0, "not valid JSON"),
    ("jsonSchema: JSON is missing required fields", {"type": "JsonSchema", "schema": _PERSON}, '{"name": "Alice"}', None, 0.0,
     "schema validation failed"),
    ("jsonSchema: empty object against strict schema", {"type": "JsonSchema", "schema": _PERSON}, "{}", None, 0.0, None),
]


@pytest.mark.parametrize("row", CASES, ids=[r[0] for r in CASES])
def test_cogitator_deterministic_case(row: tuple[Any, ...]) -> None:
    _, metric, output, expected, want, fact = row
    got = build_metric(metric).evaluate(make_case(None, [], expected_output=expected, trace={"output": output}))
    assert (got.value, got.passed) == (want, want == 1.0)
    assert fact is None or fact in got.reason, got.reason
