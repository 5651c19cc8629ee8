"""Format `otel`'s conversation keys that are not text, read as the formats that group by a session read theirs.

A key became a case id through Python's `str()`: `boolValue` true became `True` (and `false` one conversation with the
text key `"False"`), an `arrayValue` `"['a']"`, a `doubleValue` 42.0 `"42.0"`. Now a whole number is its text, and any
other value that is not text refuses its trace (an `invalid_input` naming the attribute), the other traces reading on.
Also: an `invalid_input` of a bad key or `case_id` printed its field twice (`…:2: case_id: case_id: expected …`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_extract_otel_cases import OP, chat, export, run, span
from tracejudge.core.records import Case
import _forkserver

KEY = "gen_ai.conversation.id"


def turn(n: int, value: dict[str, Any] | None, attr: str = KEY) -> dict[str, Any]:
    """One trace `t<n>` of one user turn: an agent span holding the OTLP value `value` of `attr`, and its model request."""
    agent = span(f"a{n}", None, 10 * n, trace=f"t{n}", **{OP: "invoke_agent"})
    if value is not None:
        agent["attributes"].append({"key": attr, "value": value})
    return export([agent, chat(f"c{n}", f"a{n}", 10 * n + 1, text=f"answer {n}", user=f"ask {n}", trace=f"t{n}")])


def by_id(got: list[Any]) -> tuple[dict[str, Case], list[tuple[str, Any]]]:
    return {c.id: c for c in got if isinstance(c, Case)}, [e for e in got if not isinstance(e, Case)]


def users(case: Case) -> list[str]:
    return [m.content for m in case.trace.user_messages]


@pytest.mark.parametrize(("value", "said"), [
    ({"boolValue": True}, "got a boolean"),
    ({"doubleValue": 42.0}, "got 42.0"),
    ({"doubleValue": "42.5"}, "got 42.5"),  # (OTLP/JSON may write a double as a string)
    ({"arrayValue": {"values": [{"stringValue": "a"}]}}, "got an array"),
    ({"kvlistValue": {"values": [{"key": "id", "value": {"stringValue": "a"}}]}}, "got an object"),
])
def test_a_key_that_is_no_text_nor_whole_number_refuses_its_trace_naming_the_attribute(tmp_path: Path, value, said) -> None:
    got = run(tmp_path, [turn(1, {"stringValue": "thread-1"}), turn(2, value), turn(3, {"stringValue": "thread-1"})],
              name="export.jsonl")
    cases, errors = by_id(got)
    assert list(cases) == ["thread-1"] and users(cases["thread-1"]) == ["ask 1", "ask 3"]  # the others read on
    assert cases["thread-1"].metadata["otel"]["traces"] == ["t1", "t3"]
    [(cid, err)] = errors
    assert (cid, err.kind, Path(err.file).name, err.line, err.field) == ("t2", "invalid_input", "export.jsonl", 2, KEY)
    assert err.message.startswith("span a2: expected the id of the trace's conversation (text or a whole number), " + said), err.message
    assert "group_by: trace" in err.message


def test_a_false_key_is_not_the_text_key_False(tmp_path: Path) -> None:
    # `str(False)` made it one conversation with the text "False": two threads judged as one.
    got = run(tmp_path, [turn(1, {"stringValue": "False"}), turn(2, {"boolValue": False})], name="export.jsonl")
    cases, errors = by_id(got)
    assert list(cases) == ["False"] and users(cases["False"]) == ["ask 1"]
    assert [(cid, err.field, err.line) for cid, err in errors] == [("t2", KEY, 2)]


def test_a_whole_number_key_is_its_text_and_a_blank_one_no_key(tmp_path: Path) -> None:
    got = run(tmp_path, [turn(1, {"intValue": "42"}), turn(2, {"stringValue": "42"}), turn(3, {"stringValue": " "})],
              name="export.jsonl")
    cases, errors = by_id(got)
    assert errors == [] and list(cases) == ["42", "t3"] and users(cases["42"]) == ["ask 1", "ask 2"]


def test_the_refusal_names_the_key_the_trace_is_grouped_by(tmp_path: Path) -> None:
    # `session.id` is tried when no span holds `gen_ai.conversation.id`: its bad value is refused under its own name.
    got = run(tmp_path, [turn(1, {"boolValue": True}, "session.id"), turn(2, {"stringValue": "s-2"}, "session.id")],
              name="export.jsonl")
    cases, errors = by_id(got)
    assert list(cases) == ["s-2"] and [(cid, err.field) for cid, err in errors] == [("t1", "session.id")]
    # a list of keys of one's own is read by the same rule
    got = run(tmp_path, [turn(1, {"boolValue": True}, "app.thread")], name="own.jsonl", group_by=["app.thread"])
    assert [(cid, err.field) for cid, err in by_id(got)[1]] == [("t1", "app.thread")]


def test_the_topmost_key_decides_so_a_bad_one_below_a_text_key_is_not_read(tmp_path: Path) -> None:
    # A span belongs to its topmost ancestor's key: a value below it names no conversation, bad or not.
    doc = turn(1, {"stringValue": "thread-1"})
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"].append({"key": KEY, "value": {"boolValue": True}})
    got = run(tmp_path, [doc], name="export.jsonl")
    assert [c.id for c in got if isinstance(c, Case)] == ["thread-1"] and by_id(got)[1] == []


def test_group_by_trace_reads_the_trace_without_its_key(tmp_path: Path) -> None:
    # (what the refusal advises)
    got = run(tmp_path, [turn(1, {"boolValue": True})], name="export.jsonl", group_by="trace")
    assert [c.id for c in got if isinstance(c, Case)] == ["t1"]


def test_extract_names_the_field_of_a_refused_key_or_case_id_once(tmp_path: Path) -> None:
    # `invalid input …mv.jsonl:2: case_id: case_id: expected …`: the report prints the field, the message said it again.
    ok = {"case_id": "c-1", "input": "q", "agent_trace": []}
    (tmp_path / "mv.jsonl").write_text(json.dumps(ok) + "\n" + json.dumps({**ok, "case_id": True}) + "\n")
    agents = {"trace": {"object": "trace", "id": "trace_a", "workflow_name": "Chat", "group_id": None}, "spans": []}
    (tmp_path / "agents_bool.jsonl").write_text(json.dumps(agents) + "\n" + json.dumps(
        {**agents, "trace": {**agents["trace"], "id": "trace_b", "group_id": True}}) + "\n")
    (tmp_path / "otel.jsonl").write_text(json.dumps(turn(1, {"stringValue": "x"})) + "\n" + json.dumps(turn(2, {"boolValue": True})) + "\n")
    said = {}
    for name, fmt in (("mv.jsonl", "multivon"), ("agents_bool.jsonl", "openai-agents"), ("otel.jsonl", "otel")):
        (tmp_path / f"{fmt}.yaml").write_text(f"dataset: {{path: {name}, format: {fmt}}}\nmetrics: [{{type: MaxToolCalls, max_calls: 5}}]\n")
        out = _forkserver.run([sys.executable, "-m", "tracejudge", "extract", f"{fmt}.yaml", "-o", f"{fmt}.out.jsonl"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
        said[fmt] = [x for x in out.stderr.splitlines() if x.startswith("invalid input") and ":2: " in x]
    assert said["multivon"] == [f"invalid input {tmp_path / 'mv.jsonl'}:2: case_id: expected the case's id as text (or a whole "
                                "number), got a boolean"], said
    [line] = said["openai-agents"]
    assert line.startswith(f"invalid input {tmp_path / 'agents_bool.jsonl'}:2: trace.group_id (trace_b): expected the id "), line
    [line] = said["otel"]
    assert line.startswith(f"invalid input {tmp_path / 'otel.jsonl'}:2: {KEY} (t2): span a2: expected the id "), line
