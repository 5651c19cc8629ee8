"""multivon-eval records: the `conversation` history, misspelt keys of a plain case, and `case_id`s that are not text.

- `EvalCase.conversation` (`[{"role", "content"}]`, the turns before `input`: multivon's conversation evaluators
  judge the latest response against it) was ignored: a judge saw "Will it ship by Friday?" without the order it asks about.
- A record without `agent_trace` holding a misspelt native key (`expected_pasages`) was told `agent_trace` is
  missing, not which key was meant.
- A `case_id` that is no text nor whole number (7.5, `true`, a list) fell back to `file:line` without a word.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import extract_lines
from tracejudge.core.records import Case
from tracejudge.stages.judge.conversation import conversation_sections

HISTORY = [{"role": "user", "content": "I ordered SKU-12 yesterday, order O-451."},
           {"role": "assistant", "content": "I see order O-451 with SKU-12. Standard shipping takes 3-5 business days."}]
ASK = "Will it ship by Friday?"
STEPS = [{"tool_calls": [{"name": "track", "arguments": {"order": "O-451"}, "result": "dispatched"}]},
         {"output": "Yes: O-451 was dispatched today."}]


def _one(tmp_path: Path, record: dict) -> Case:
    [case] = extract_lines(tmp_path, "multivon", [record])
    assert isinstance(case, Case), case
    return case


def _turns(case: Case) -> list[tuple[int, str]]:
    return [(m.step, m.content) for m in case.trace.user_messages]


def test_the_conversation_is_the_history_before_input_and_the_judge_sees_all_of_it(tmp_path: Path) -> None:
    case = _one(tmp_path, {"case_id": "c1", "input": ASK, "conversation": HISTORY, "agent_trace": STEPS, "expected_tool_calls": ["track"]})
    assert _turns(case) == [(0, HISTORY[0]["content"]), (1, ASK)]
    assert [(s.output, [c.name for c in s.tool_calls]) for s in case.trace.steps] == [
        (HISTORY[1]["content"], []), (None, ["track"]), ("Yes: O-451 was dispatched today.", [])]
    assert case.trace.output == "Yes: O-451 was dispatched today." and case.input == ASK
    shown = dict(conversation_sections(case, 0))["Conversation"]
    assert shown.index("User 1: I ordered SKU-12") < shown.index("3-5 business days") < shown.index(f"User 2: {ASK}") < shown.index("track(")


def test_input_said_as_the_history_last_turn_is_one_turn_and_a_plain_case_keeps_its_answer(tmp_path: Path) -> None:
    # multivon's own template writes the latest user turn both as the history's last message and as `input`.
    case = _one(tmp_path, {"input": ASK, "conversation": [*HISTORY, {"role": "user", "content": ASK}], "actual_output": "Yes."})
    assert _turns(case) == [(0, HISTORY[0]["content"]), (1, ASK)]
    assert [s.output for s in case.trace.steps] == [HISTORY[1]["content"]] and case.trace.output == "Yes."
    assert case.metadata["multivon_no_agent_trace"] is True  # still a plain case: ToolCallAccuracy skips it


@pytest.mark.parametrize(("conversation", "extra", "field", "said"), [
    ([{"role": "system", "content": "Be brief."}], {}, "conversation[0].role", "'system' is no turn the trace can hold"),
    ([HISTORY[0], {"role": "tool", "content": "{}"}], {}, "conversation[1].role", "'tool' is no turn"),
    ([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], {}, "conversation[0].content", "expected the turn's text, got an array"),
    ([{"role": "user", "content": "hi", "name": "ann"}], {}, "conversation[0].name", "holds role and content only"),
    ([{"role": "user", "contnet": "hi"}], {}, "conversation[0].contnet", "did you mean content?"),
    ({"role": "user", "content": "hi"}, {}, "conversation", "expected a list of messages"),
    (HISTORY, {"user_messages": [{"step": 0, "content": ASK}]}, "user_messages", "conversation and user_messages both"),
])
def test_a_conversation_the_trace_cannot_hold_is_refused_naming_file_line_and_field(tmp_path: Path, conversation, extra, field, said) -> None:
    ok = {"id": "fine", "input": ASK, "agent_trace": STEPS}
    got = extract_lines(tmp_path, "multivon", [ok, {"id": "bad", "input": ASK, "conversation": conversation, "agent_trace": STEPS, **extra}])
    assert isinstance(got[0], Case)
    cid, err = got[1]
    assert (cid, err.kind, Path(err.file).name, err.line, err.field) == ("bad", "invalid_input", "data.jsonl", 2, field)
    assert said in err.message and not err.message.startswith(field), err.message  # (the report prints the field before it)


@pytest.mark.parametrize(("record", "key", "meant"), [
    ({"id": "x", "input": "q", "expected_pasages": ["p"]}, "expected_pasages", "expected_passages"),
    ({"id": "x", "input": "q", "metric": [{"type": "MaxToolCalls"}]}, "metric", "metrics"),
    ({"id": "x", "input": "q", "traj": [], "tag": ["t"]}, "tag", "tags"),  # the misspelt key, not the first unknown one
])
def test_a_misspelt_key_without_agent_trace_is_named_with_the_field_meant(tmp_path: Path, record, key, meant) -> None:
    (cid, err), = extract_lines(tmp_path, "multivon", [record])
    assert (cid, err.kind, err.field) == ("x", "invalid_input", key)
    assert f"did you mean {meant}?" in err.message and "agent_trace" not in err.message, err.message


def test_the_field_meant_is_read_without_agent_trace_as_beside_one(tmp_path: Path) -> None:
    case = _one(tmp_path, {"id": "x", "input": "q", "expected_passages": ["p"], "actual_output": "a"})
    assert case.expected_passages == ["p"] and case.trace.output == "a"


def test_a_whole_number_case_id_is_the_id_as_text(tmp_path: Path) -> None:
    got = extract_lines(tmp_path, "multivon", [{"case_id": 7, "input": "q", "agent_trace": []}, {"case_id": 8, "input": "q"},
                                               {"id": None, "case_id": "c-9", "input": "q", "agent_trace": []}])
    assert [c.id for c in got] == ["7", "8", "c-9"]


@pytest.mark.parametrize(("case_id", "said"), [
    (7.5, "got 7.5"), (7.0, "got 7.0"), (True, "got a boolean"), ({"n": 7}, "got an object"), (["7"], "got an array"),
    ("", "empty"), ("  ", "only whitespace"),
])
def test_a_case_id_that_is_no_text_nor_whole_number_is_refused_naming_case_id(tmp_path: Path, case_id, said) -> None:
    (cid, err), = extract_lines(tmp_path, "multivon", [{"case_id": case_id, "input": "q", "agent_trace": []}])
    assert (Path(cid).name, err.kind, err.line, err.field) == ("data.jsonl:1", "invalid_input", 1, "case_id")
    # The report prints the field before the message (`data.jsonl:1: case_id: expected …`): the message does not repeat it.
    assert not err.message.startswith("case_id") and said in err.message, err.message
