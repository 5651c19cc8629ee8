"""BFCL string arguments compare as BFCL's own AST checker compares them (`standardize_string`, ShishirPatil/gorilla
`berkeley-function-call-leaderboard/bfcl_eval/eval_checker/ast_eval/ast_checker.py`): spaces and `,./-_*^` dropped,
case ignored, `'` read as `"`; only where that checker standardizes (a string, list or dict parameter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
from tracejudge.stages.score import ToolCalls


def _case(tmp_path: Path, params: dict, answer: dict, required: list | None = None) -> Case:
    (tmp_path / "possible_answer").mkdir(exist_ok=True)
    doc = {"name": "f", "parameters": {"type": "dict", "properties": params, "required": list(params) if required is None else required}}
    (tmp_path / "q.json").write_text(json.dumps({"id": "simple_python_0", "question": [[{"role": "user", "content": "?"}]], "function": [doc]}) + "\n")
    (tmp_path / "possible_answer" / "q.json").write_text(json.dumps({"id": "simple_python_0", "ground_truth": [{"f": answer}]}) + "\n")
    fmt = format_for("bfcl")

    class _Dataset:
        path, tasks, limit, options = tmp_path / "q.json", None, None, {}

    ctx = fmt.prepare(_Dataset)
    (case,) = [extract_record(raw, fmt, ctx) for raw in fmt.read(_Dataset)]
    assert isinstance(case, Case), case
    return case


def _verdict(case: Case, args: dict) -> bool:
    scored = case.model_copy(update={"trace": Case.model_validate({"id": "x", "trace": {"steps": [{"tool_calls": [{"name": "f", "arguments": args}]}]}}).trace})
    return ToolCalls(arguments="exact").evaluate(scored).value == 1.0


# (sent, accepted, BFCL's verdict): each pair where exact and standardized comparison differ, and a few where they agree.
STRINGS = [
    ("new york, ny", "New York, NY", True),      # case
    ("NewYork,NY", "New York, NY", True),        # spaces, a comma
    ("April 1 2024", "April 1, 2024", True),     # upstream's own example
    ("2024/04/01", "2024-04-01", True),          # `/` and `-` both dropped
    ("san_francisco", "San Francisco", True),    # `_`
    ("a*b^c.d", "abcd", True),                   # `*`, `^`, `.`
    ("it's", 'it"s', True),                      # `'` read as `"`
    ("New-York!", "New York", False),            # `!` is not dropped
    ("Nueva York", "New York", False),
    ("New York", "New York", True),
]


@pytest.mark.parametrize("sent, accepted, verdict", STRINGS)
def test_a_string_parameter_gets_bfcls_verdict(tmp_path, sent, accepted, verdict):
    case = _case(tmp_path, {"city": {"type": "string"}}, {"city": [accepted]})
    assert _verdict(case, {"city": sent}) is verdict


def test_list_and_dict_strings_are_standardized_as_upstream_and_others_compare_exactly(tmp_path):
    case = _case(tmp_path, {"names": {"type": "array", "items": {"type": "string"}}, "where": {"type": "dict"}, "n": {"type": "integer"}},
                 {"names": [["Ann Lee", "Bo"]], "where": [{"city": ["Paris"], "zip": [75001]}], "n": ["count"]})
    assert _verdict(case, {"names": ["ann lee", "BO"], "where": {"city": "PARIS", "zip": 75001}, "n": "count"})
    # An integer parameter's accepted string is a variable name: upstream compares it exactly.
    assert not _verdict(case, {"names": ["ann lee", "BO"], "where": {"city": "PARIS", "zip": 75001}, "n": "Count"})
    assert not _verdict(case, {"names": ["Bo", "Ann Lee"], "where": {"city": "Paris", "zip": 75001}, "n": "count"})  # order kept


def test_an_optional_parameter_may_still_be_left_out(tmp_path):
    case = _case(tmp_path, {"unit": {"type": "string"}}, {"unit": ["Celsius", ""]}, required=[])
    assert _verdict(case, {}) and _verdict(case, {"unit": "celsius"}) and not _verdict(case, {"unit": "kelvin"})


def test_a_required_parameter_must_be_sent_though_its_answer_accepts_empty(tmp_path):
    # upstream's `simple_function_checker` checks the docs' `required` list before the answers: "Missing required parameter"
    case = _case(tmp_path, {"unit": {"type": "string"}}, {"unit": ["Celsius", ""]}, required=["unit"])
    assert not _verdict(case, {}) and _verdict(case, {"unit": "celsius"}) and _verdict(case, {"unit": ""})
