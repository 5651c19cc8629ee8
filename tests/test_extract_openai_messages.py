"""Format `openai-messages`: the awkward cases, on small hand-made records."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extract_lines
from tracejudge.core.records import Case, ErrorInfo
from tracejudge.stages.score import ToolCalls


def _one(tmp_path: Path, record, **options) -> Case:
    got = extract_lines(tmp_path, "openai-messages", [record], options)
    assert len(got) == 1
    assert isinstance(got[0], Case), got[0]
    return got[0]


def _calls(case: Case) -> list[tuple]:
    return [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]


def _tc(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


U = {"role": "user", "content": "Cancel order 7 and 8"}

CASES = {
    "several calls in one message, results out of order, paired by id": (
        [U, {"role": "assistant", "content": None, "tool_calls": [_tc("a", "cancel", '{"order": 7}'), _tc("b", "cancel", '{"order": 8}')]},
         {"role": "tool", "tool_call_id": "b", "content": '{"ok": 8}'}, {"role": "tool", "tool_call_id": "a", "content": '{"ok": 7}'}],
        [("a", "cancel", {"order": 7}, {"ok": 7}, None), ("b", "cancel", {"order": 8}, {"ok": 8}, None)],
    ),
    "ids missing: paired by position": (
        [U, {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}},
                                                 {"type": "function", "function": {"name": "g", "arguments": "{}"}}]},
         {"role": "tool", "content": "first"}, {"role": "tool", "content": "second"}],
        [(None, "f", {}, "first", None), (None, "g", {}, "second", None)],
    ),
    "ids repeated: paired by position among duplicates": (
        [U, {"role": "assistant", "tool_calls": [_tc("call_0", "f", '{"n": 1}'), _tc("call_0", "f", '{"n": 2}')]},
         {"role": "tool", "tool_call_id": "call_0", "content": "one"}, {"role": "tool", "tool_call_id": "call_0", "content": "two"}],
        [("call_0", "f", {"n": 1}, "one", None), ("call_0", "f", {"n": 2}, "two", None)],
    ),
    "result id unknown: goes to the call whose id was dropped": (
        [U, {"role": "assistant", "tool_calls": [_tc("x", "f", "{}"), {"type": "function", "function": {"name": "g", "arguments": "{}"}}]},
         {"role": "tool", "tool_call_id": "zzz", "content": "for g"}, {"role": "tool", "tool_call_id": "x", "content": "for f"}],
        [("x", "f", {}, "for f", None), (None, "g", {}, "for g", None)],
    ),
    "error flag and is_error mark failed calls": (
        [U, {"role": "assistant", "tool_calls": [_tc("a", "f", "{}"), _tc("b", "g", "{}")]},
         {"role": "tool", "tool_call_id": "a", "content": "Error: no such order", "error": True},
         {"role": "tool", "tool_call_id": "b", "content": "boom", "is_error": True}],
        [("a", "f", {}, "Error: no such order", "Error: no such order"), ("b", "g", {}, "boom", "boom")],
    ),
    "legacy function_call and function message": (
        [U, {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": '{"q": "x"}'}},
         {"role": "function", "name": "lookup", "content": "[1, 2]"}],
        [(None, "lookup", {"q": "x"}, [1, 2], None)],
    ),
    "content as a list of parts": (
        [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
         {"role": "assistant", "content": [{"type": "text", "text": "checking"}], "tool_calls": [_tc("a", "f", "{}")]},
         {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "done"}]}],
        [("a", "f", {}, "done", None)],
    ),
    "responses api items: function_call / function_call_output by call_id": (
        [{"role": "user", "content": "weather?"},
         {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "need the tool"}]},
         {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
         {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "get_time", "arguments": '{"city": "Paris"}'},
         {"type": "function_call_output", "call_id": "call_2", "output": "14:05"},
         {"type": "function_call_output", "call_id": "call_1", "output": '{"temp_c": 21}'},
         {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny, 21C, 14:05"}]}],
        [("call_1", "get_weather", {"city": "Paris"}, {"temp_c": 21}, None), ("call_2", "get_time", {"city": "Paris"}, "14:05", None)],
    ),
    "responses api mcp_call carries its own output and error": (
        [{"role": "user", "content": "x"},
         {"type": "mcp_call", "id": "mcp_1", "name": "search", "arguments": '{"q": "x"}', "output": None, "error": "server unavailable", "server_label": "kb"}],
        [("mcp_1", "search", {"q": "x"}, None, "server unavailable")],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_awkward_message_lists(tmp_path: Path, name: str):
    messages, expected = CASES[name]
    case = _one(tmp_path, {"id": "c1", "messages": messages})
    assert _calls(case) == expected


def test_text_and_calls_in_one_message_are_one_step(tmp_path: Path):
    case = _one(tmp_path, {"messages": [
        U, {"role": "assistant", "content": "Let me cancel both.", "tool_calls": [_tc("a", "cancel", '{"order": 7}'), _tc("b", "cancel", '{"order": 8}')]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"}, {"role": "tool", "tool_call_id": "b", "content": "ok"},
        {"role": "assistant", "content": "Both are cancelled."}, {"role": "user", "content": "thanks"}, {"role": "assistant", "content": "Bye"}]})
    steps = case.trace.steps
    assert len(steps) == 3
    assert steps[0].thought == "Let me cancel both." and [c.name for c in steps[0].tool_calls] == ["cancel", "cancel"]
    assert steps[1].output == "Both are cancelled." and steps[1].tool_calls == []
    assert case.trace.output == "Bye"
    assert case.trace.usage.requests == 3
    assert case.input == "Cancel order 7 and 8" and case.turns == ["thanks"]
    assert case.id == "data.jsonl:1"  # no id in the record: file name and line


def test_responses_reasoning_and_text_join_the_calls_step(tmp_path: Path):
    messages, _ = CASES["responses api items: function_call / function_call_output by call_id"]
    case = _one(tmp_path, {"messages": messages})
    assert len(case.trace.steps) == 2
    assert case.trace.steps[0].thought == "need the tool"
    assert case.trace.output == "Sunny, 21C, 14:05"


def test_invalid_json_arguments_kept_raw_flagged_and_unequal(tmp_path: Path):
    case = _one(tmp_path, {"id": "bad-args", "expected_tool_calls": [{"name": "f", "arguments": {"a": 1}}],
                           "messages": [U, {"role": "assistant", "tool_calls": [_tc("a", "f", '{"a": 1')]}]})
    call = case.trace.tool_calls()[0]
    assert call.arguments == '{"a": 1' and call.arguments_invalid
    for mode in ("subset", "exact"):
        score = ToolCalls(arguments=mode).evaluate(case)
        assert score.value == 0.0, mode
    assert ToolCalls(arguments="ignore").evaluate(case).value == 1.0


def test_error_prefixes_option(tmp_path: Path):
    case = _one(tmp_path, {"messages": [U, {"role": "assistant", "tool_calls": [_tc("a", "f", "{}")]},
                                        {"role": "tool", "tool_call_id": "a", "content": "Error: user not found"}]},
                error_prefixes=["Error:"])
    assert case.trace.tool_calls()[0].error == "Error: user not found"


def test_messages_field_option_and_pass_through_fields(tmp_path: Path):
    case = _one(tmp_path, {"id": 17, "traj": [U], "tags": ["x"], "expected_tool_calls": [{"name": "cancel"}], "metadata": {"k": 1}},
                messages_field="traj")
    assert case.id == "17" and case.tags == ["x"] and case.metadata == {"k": 1}
    assert case.expected_tool_calls[0].name == "cancel" and case.expected_tool_calls[0].arguments is None


def test_unpaired_result_is_counted(tmp_path: Path):
    case = _one(tmp_path, {"messages": [U, {"role": "assistant", "tool_calls": [_tc("a", "f", "{}")]},
                                        {"role": "tool", "tool_call_id": "a", "content": "ok"},
                                        {"role": "tool", "tool_call_id": "ghost", "content": "??"}]})
    assert case.metadata == {"unpaired_results": 1}
    assert _calls(case) == [("a", "f", {}, "ok", None)]


BAD = {
    "no message list": ({"id": "r1", "msgs": []}, "r1", "messages", "required list of messages is missing"),
    # A list there but not a list, or under a misspelt key, was "required list of messages is missing" too.
    "a string for the list": ({"id": "r7", "messages": "hello"}, "r7", "messages", "messages: expected a list of messages, got a string"),
    # A null list was "missing; did you mean messages?", naming the very key the record has.
    "a null list": ({"id": "r9", "messages": None}, "r9", "messages", "messages: null where a list of messages is expected"),
    "the list under a misspelt key": ({"id": "r8", "mesages": [U]}, "r8", "messages",
                                      "messages: required list of messages is missing; did you mean mesages? (or set dataset.options.messages_field)"),
    "tool call without a name": ({"id": "r2", "messages": [U, {"role": "assistant", "tool_calls": [{"id": "a", "function": {"arguments": "{}"}}]}]},
                                 "r2", "messages[1].tool_calls[0].function.name", "no function name"),
    "unknown role": ({"id": "r3", "messages": [{"role": "robot", "content": "x"}]}, "r3", "messages[0].role", "unknown message role 'robot'"),
    "message not an object": ({"id": "r4", "messages": ["hello"]}, "r4", "messages[0]", "expected a message object"),
    "not JSON": ('{"id": "r5", "messages": [', "data.jsonl:2", None, "invalid JSON"),
    "not an object": ("[1, 2]", "data.jsonl:2", None, "expected a JSON object per line, got an array"),
    "null": ("null", "data.jsonl:2", None, "expected a JSON object per line, got null"),  # (it said "got NoneType")
    "a field of the wrong type": ({"id": "r6", "tags": "oops", "messages": [U]}, "r6", "tags", "valid list"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_records_are_invalid_input_naming_file_line_field(tmp_path: Path, name: str):
    record, cid, field, message = BAD[name]
    good = {"id": "ok", "messages": [U]}
    got = extract_lines(tmp_path, "openai-messages", [good, record, good | {"id": "ok2"}])
    assert isinstance(got[0], Case) and isinstance(got[2], Case), "one bad record does not stop the others"
    case_id, err = got[1]
    assert isinstance(err, ErrorInfo) and err.kind == "invalid_input"
    assert case_id == cid
    assert err.file.endswith("data.jsonl") and err.line == 2
    assert err.field == field
    assert message in err.message


@pytest.mark.parametrize("fmt,field,records,said", [
    ("tau-bench", "traj", [{"task_id": 1, "traj": None}, {"task_id": 2, "traj": "x"}, {"task_id": 3}],
     ["traj: null where a list of messages is expected", "traj: expected a list of messages, got a string", "traj: required message list is missing"]),
    ("bfcl", "question", [{"id": "simple_python_0", "question": None}, {"id": "simple_python_1", "question": {"a": 1}},
                          {"id": "simple_python_2", "question": []}, {"id": "simple_python_3"}],
     ["question: null where a list of turns is expected", "question: expected a list of turns, got an object",
      "question: the list of turns is empty", "question: required list of turns is missing"]),
])
def test_a_list_field_of_other_formats_that_is_null_or_mistyped_says_so(tmp_path: Path, fmt: str, field: str,
                                                                        records: list[dict], said: list[str]):
    # Each of these was "required … list is missing", for a field the record has.
    got = extract_lines(tmp_path, fmt, records)
    assert [(err.line, err.field, err.message) for _, err in got] == [(n, field, m) for n, m in enumerate(said, 1)]
