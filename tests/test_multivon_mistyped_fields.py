"""multivon records with mistyped fields: read when multivon-eval's own loader reads them, else one `invalid_input` each.

The records are built from multivon-eval's model classes (`EvalCase`, `AgentStep`, `ToolCall`) and written as its
`case_to_dict` writes them, then one field is mistyped; its `case_from_dict` (what `load_jsonl` runs per line) says
whether multivon accepts the record, and tracejudge must agree. A refused record names the file, its line and the
field, and the other records of the file are still read. tracejudge took a `null` thought or output, a `null`
`tool_calls`, and `arguments` that were a list, text or a number (as `{}` or raw text), which multivon refuses, and
named a mistyped thought by its own path (`trace.steps[0].thought`), not the record's.

Kept apart on purpose (documented in the README): a call's `id` and `error`, `{name, arguments}` expectations and a
whole-number `case_id` are read beside multivon's fields, and a call with an empty name, which multivon loads, is
refused as by every reader.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import extract_lines
from helpers import GONE, edited
from tracejudge.core.records import Case

mv_case = pytest.importorskip("multivon_eval.case")
mv_manifest = pytest.importorskip("multivon_eval.case_manifest")

_GONE = GONE
_STEP = ("agent_trace", 0)
_CALL = (*_STEP, "tool_calls", 0)

# (label, key path, new value or _GONE, the field named when refused; None: read)
MUTATIONS: list[tuple[str, tuple[Any, ...], Any, str | None]] = [
    ("thought is a number", (*_STEP, "thought"), 3, "agent_trace[0].thought"),
    ("thought is null", (*_STEP, "thought"), None, "agent_trace[0].thought"),
    ("thought is an object", (*_STEP, "thought"), {"text": "t"}, "agent_trace[0].thought"),
    ("thought is missing", (*_STEP, "thought"), _GONE, None),
    ("output is a number", (*_STEP, "output"), 42, "agent_trace[0].output"),
    ("output is null", (*_STEP, "output"), None, "agent_trace[0].output"),
    ("output is a list", (*_STEP, "output"), ["a"], "agent_trace[0].output"),
    ("tool_calls is null", (*_STEP, "tool_calls"), None, "agent_trace[0].tool_calls"),
    ("tool_calls is a mapping", (*_STEP, "tool_calls"), {"name": "search"}, "agent_trace[0].tool_calls"),
    ("tool_calls is missing", (*_STEP, "tool_calls"), _GONE, None),
    ("a call is text", _CALL, "search", "agent_trace[0].tool_calls[0]"),
    ("arguments is a list", (*_CALL, "arguments"), ["x"], "agent_trace[0].tool_calls[0].arguments"),
    ("arguments is JSON text", (*_CALL, "arguments"), '{"query": "x"}', "agent_trace[0].tool_calls[0].arguments"),
    ("arguments is a number", (*_CALL, "arguments"), 1, "agent_trace[0].tool_calls[0].arguments"),
    ("arguments is null", (*_CALL, "arguments"), None, "agent_trace[0].tool_calls[0].arguments"),
    ("arguments is missing", (*_CALL, "arguments"), _GONE, None),
    ("the call has no name", (*_CALL, "name"), _GONE, "agent_trace[0].tool_calls[0].name"),
    ("name is null", (*_CALL, "name"), None, "agent_trace[0].tool_calls[0].name"),
    ("name is a number", (*_CALL, "name"), 7, "agent_trace[0].tool_calls[0].name"),
    ("result is an object", (*_CALL, "result"), {"rows": [1, 2]}, None),
    ("result is null", (*_CALL, "result"), None, None),
    ("a step is null", _STEP, None, "agent_trace[0]"),
    ("a step has a name", (*_STEP, "name"), "plan", "agent_trace[0].name"),
    ("agent_trace is a mapping", ("agent_trace",), {"thought": "t"}, "agent_trace"),
    ("input is a number", ("input",), 5, "input"),
    ("input is missing", ("input",), _GONE, "input"),
    ("context holds a number", ("context",), ["doc", 2], "context[1]"),
    ("tags is null", ("tags",), None, "tags"),
    ("metadata is null", ("metadata",), None, "metadata"),
    ("expected_output is a number", ("expected_output",), 3, "expected_output"),
    ("source_id is empty", ("source_id",), "", "source_id"),
    ("expected_tool_calls is a mapping", ("expected_tool_calls",), {"search": 1}, "expected_tool_calls"),
]


def _seed() -> dict[str, Any]:
    call = mv_case.ToolCall(name="search", arguments={"query": "AI papers"}, result=["Paper A"])
    case = mv_case.EvalCase(input="Find AI papers", agent_trace=[mv_case.AgentStep(thought="search first", tool_calls=[call],
                                                                                   output="Paper A")],
                            expected_tool_calls=["search"], context=["doc"], tags=["agent"])
    return mv_manifest.case_to_dict(case)


def _mutated(label: str, path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    return {**edited(_seed(), path, value), "case_id": label.replace(" ", "-")}


def _multivon_reads(record: dict[str, Any]) -> bool:
    try:
        mv_manifest.case_from_dict(copy.deepcopy(record))
    except (TypeError, ValueError):
        return False
    return True


def test_the_seed_reads_alike() -> None:
    assert _multivon_reads(_seed())


def test_a_mistyped_field_is_read_or_refused_as_multivon_does(tmp_path: Path) -> None:
    records = [_seed()] + [_mutated(label, path, value) for label, path, value, _ in MUTATIONS]
    got = extract_lines(tmp_path, "multivon", records)
    assert isinstance(got[0], Case) and got[0].trace.tool_calls()[0].arguments == {"query": "AI papers"}
    for line, ((label, _, _, field), record, out) in enumerate(zip(MUTATIONS, records[1:], got[1:]), start=2):
        ours = isinstance(out, Case)
        assert ours == _multivon_reads(record) == (field is None), label
        if not ours:
            cid, err = out
            assert cid == record["case_id"] and err.kind == "invalid_input", label
            assert (Path(err.file).name, err.line, err.field) == ("data.jsonl", line, field), (label, err)
            assert "Traceback" not in err.message and err.message, label


def test_missing_step_fields_read_as_multivon_reads_them(tmp_path: Path) -> None:
    # multivon's defaults: no thought and no output is nothing said, no tool_calls no call, no arguments `{}`.
    record = mv_manifest.case_to_dict(mv_case.EvalCase(input="q", agent_trace=[mv_case.AgentStep()]))
    record["agent_trace"] = [{}, {"tool_calls": [{"name": "summarize"}]}]
    assert _multivon_reads(record)
    case, = extract_lines(tmp_path, "multivon", [record])
    assert [(s.thought, s.output) for s in case.trace.steps] == [(None, None), (None, None)]
    assert [(c.name, c.arguments) for c in case.trace.tool_calls()] == [("summarize", {})]


def test_an_empty_tool_name_multivon_loads_is_read_as_a_name_no_tool_has(tmp_path: Path) -> None:
    # (multivon's ToolCall takes any text; a trace holds no blank name: `multivon_text.blank_name`, as an expected "" is)
    record = _mutated("empty name", (*_CALL, "name"), "")
    assert _multivon_reads(record)
    case, = extract_lines(tmp_path, "multivon", [record])
    assert case.trace.tool_calls()[0].name == '(blank tool name "")'


@pytest.mark.parametrize(("text", "field"), [
    ('{"v": NaN}', "agent_trace[0].tool_calls[0].arguments.v"),
    ('{"v": [1, -Infinity]}', "agent_trace[0].tool_calls[0].arguments.v[1]"),
    ('{"v": 1e400}', "agent_trace[0].tool_calls[0].arguments.v"),
])
def test_a_number_json_cannot_hold_multivon_refuses_is_refused_naming_it(tmp_path: Path, text: str, field: str) -> None:
    # multivon's loader re-writes each case as strict JSON, so NaN, an infinity or 1e400 anywhere refuses the record;
    # read, an argument NaN was written `null` by `extract`, and the extracted case then matched an expected null.
    record = json.dumps(_mutated("odd number", (*_CALL, "arguments"), {"v": "HERE"})).replace('{"v": "HERE"}', text)
    assert not _multivon_reads(json.loads(record))
    (cid, err), = extract_lines(tmp_path, "multivon", [record])
    assert (err.kind, Path(err.file).name, err.line, err.field) == ("invalid_input", "data.jsonl", 1, field)
    assert "not a finite number" in err.message


def test_a_result_holding_nan_is_refused_as_multivon_refuses_it(tmp_path: Path) -> None:
    record = json.dumps(_mutated("nan result", (*_CALL, "result"), "HERE")).replace('"HERE"', "NaN")
    assert not _multivon_reads(json.loads(record))
    (cid, err), = extract_lines(tmp_path, "multivon", [record])
    assert err.field == "agent_trace[0].tool_calls[0].result"


@pytest.mark.parametrize(("record", "said"), [({"expected_output": "y"}, "no input"), ({"input": 5, "tags": []}, "a number")])
def test_a_plain_case_without_text_input_is_refused_naming_input(tmp_path: Path, record: dict[str, Any], said: str) -> None:
    # multivon refuses it for its input ("Case input must be a string"), not for a missing agent_trace, which it allows.
    assert not _multivon_reads(record)
    (cid, err), = extract_lines(tmp_path, "multivon", [record])
    assert (err.kind, err.line, err.field) == ("invalid_input", 1, "input") and said in err.message


def test_a_fraction_of_309_digits_is_refused_as_the_infinity_it_reads_as(tmp_path: Path) -> None:
    record = json.dumps(_mutated("long number", (*_CALL, "arguments"), {"v": "HERE"})).replace('"HERE"', "9" * 309 + ".5")
    (cid, err), = extract_lines(tmp_path, "multivon", [record])
    assert err.field == "agent_trace[0].tool_calls[0].arguments.v" and "inf" in err.message
