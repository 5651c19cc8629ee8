"""BFCL's Python categories: values typed, required parameters and parallel pairing as upstream's AST checker does.

Each verdict is that of upstream's checker (ShishirPatil/gorilla, `berkeley-function-call-leaderboard/bfcl_eval/
eval_checker/ast_eval/ast_checker.py`): `simple_function_checker` first wants every parameter the docs list as
`required` and refuses one they do not declare, then `type_checker` wants a value of the declared type or of the
answers' type (a "variable"), then compares it (`string_checker`, `list_checker`, `dict_checker`, or `in`);
`parallel_function_checker_no_order` pairs each answer, in order, with the first unpaired call that meets it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
from tracejudge.stages.score import ToolCalls


def _case(tmp_path: Path, props: dict[str, Any], answer: list[dict[str, Any]], required: list[str], qid: str = "simple_python_0") -> Case:
    docs = [{"name": name, "description": "…", "parameters": {"type": "dict", "properties": props, "required": required}}
            for name in dict.fromkeys(next(iter(call)) for call in answer)]
    (tmp_path / "possible_answer").mkdir(exist_ok=True)
    (tmp_path / "q.json").write_text(json.dumps({"id": qid, "question": [[{"role": "user", "content": "?"}]], "function": docs}) + "\n")
    (tmp_path / "possible_answer" / "q.json").write_text(json.dumps({"id": qid, "ground_truth": answer}) + "\n")
    fmt = format_for("bfcl")

    class _Dataset:
        path, tasks, limit, options = tmp_path / "q.json", None, None, {}

    (case,) = [extract_record(raw, fmt, fmt.prepare(_Dataset)) for raw in fmt.read(_Dataset)]
    assert isinstance(case, Case), case
    return case


def _passes(case: Case, *calls: tuple[str, dict[str, Any]], pairing: str = "one_to_one") -> bool:
    trace = Case.model_validate({"id": "x", "trace": {"steps": [{"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}]}}).trace
    return ToolCalls(arguments="exact", pairing=pairing).evaluate(case.model_copy(update={"trace": trace})).value == 1.0


NUMBERS = {"n": {"type": "integer"}, "x": {"type": "float"}, "v": {"type": "any"},
           "ids": {"type": "array", "items": {"type": "integer"}}, "w": {"type": "array", "items": {"type": "float"}}}
N = {"n": 5, "x": 2.0, "v": 7, "ids": [1, 2], "w": [0.5, 1.0]}


@pytest.mark.parametrize(("change", "upstream"), [
    ({}, True),
    ({"n": 5.0}, False),  # an `integer` whose answers are integers: `type(5.0) != int`, "Incorrect type"
    ({"x": 2}, True),  # a `float` takes an int: "Allow python auto conversion from int to float"
    ({"v": 7.0}, False),  # an `any` whose answer is 7: neither a string nor an int
    ({"ids": [1.0, 2]}, False),  # the nested type check: each item an int
    ({"w": [0.5, 1]}, False),  # ... each a float: no conversion inside a list
    ({"n": True}, False),
])  # fmt: skip
def test_numbers_are_typed_as_upstreams_type_check_types_them(tmp_path, change, upstream):
    answer = [{"f": {"n": [5], "x": [2.0], "v": [7], "ids": [[1, 2]], "w": [[0.5, 1.0]]}}]
    case = _case(tmp_path, NUMBERS, answer, required=list(NUMBERS))
    assert _passes(case, ("f", {**N, **change})) is upstream


@pytest.mark.parametrize(("sent", "upstream"), [
    ({"n": 5, "unit": "cm", "ids": [1]}, True),
    ({"n": 5}, True),  # optional ones left out
    ({"n": 5, "unit": ""}, True),  # a string parameter: "" is one of the accepted strings
    ({"n": 5, "scale": ""}, False),  # an integer one: "" is a string, refused by the type check
    ({"n": 5, "ids": ""}, False),
    ({"n": 5, "ids": []}, True),  # `list_checker` reads the accepted "" as a list of its characters: []
    ({"n": 5, "ids": [1.0]}, True),  # with "" accepted the nested type check passes, and `[1.0] == [1]`
    ({"unit": "cm"}, False),  # `n` is required: its accepted "" does not let it be left out
    ({"n": ""}, False),
])  # fmt: skip
def test_an_accepted_empty_string_is_read_as_upstream_reads_it(tmp_path, sent, upstream):
    props = {"n": {"type": "integer"}, "unit": {"type": "string"}, "scale": {"type": "integer"}, "ids": {"type": "array", "items": {"type": "integer"}}}
    answer = [{"f": {"n": [5, ""], "unit": ["cm", ""], "scale": [1, ""], "ids": [[1], ""]}}]
    assert _passes(_case(tmp_path, props, answer, required=["n"]), ("f", sent)) is upstream


def test_a_dict_value_compares_with_pythons_equality(tmp_path):
    # `dict_checker` tests `value in accepted` with no type check: `1 == True`, `30.0 == 30`
    props = {"body": {"type": "dict", "properties": {"on": {"type": "boolean"}, "t": {"type": "integer"}}}}
    case = _case(tmp_path, props, [{"f": {"body": [{"on": [True], "t": [30]}]}}], required=["body"])
    assert _passes(case, ("f", {"body": {"on": True, "t": 30}})) and _passes(case, ("f", {"body": {"on": 1, "t": 30.0}}))
    assert not _passes(case, ("f", {"body": {"on": 0, "t": 30}})) and not _passes(case, ("f", {"body": {"on": "true", "t": 30}}))


def test_parameters_the_docs_and_the_answer_disagree_on_pass_as_upstream_lets_them(tmp_path):
    # parallel_multiple_12: `permeability` is answered (["", 0.1]) but not declared: sent, it is an "Unexpected parameter"
    props = {"current": {"type": "float"}}
    case = _case(tmp_path, props, [{"f": {"current": [4.0], "permeability": ["", 0.1]}}], required=["current"])
    assert _passes(case, ("f", {"current": 4.0})) and not _passes(case, ("f", {"current": 4.0, "permeability": 0.1}))
    # live_multiple_964-207-0: the docs require `statement`, the answer names `question`: no call passes
    case = _case(tmp_path, {"statement": {"type": "string"}}, [{"f": {"question": ["Why?"]}}], required=["statement"])
    assert not any(_passes(case, ("f", a)) for a in ({"question": "Why?"}, {"statement": "Why?"}, {"statement": "Why?", "question": "Why?"}))


def test_parallel_calls_pair_first_fit_as_upstream(tmp_path):
    # parallel_178: the first answer accepts either company, so upstream gives it the first call that fits, and the
    # answer that needed that call finds none; `pairing: first_fit` does the same, a maximum matching pairs all.
    props = {"company": {"type": "string"}, "date": {"type": "string"}}
    answer = [{"price": {"company": ["Microsoft", "Apple"], "date": ["2022-01-01"]}}, {"price": {"company": ["Microsoft"], "date": ["2022-01-01"]}},
              {"price": {"company": ["Apple"], "date": ["2022-02-01"]}}]
    case = _case(tmp_path, props, answer, required=["company", "date"], qid="parallel_0")
    calls = [("price", {"company": "Apple", "date": "2022-02-01"}), ("price", {"company": "Apple", "date": "2022-01-01"}),
             ("price", {"company": "Microsoft", "date": "2022-01-01"})]
    assert _passes(case, *calls) and _passes(case, *calls, pairing="first_fit")
    reordered = [calls[2], calls[1], calls[0]]
    assert not _passes(case, *reordered, pairing="first_fit") and _passes(case, *reordered)
    score = ToolCalls(arguments="exact", pairing="first_fit").evaluate(case.model_copy(update={"trace": Case.model_validate(
        {"id": "x", "trace": {"steps": [{"tool_calls": [{"name": n, "arguments": a} for n, a in reordered]}]}}).trace}))
    assert "pairing=first_fit" in score.reason and score.details["missing"] == [1]
