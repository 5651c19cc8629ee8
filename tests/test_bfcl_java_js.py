"""BFCL's Java / JavaScript categories and multi_turn_miss_func, read as upstream's checker reads them.

The records are excerpts (descriptions and questions shortened) of ShishirPatil/gorilla,
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
from tracejudge.stages.extract.bfcl_lang import source_value
from tracejudge.stages.score import ToolCalls
from tracejudge.stages.score.value_match import match_value


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
    ({"id": "simple_java_1", "question": [[{"role": "user", "content": "Help me generate SQL completion proposals for a table named 'Customers' …"}]],
      "function": _fn("SQLCompletionAnalyzer.makeProposalsFromObject", {"object": {"type": "any"}, "useShortName": {"type": "boolean"}, "params": {"type": "HashMap"}})},
     {"id": "simple_java_1", "ground_truth": [{"SQLCompletionAnalyzer.makeProposalsFromObject": {"object": ["Customers"], "useShortName": [True],
                                                                                                  "params": [{"limit": [50], "schemaFilter": ["public"]}]}}]}),
    ({"id": "simple_java_36", "question": [[{"role": "user", "content": "Help me decode a list of alternating key-value objects …"}]],
      "function": _fn("ObjectMapEntryReplayDecoder.decode", {"parts": {"type": "ArrayList", "items": {"type": "any"}}, "state": {"type": "any"}})},
     {"id": "simple_java_36", "ground_truth": [{"ObjectMapEntryReplayDecoder.decode": {"parts": [["userID", 42, "username", "johndoe", "isActive", True]],
                                                                                       "state": ["processingState"]}}]}),
    ({"id": "simple_java_61", "question": [[{"role": "user", "content": "Help me create an exponential decay scoring function …"}]],
      "function": _fn("ScoreFunctionBuilders.exponentialDecayFunction", {"fieldName": {"type": "String"}, "origin": {"type": "any"}, "scale": {"type": "any"},
                                                                         "offset": {"type": "any"}, "decay": {"type": "double"}})},
     {"id": "simple_java_61", "ground_truth": [{"ScoreFunctionBuilders.exponentialDecayFunction": {"fieldName": ["timestamp"], "origin": ["now"], "scale": ["10d"],
                                                                                                  "offset": ["2d"], "decay": [0.5]}}]}),
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
    ({"id": "simple_javascript_14", "question": [[{"role": "user", "content": "Help me generate a data accessor for a chart component named 'BarChart' …"}]],
      "function": _fn("chartDataAccessorFactory", {"chart": {"type": "dict", "properties": {"nm": {"type": "String"}, "mn": {"type": "String"}}},
                                                   "library": {"type": "any"}, "configObject": {"type": "String"}})},
     {"id": "simple_javascript_14", "ground_truth": [{"chartDataAccessorFactory": {"chart": [{"nm": ["BarChart"], "mn": ["chartModule"]}],
                                                                                  "library": ["visualizationLibrary"], "configObject": ["config"]}}]}),
    ({"id": "simple_javascript_20", "question": [[{"role": "user", "content": "Help me add a 'click' event listener to a button element 'myButton' …"}]],
      "function": [{"name": "buttonAddClickHandler", "description": "…", "parameters": {"type": "dict", "properties": {
          "element": {"type": "any"}, "callback": {"type": "any"}, "options": {"type": "dict"}}, "required": ["element", "callback"]}}]},
     {"id": "simple_javascript_20", "ground_truth": [{"buttonAddClickHandler": {"element": ["myButton"], "callback": ["handleButtonClick"],
                                                                                "options": [{"stopPropagation": [True]}]}}]}),
    ({"id": "simple_javascript_39", "question": [[{"role": "user", "content": "Help me determine if a synthetic rest parameter should be added to a function declaration …"}]],
      "function": _fn("maybeAddJsSyntheticRestParameter", {"declaration": {"type": "any"}, "parameters": {"type": "array", "items": {"type": "String"}}})},
     {"id": "simple_javascript_39", "ground_truth": [{"maybeAddJsSyntheticRestParameter": {"declaration": ["funcDeclaration"], "parameters": ["funcParameters"]}}]}),
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
    ("simple_java_22", {"ids": "new ArrayList<Long>() {{ add(101L); add(202L);\n add(303L); }}", "newStatus": "2"}, True),
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


J1 = {"object": "Customers", "useShortName": "true"}
J61 = {"fieldName": "timestamp", "origin": "now", "scale": "10d", "offset": "2d"}


@pytest.mark.parametrize(("qid", "arguments", "upstream"), [
    # a HashMap is source text read by `parse_hashmap`: `put` calls in any order, values by `parse_java_value`
    ("simple_java_1", {**J1, "params": 'new HashMap<String, Object>() {{ put("limit", 50); put("schemaFilter", "public"); }}'}, True),
    ("simple_java_1", {**J1, "params": 'new HashMap<>() {{put("schemaFilter", "PUBLIC");\nput("limit", 50L);}}'}, True),
    ("simple_java_1", {**J1, "params": 'new HashMap<>() {{ put("limit", 5e1); put("schemaFilter", public); }}'}, True),
    ("simple_java_1", {**J1, "params": 'new HashMap<>() {{ put("limit", 0); put("limit", 50); put("schemaFilter", "public"); }}'}, True),
    ("simple_java_1", {**J1, "params": 'new HashMap<>() {{ put("limit", 50); put("limit", 0); put("schemaFilter", "public"); }}'}, False),
    ("simple_java_1", {**J1, "params": 'new HashMap<>() {{ put("limit", "50"); put("schemaFilter", "public"); }}'}, False),
    ("simple_java_1", {**J1, "params": 'new HashMap<>() {{ put("limit", 50); }}'}, False),
    ("simple_java_1", {**J1, "params": 'new HashMap<>() {{ put("limit", 50); put("schemaFilter", "public"); put("x", 1); }}'}, False),
    ("simple_java_1", {**J1, "params": {"limit": 50, "schemaFilter": "public"}}, False),
    ("simple_java_1", {**J1, "params": '{"limit": 50, "schemaFilter": "public"}'}, False),
    # a double in exponent form, as `java_type_converter`'s pattern reads it
    ("simple_java_61", {**J61, "decay": "5E-1"}, True),
    ("simple_java_61", {**J61, "decay": "0.05e+1"}, True),
    ("simple_java_61", {**J61, "decay": "5e-1f"}, False),
    ("simple_java_61", {**J61, "decay": "-5e-1"}, False),
    # an ArrayList of `any` holding a number: upstream converts every item to a string, so nothing is accepted
    ("simple_java_36", {"parts": 'new ArrayList<>(Arrays.asList("userID", 42, "username", "johndoe", "isActive", true))', "state": "processingState"}, False),
    ("simple_java_36", {"parts": ["userID", 42, "username", "johndoe", "isActive", True], "state": "processingState"}, False),
])  # fmt: skip
def test_java_maps_exponents_and_lists_of_any_read_as_upstream_converts_them(tmp_path, qid, arguments, upstream):
    cases = _cases(tmp_path, "BFCL_v4_simple_java.json", JAVA)
    assert _verdict(cases[qid], arguments) is upstream


@pytest.mark.parametrize(("qid", "arguments", "upstream"), [
    # a dict is an object literal read by `parse_js_collection`: keys quoted or not, in any order, values without quotes
    ("simple_javascript_14", {"chart": "{nm: 'BarChart', mn: 'chartModule'}", "library": "visualizationLibrary", "configObject": "config"}, True),
    ("simple_javascript_14", {"chart": '{"mn": "chartModule", "nm": barchart} ', "library": "visualizationLibrary", "configObject": "config"}, True),
    ("simple_javascript_14", {"chart": "{nm: 'BarChart',\n mn: 'chartModule'}", "library": "visualizationLibrary", "configObject": "config"}, False),
    ("simple_javascript_14", {"chart": "{nm: 'BarChart'}", "library": "visualizationLibrary", "configObject": "config"}, False),
    ("simple_javascript_14", {"chart": {"nm": "BarChart", "mn": "chartModule"}, "library": "visualizationLibrary", "configObject": "config"}, False),
    # Python's `==` compares the converted value: 1 meets an accepted `true`
    ("simple_javascript_20", {"element": "myButton", "callback": "handleButtonClick", "options": "{stopPropagation: true}"}, True),
    ("simple_javascript_20", {"element": "myButton", "callback": "handleButtonClick", "options": "{stopPropagation: 1}"}, True),
    ("simple_javascript_20", {"element": "myButton", "callback": "handleButtonClick", "options": "{stopPropagation: false}"}, False),
    ("simple_javascript_20", {"element": "myButton", "callback": "handleButtonClick", "options": {"stopPropagation": True}}, False),
    ("simple_javascript_20", {"element": "myButton", "callback": "handleButtonClick"}, False),
    # an `array` answered with a variable name: `parse_js_collection` gives back the text stripped
    ("simple_javascript_39", {"declaration": "funcDeclaration", "parameters": " funcParameters\n"}, True),
    ("simple_javascript_39", {"declaration": "funcDeclaration", "parameters": "func parameters"}, False),
])  # fmt: skip
def test_javascript_dicts_read_as_upstream_converts_them(tmp_path, qid, arguments, upstream):
    cases = _cases(tmp_path, "BFCL_v4_simple_javascript.json", JS)
    assert _verdict(cases[qid], arguments) is upstream


@pytest.mark.parametrize(("kind", "value", "text", "upstream"), [
    ("float", 4.0, "4e0f", True), ("float", 4.0, "0.4E1F", True), ("float", 4.0, "4e0", False), ("double", 150.0, "1.5E2", True),
    ("double", 150.0, "1500e-1", True), ("double", 150.0, "1.5E2d", False), ("double", 150.0, "1.5e3", False),
])  # fmt: skip
def test_java_float_and_double_take_the_exponent_spellings_upstream_reads(kind, value, text, upstream):
    assert match_value(source_value(value, {"type": kind}, "java", variable=False), text) is upstream


def test_the_example_agent_offers_java_and_javascript_parameters_as_strings_as_bfcl_does(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "examples" / "agents"))
    from bfcl_agent import respond, source_text_doc

    doc = {"name": "a.b", "description": "Does it.", "parameters": {"type": "dict", "properties": {
        "ids": {"type": "ArrayList", "description": "Ids.", "items": {"type": "long"}}, "meta": {"type": "HashMap", "description": "Meta."},
        "any": {"type": "any", "description": "Any."}}, "required": ["ids"]}}  # fmt: skip
    java = source_text_doc(doc, "java")
    assert {p["type"] for p in java["parameters"]["properties"].values()} == {"string"}
    assert java["parameters"]["properties"]["ids"]["description"] == (
        "Ids. This is Java ArrayList type parameter in string representation."
        " The list elements are of type long; they are not in string representation.")
    assert java["parameters"]["properties"]["any"]["description"].endswith("any type of Java object in string representation.")
    assert java["description"] == "Does it. Note that the provided function is in Java 8 SDK syntax."
    assert doc["parameters"]["properties"]["ids"]["type"] == "ArrayList"  # the case's own doc is left as read
    js = source_text_doc({**doc, "parameters": {"type": "dict", "properties": {
        "chart": {"type": "dict", "description": "C.", "properties": {"nm": {"type": "String"}}}}}}, "javascript")  # fmt: skip
    assert js["parameters"]["properties"]["chart"] == {"type": "string", "description": (
        'C. This is JavaScript dict type parameter in string representation. The dictionary entries have the following'
        ' schema; they are not in string representation. {"nm": {"type": "String"}}')}  # fmt: skip

    sent: list[dict] = []
    monkeypatch.setattr("bfcl_agent._post", lambda url, body, key, timeout: sent.append(body) or {"choices": [{"message": {}}]})
    respond({"input": "q", "case": {"id": "simple_java_1", "metadata": {"category": "simple_java"}, "context": {"functions": [doc]}}})
    respond({"input": "q", "case": {"id": "simple_python_1", "metadata": {"category": "simple_python"}, "context": {"functions": [doc]}}})
    java_tool, python_tool = (b["tools"][0]["function"]["parameters"]["properties"] for b in sent)
    assert java_tool["ids"] == {"type": "string", "description": java["parameters"]["properties"]["ids"]["description"]}
    assert python_tool["ids"]["type"] == "ArrayList"  # (Python categories: unchanged)


def test_a_missed_function_turn_keeps_which_functions_upstream_withholds(tmp_path):
    question = {"id": "multi_turn_miss_func_0", "question": [[{"role": "user", "content": "Move 'final_report.pdf' …"}], [],
                                                             [{"role": "user", "content": "…"}]],
                "initial_config": {}, "path": [], "involved_classes": ["GorillaFileSystem"], "missed_function": {"1": ["sort"]}}
    answer = {"id": "multi_turn_miss_func_0", "ground_truth": [["cd(folder='document')"], ["sort(file_name='final_report.pdf')"], []]}
    case = _cases(tmp_path, "BFCL_v4_multi_turn_miss_func.json", [(question, answer)])["multi_turn_miss_func_0"]
    assert case.context["missed_function"] == {"1": ["sort"]}
    assert case.turns == [None, "…"]
    assert [c.name for c in case.expected_tool_calls] == ["cd", "sort"]
