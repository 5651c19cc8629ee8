"""BFCL's Java / JavaScript categories and multi_turn_miss_func, read as upstream's checker reads them.

The records are excerpts (descriptions shortened) of ShishirPatil/gorilla,
`berkeley-function-call-leaderboard/bfcl_eval/data/BFCL_v4_simple_java.json`, `BFCL_v4_simple_javascript.json`,
`BFCL_v4_multi_turn_miss_func.json` and their `possible_answer/` lines (Apache-2.0). The verdicts are those of
upstream's `ast_checker` (`bfcl_eval/eval_checker/ast_eval/ast_checker.py` with its `java_type_converter` /
`js_type_converter`): a Java / JavaScript argument is sent as source text, a string, and converted by its declared
type before it is compared; a non-string value is refused.
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


def _fn(name: str, props: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": name, "description": "…", "parameters": {"type": "dict", "properties": props, "required": list(props)}}]


JAVA = [
    ({"id": "simple_java_25", "question": [[{"role": "user", "content": "Help me update the sort order of a recommended subject with ID 42 to 5"}]],
      "function": _fn("SmsHomeRecommendSubjectController.updateSort", {"id": {"type": "long"}, "sort": {"type": "integer"}})},
     {"id": "simple_java_25", "ground_truth": [{"SmsHomeRecommendSubjectController.updateSort": {"id": [42], "sort": [5]}}]}),
    ({"id": "simple_java_62", "question": [[{"role": "user", "content": "Help me create a range query for a field named 'temperature' …"}]],
      "function": _fn("dvRangeQuery", {"field": {"type": "String"}, "queryType": {"type": "any"}, "from": {"type": "any"},
                                       "to": {"type": "any"}, "includeFrom": {"type": "boolean"}, "includeTo": {"type": "boolean"}})},
     {"id": "simple_java_62", "ground_truth": [{"dvRangeQuery": {"field": ["temperature"], "queryType": ["FLOAT"], "from": [20.5, "20.5"],
                                                                 "to": [30.0, "30.0"], "includeFrom": [True], "includeTo": [False]}}]}),
    ({"id": "simple_java_22", "question": [[{"role": "user", "content": "Help me update the new status to 2 for product IDs [101, 202, 303]"}]],
      "function": _fn("PmsProductServiceImpl.updateNewStatus", {"ids": {"type": "ArrayList", "items": {"type": "long"}}, "newStatus": {"type": "integer"}})},
     {"id": "simple_java_22", "ground_truth": [{"PmsProductServiceImpl.updateNewStatus": {"ids": [[101, 202, 303]], "newStatus": [2]}}]}),
]  # fmt: skip

JS = [
    ({"id": "simple_javascript_2", "question": [[{"role": "user", "content": "Help me extract the last transaction ID …"}]],
      "function": _fn("extractLastTransactionId", {"filepath": {"type": "String"}, "status": {"type": "array", "items": {"type": "String"}},
                                                   "encoding": {"type": "String"}, "processFunction": {"type": "any"}})},
     {"id": "simple_javascript_2", "ground_truth": [{"extractLastTransactionId": {"filepath": ["/var/log/db.log"], "status": [["completed", "failed"]],
                                                                                  "encoding": ["utf-8"], "processFunction": ["processFunction"]}}]}),
    ({"id": "simple_javascript_6", "question": [[{"role": "user", "content": "Help me create a mapping … the first 4 elements …"}]],
      "function": _fn("mapTransitions", {"category": {"type": "String"}, "limit": {"type": "float"}})},
     {"id": "simple_javascript_6", "ground_truth": [{"mapTransitions": {"category": ["transition"], "limit": [4.0]}}]}),
]  # fmt: skip


class _Dataset:
    def __init__(self, path: Path) -> None:
        self.path, self.tasks, self.limit, self.options = path, None, None, {}


def _cases(tmp_path: Path, name: str, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Case]:
    (tmp_path / "possible_answer").mkdir(exist_ok=True)
    (tmp_path / name).write_text("".join(json.dumps(q) + "\n" for q, _ in pairs))
    (tmp_path / "possible_answer" / name).write_text("".join(json.dumps(a) + "\n" for _, a in pairs))
    fmt, ds = format_for("bfcl"), _Dataset(tmp_path / name)
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    assert all(isinstance(c, Case) for c in cases), cases
    return {c.id: c for c in cases}


def _verdict(case: Case, arguments: dict[str, Any]) -> bool:
    name = case.expected_tool_calls[0].name
    trace = Case.model_validate({"id": "x", "trace": {"steps": [{"tool_calls": [{"name": name, "arguments": arguments}]}]}}).trace
    return ToolCalls(arguments="exact").evaluate(case.model_copy(update={"trace": trace})).value == 1.0


@pytest.mark.parametrize(("qid", "arguments", "upstream"), [
    # `long` needs its L suffix (a bare "42" stays a string upstream); `integer` is a digit string; JSON numbers are refused
    ("simple_java_25", {"id": "42L", "sort": "5"}, True),
    ("simple_java_25", {"id": "42", "sort": "5"}, False),
    ("simple_java_25", {"id": 42, "sort": 5}, False),
    # `String` compares as `string_checker` does (case, spaces and `-_` ignored); `boolean` is exactly "true" / "false"
    ("simple_java_62", {"field": "Temperature", "queryType": "FLOAT", "from": "20.5", "to": "30.0", "includeFrom": "true", "includeTo": "false"}, True),
    ("simple_java_62", {"field": "temperature", "queryType": "FLOAT", "from": "20.5", "to": "30.0", "includeFrom": True, "includeTo": False}, False),
    # an `any` whose answers are [20.5, "20.5"]: the string sent is compared with them as it stands
    ("simple_java_62", {"field": "temperature", "queryType": "FLOAT", "from": 20.5, "to": 30.0, "includeFrom": "true", "includeTo": "false"}, False),
    ("simple_java_22", {"ids": "new ArrayList<>(Arrays.asList(101L, 202L, 303L))", "newStatus": "2"}, True),
    ("simple_java_22", {"ids": [101, 202, 303], "newStatus": "2"}, False),
])  # fmt: skip
def test_java_arguments_are_source_text_converted_by_their_declared_type(tmp_path, qid, arguments, upstream):
    cases = _cases(tmp_path, "BFCL_v4_simple_java.json", JAVA)
    assert _verdict(cases[qid], arguments) is upstream


@pytest.mark.parametrize(("qid", "arguments", "upstream"), [
    # a JavaScript `String` may come quoted; an `array` of strings as a literal; `float` as a decimal string
    ("simple_javascript_2", {"filepath": "'/var/log/db.log'", "status": '["completed", "failed"]', "encoding": "UTF-8", "processFunction": "processFunction"}, True),
    ("simple_javascript_2", {"filepath": "/var/log/db.log", "status": ["completed", "failed"], "encoding": "utf-8", "processFunction": "processFunction"}, False),
    ("simple_javascript_6", {"category": "transition", "limit": "4"}, True),
    ("simple_javascript_6", {"category": "transition", "limit": "4.0"}, True),
    ("simple_javascript_6", {"category": "transition", "limit": "4.5"}, False),
    ("simple_javascript_6", {"category": "transition", "limit": 4.0}, False),
])  # fmt: skip
def test_javascript_arguments_are_source_text_converted_by_their_declared_type(tmp_path, qid, arguments, upstream):
    cases = _cases(tmp_path, "BFCL_v4_simple_javascript.json", JS)
    assert _verdict(cases[qid], arguments) is upstream


def test_a_missed_function_turn_keeps_which_functions_upstream_withholds(tmp_path):
    question = {"id": "multi_turn_miss_func_0", "question": [[{"role": "user", "content": "Move 'final_report.pdf' …"}], [],
                                                             [{"role": "user", "content": "…"}]],
                "initial_config": {}, "path": [], "involved_classes": ["GorillaFileSystem"], "missed_function": {"1": ["sort"]}}
    answer = {"id": "multi_turn_miss_func_0", "ground_truth": [["cd(folder='document')"], ["sort(file_name='final_report.pdf')"], []]}
    case = _cases(tmp_path, "BFCL_v4_multi_turn_miss_func.json", [(question, answer)])["multi_turn_miss_func_0"]
    assert case.context["missed_function"] == {"1": ["sort"]}
    assert case.turns == [None, "…"]
    assert [c.name for c in case.expected_tool_calls] == ["cd", "sort"]
