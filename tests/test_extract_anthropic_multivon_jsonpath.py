"""Formats `anthropic-messages`, `multivon` and `json-path` on small hand-made records."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extract_lines
from tracejudge.core.records import Case
from tracejudge.stages.score import ToolCorrectness


def _one(tmp_path: Path, fmt: str, record, **options) -> Case:
    got = extract_lines(tmp_path, fmt, [record], options)
    assert isinstance(got[0], Case), got[0]
    return got[0]


def _calls(case: Case) -> list[tuple]:
    return [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]


def _use(cid, name, inp):
    return {"type": "tool_use", "id": cid, "name": name, "input": inp}


def _res(cid, content, **kw):
    return {"type": "tool_result", "tool_use_id": cid, "content": content, **kw}


ANTHROPIC = {
    "parallel tool_use, results in another order": (
        [{"role": "user", "content": "weather and time in Paris"},
         {"role": "assistant", "content": [{"type": "text", "text": "Checking."}, _use("t1", "get_weather", {"city": "Paris"}), _use("t2", "get_time", {"city": "Paris"})]},
         {"role": "user", "content": [_res("t2", "14:05"), _res("t1", [{"type": "text", "text": '{"temp_c": 21}'}])]}],
        [("t1", "get_weather", {"city": "Paris"}, {"temp_c": 21}, None), ("t2", "get_time", {"city": "Paris"}, "14:05", None)],
    ),
    "is_error marks a failed call": (
        [{"role": "user", "content": "price of XYZ"},
         {"role": "assistant", "content": [_use("t1", "get_price", {"ticker": "XYZ"})]},
         {"role": "user", "content": [_res("t1", "ticker not found", is_error=True)]}],
        [("t1", "get_price", {"ticker": "XYZ"}, "ticker not found", "ticker not found")],
    ),
    "tool_use_id missing: paired by position": (
        [{"role": "user", "content": "x"},
         {"role": "assistant", "content": [{"type": "tool_use", "name": "a", "input": {}}, {"type": "tool_use", "name": "b", "input": {}}]},
         {"role": "user", "content": [{"type": "tool_result", "content": "ra"}, {"type": "tool_result", "content": "rb"}]}],
        [(None, "a", {}, "ra", None), (None, "b", {}, "rb", None)],
    ),
    "server tool answered inside the assistant turn, with an error result": (
        [{"role": "user", "content": "search"},
         {"role": "assistant", "content": [{"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}},
                                           {"type": "web_search_tool_result", "tool_use_id": "s1", "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
                                           {"type": "text", "text": "Could not search."}]}],
        [("s1", "web_search", {"query": "q"}, {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}, "max_uses_exceeded")],
    ),
}


@pytest.mark.parametrize("name", list(ANTHROPIC))
def test_anthropic_awkward_cases(tmp_path: Path, name: str):
    messages, expected = ANTHROPIC[name]
    assert _calls(_one(tmp_path, "anthropic-messages", {"messages": messages})) == expected


def test_anthropic_steps_thinking_text_and_turns(tmp_path: Path):
    messages, _ = ANTHROPIC["parallel tool_use, results in another order"]
    case = _one(tmp_path, "anthropic-messages", {"id": "a1", "system": "be brief", "messages": [
        *messages, {"role": "assistant", "content": [{"type": "thinking", "thinking": "have both"}, {"type": "text", "text": "Sunny, 14:05."}]},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]}, {"role": "assistant", "content": "Bye."}]})
    steps = case.trace.steps
    assert [len(s.tool_calls) for s in steps] == [2, 0, 0]
    assert steps[0].thought == "Checking."
    assert (steps[1].thought, steps[1].output) == ("have both", "Sunny, 14:05.")
    assert case.input == "weather and time in Paris" and case.turns == ["thanks"]
    assert case.trace.output == "Bye." and case.trace.usage.requests == 3


@pytest.mark.parametrize(
    "record,field,message",
    [
        ({"id": "b1", "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "x", "input": {}}]}]}, "messages[0].content[0].name", "has no name"),
        ({"id": "b2", "messages": [{"role": "tool", "content": "x"}]}, "messages[0].role", "unknown message role"),
        ({"id": "b3", "messages": [{"role": "user", "content": 5}]}, "messages[0].content", "string or a list of blocks"),
    ],
)
def test_anthropic_bad_records(tmp_path: Path, record, field, message):
    (cid, err), = extract_lines(tmp_path, "anthropic-messages", [record])
    assert (cid, err.kind, err.line, err.field) == (record["id"], "invalid_input", 1, field)
    assert message in err.message


# ------------------------------------------------------------------------------------ multivon

SEED = {  # the documented EvalCase example, dumped to JSON
    "input": "Search for recent AI papers and write a summary",
    "agent_trace": [
        {"thought": "I need to search for recent papers first",
         "tool_calls": [{"name": "search", "arguments": {"query": "AI papers 2025"}, "result": ["Paper A", "Paper B", "Paper C"]}]},
        {"thought": "Now I'll summarize what I found", "tool_calls": [{"name": "summarize"}],
         "output": "Here are the key AI papers from 2025..."},
    ],
    "expected_tool_calls": ["search", "summarize"],
}


def test_multivon_documented_example(tmp_path: Path):
    case = _one(tmp_path, "multivon", SEED)
    assert case.id == "data.jsonl:1" and case.input == SEED["input"]
    assert [(e.name, e.arguments) for e in case.expected_tool_calls] == [("search", None), ("summarize", None)]
    assert _calls(case) == [(None, "search", {"query": "AI papers 2025"}, ["Paper A", "Paper B", "Paper C"], None), (None, "summarize", {}, None, None)]
    assert [s.thought for s in case.trace.steps] == ["I need to search for recent papers first", "Now I'll summarize what I found"]
    assert case.trace.output == "Here are the key AI papers from 2025..."
    assert ToolCorrectness().evaluate(case).value == 1.0


def test_multivon_failed_calls(tmp_path: Path):
    record = {"id": "m2", "input": "AAPL price", "agent_trace": [
        {"tool_calls": [{"name": "get_price", "arguments": {"ticker": "AAPL"}, "result": "Error: 404"}]},
        {"tool_calls": [{"name": "get_price", "arguments": {"ticker": "AAPL"}, "error": "timeout"}]},
        {"output": "I was unable to retrieve the price."}]}
    plain = _one(tmp_path, "multivon", record)
    assert [c.error for c in plain.trace.tool_calls()] == [None, "timeout"]
    flagged = _one(tmp_path, "multivon", record, error_prefixes=["Error:"])
    assert [c.error for c in flagged.trace.tool_calls()] == ["Error: 404", "timeout"]
    assert flagged.trace.tool_calls()[1].arguments == {"ticker": "AAPL"}


@pytest.mark.parametrize(
    "record,field",
    # (A plain EvalCase without `agent_trace` is read: `test_multivon_plain_cases`. One with another format's fields is not.)
    [({"id": "x", "input": "q", "trace": {"steps": []}}, "trace"), ({"id": "x", "input": "q", "traj": []}, "agent_trace"),
     ({"id": "x", "agent_trace": "steps"}, "agent_trace"),
     ({"id": "x", "input": "q", "expected_tool_call": ["a"], "agent_trace": []}, "expected_tool_call"),
     ({"id": "x", "agent_trace": [{"tool_calls": [{"name": "a", "argumnets": {}}]}]}, "agent_trace[0].tool_calls[0].argumnets"),
     ({"id": "x", "agent_trace": [{"outptu": "done"}]}, "agent_trace[0].outptu"), ({"id": "x", "agent_trace": [{"tool_calls": [{"arguments": {}}]}]}, "agent_trace[0].tool_calls[0].name"),
     ({"id": "x", "agent_trace": [], "expected_tool_calls": [3]}, "expected_tool_calls[0]")],
)
def test_multivon_bad_records(tmp_path: Path, record, field):
    (cid, err), = extract_lines(tmp_path, "multivon", [record])
    assert (cid, err.kind, err.field) == ("x", "invalid_input", field)
    if field.rsplit(".", 1)[-1] in ("trace", "expected_tool_call", "argumnets", "outptu"):  # a misspelt field: the one meant is named
        assert "did you mean" in err.message, err.message


def test_multivon_case_id_is_the_id_and_id_wins(tmp_path: Path):
    # multivon-eval's `save_jsonl` writes `case_id`; results were filed under `file:line`, so a reordered file broke resume.
    got = extract_lines(tmp_path, "multivon", [{"case_id": "c-1", "input": "q", "agent_trace": []},
                                               {"id": "own", "case_id": "c-2", "input": "q", "agent_trace": []}])
    assert [c.id for c in got] == ["c-1", "own"]


# ------------------------------------------------------------------------------------ json-path

JP_OPTIONS = {
    "id": "meta.run_id", "input": "question", "output": "answer.text", "tags": "meta.tags",
    "tool_calls": "steps.*.calls", "call": {"name": "tool", "arguments": "args", "result": "out", "error": "failed"},
    "expected_tool_calls": "gold",
}


def test_json_path_maps_nested_fields(tmp_path: Path):
    record = {"meta": {"run_id": 42, "tags": ["nightly"]}, "question": "Cancel #7", "answer": {"text": "Done."},
              "steps": [{"calls": [{"tool": "find", "args": {"id": 7}, "out": {"found": True}}]},
                        {"calls": []},
                        {"calls": [{"tool": "cancel", "args": '{"id": 7', "out": "Error: locked", "failed": True}]}],
              "gold": ["find", "cancel"]}
    case = _one(tmp_path, "json-path", record, **JP_OPTIONS)
    assert (case.id, case.input, case.tags, case.trace.output) == ("42", "Cancel #7", ["nightly"], "Done.")
    assert _calls(case) == [(None, "find", {"id": 7}, {"found": True}, None), (None, "cancel", '{"id": 7', "Error: locked", "Error: locked")]
    assert case.trace.tool_calls()[1].arguments_invalid
    assert [e.name for e in case.expected_tool_calls] == ["find", "cancel"]


def test_json_path_absent_keys_mean_no_value(tmp_path: Path):
    case = _one(tmp_path, "json-path", {"question": "hi"}, **JP_OPTIONS)
    assert case.id == "data.jsonl:1" and case.trace.tool_calls() == [] and case.expected_tool_calls is None


def test_json_path_index_paths(tmp_path: Path):
    case = _one(tmp_path, "json-path", {"messages": [{"content": "first"}, {"content": "last"}]}, input="messages.0.content", output="messages.-1.content")
    assert (case.input, case.trace.output) == ("first", "last")


@pytest.mark.parametrize(
    "record,message",
    [({"question": {"a": 1}, "steps": "nope"}, "option tool_calls ('steps.*.calls'): `*` needs a list at steps"),
     ({"meta": "flat"}, "option id ('meta.run_id'): meta.run_id: cannot take 'run_id' of a str"),
     ({"steps": [{"calls": [{"args": {}}]}]}, "tool call 0 has no name at 'tool'")],
)
def test_json_path_bad_records(tmp_path: Path, record, message):
    (cid, err), = extract_lines(tmp_path, "json-path", [record], JP_OPTIONS)
    assert err.kind == "invalid_input" and err.line == 1
    assert message in err.message
