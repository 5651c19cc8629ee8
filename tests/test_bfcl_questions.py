"""BFCL questions whose first turn is more than one user message: a system prompt, an earlier exchange."""

from __future__ import annotations

import json
from pathlib import Path

from test_bfcl_java_js import _cases

_FN = [{"name": "book", "description": "Books a trip.", "parameters": {"type": "dict", "properties": {"to": {"type": "string"}}}}]


def _question(qid: str, turn: list[dict[str, str]]) -> dict:
    return {"id": qid, "question": [turn], "function": _FN}


QUESTIONS = [
    _question("live_irrelevance_1-0-0", [{"role": "system", "content": "Answer in French."},
                                         {"role": "user", "content": "Book me a trip to Oslo"}]),
    _question("live_irrelevance_2-0-1", [{"role": "user", "content": "Book me a trip"},
                                         {"role": "assistant", "content": "Where to?"},
                                         {"role": "user", "content": "Lima, with your tools"}]),
    _question("live_irrelevance_3-0-2", [{"role": "user", "content": "Hello"}]),
]  # fmt: skip


def test_a_system_prompt_or_an_earlier_exchange_is_kept_and_the_last_user_message_is_the_input(tmp_path):
    # Upstream sends the whole turn: the system prompt steers the answer, and after an exchange the question is the last
    # user message, not the first (the first one here was already answered with "Where to?").
    cases = _cases(tmp_path, "BFCL_v4_live_irrelevance.json", [(q, {"id": q["id"], "ground_truth": []}) for q in QUESTIONS])
    system, exchange, plain = (cases[q["id"]] for q in QUESTIONS)
    assert system.input == "Book me a trip to Oslo" and system.context["messages"] == QUESTIONS[0]["question"][0]
    assert exchange.input == "Lima, with your tools" and exchange.context["messages"] == QUESTIONS[1]["question"][0]
    assert plain.input == "Hello" and "messages" not in plain.context  # one user message: the input says it all


def test_the_example_agent_asks_the_whole_turn(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "examples" / "agents"))
    from bfcl_agent import respond

    sent: list[dict] = []
    monkeypatch.setattr("bfcl_agent._post", lambda url, body, key, timeout: sent.append(body) or {"choices": [{"message": {}}]})
    turn = QUESTIONS[1]["question"][0]
    respond({"input": turn[-1]["content"], "case": {"id": "live_irrelevance_2-0-1", "context": {"functions": _FN, "messages": turn}}})
    respond({"input": "Hello", "case": {"id": "live_irrelevance_3-0-2", "context": {"functions": _FN}}})
    assert [b["messages"] for b in sent] == [turn, [{"role": "user", "content": "Hello"}]]


def test_a_function_doc_that_is_no_doc_is_the_questions_error_naming_it(tmp_path):
    # Read as it was, it reached the target, whose crash (`string indices must be integers`) named no field of the file.
    from hand_edits import filed

    good = {"id": "live_relevance_0-0-0", "question": [[{"role": "user", "content": "Paint me a portrait"}]], "function": _FN}
    bad = [("garbage", "function", "expected a function doc (an object with a `name`), got a string"),
           ([_FN[0], 5], "function[1]", "expected a function doc (an object with a `name`), got a number"),
           ([{**_FN[0], "name": None}], "function[0].name", "expected the function's name, got null"),
           ({**_FN[0], "parameters": 5}, "function.parameters", "expected an object (a JSON schema), got a number")]
    lines = [good] + [{**good, "id": f"live_relevance_{i}-{i}-0", "function": fn} for i, (fn, _, _) in enumerate(bad, 1)]
    got = filed(tmp_path / "BFCL_v4_live_relevance.json", "bfcl", "".join(json.dumps(q) + "\n" for q in lines))
    assert got == [("live_relevance_0-0-0", None)] + [(f"live_relevance_{i}-{i}-0", f"{field}: {why}")
                                                      for i, (_, field, why) in enumerate(bad, 1)]


def test_a_numeric_id_takes_its_category_from_the_file_name_as_upstream_or_is_refused(tmp_path):
    # The category was read from the id's text, so `7` was no category's: a live_relevance question lost its
    # `bfcl_relevance` check and an irrelevance one its "no call" without a word. Upstream's eval runner reads the
    # category from the file name (`extract_test_category`), which is what a numeric id is now read by.
    from test_bfcl_java_js import _Dataset
    from tracejudge.core.registry import format_for
    from tracejudge.stages.extract import extract_record

    def read(name: str, qid: object = 7) -> list:
        (tmp_path / name).write_text(json.dumps({"id": qid, "question": [[{"role": "user", "content": "Paint me"}]], "function": _FN}) + "\n")
        fmt, ds = format_for("bfcl"), _Dataset(tmp_path / name)
        ctx = fmt.prepare(ds)
        return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]

    (relevance,) = read("BFCL_v4_live_relevance.json")
    assert relevance.id == "7" and relevance.tags == ["bfcl", "live_relevance"] and relevance.expected_tool_calls is None
    assert [m["name"] for m in relevance.metrics] == ["bfcl_relevance"]
    (irrelevance,) = read("BFCL_v4_irrelevance.json")
    assert irrelevance.tags == ["bfcl", "irrelevance"] and irrelevance.expected_tool_calls == [] and irrelevance.metrics == []
    # A file named otherwise says no category: the numeric id is the record's error, naming file, line and field.
    ((cid, err),) = read("questions.jsonl")
    assert (cid, err.kind, err.file, err.line, err.field) == ("7", "invalid_input", str(tmp_path / "questions.jsonl"), 1, "id")
    assert "got a number, 7" in err.message and "BFCL_v4_<category>.json" in err.message
    # So is a text id naming no category (it was its own category, `q1`); one that names one still decides.
    ((_, err),) = read("questions.jsonl", "q1")
    assert (err.field, "got a string, \"q1\"" in err.message) == ("id", True)
    (named,) = read("questions.jsonl", "live_relevance_3-3-0")
    assert named.tags == ["bfcl", "live_relevance"] and [m["name"] for m in named.metrics] == ["bfcl_relevance"]


def test_a_question_id_that_is_neither_text_nor_an_integer_is_refused_naming_id():
    # `str()` made `null` the case `None` and `true` the case `True`, which matched an answer filed under that text.
    import pytest
    from tracejudge.stages.extract.bfcl import adapt
    from tracejudge.stages.extract.errors import AdapterError

    for qid, kind in ((None, "null"), (True, "true/false"), (1.5, "float"), ({"a": 1}, "dict")):
        with pytest.raises(AdapterError, match=f"id: a question's id is text or an integer, got {kind}"):
            adapt({**_question("live_relevance_0-0-0", [{"role": "user", "content": "Hi"}]), "id": qid}, {"category": "live_relevance"})


def test_an_answer_id_that_is_neither_text_nor_an_integer_is_that_lines_error_naming_id(tmp_path):
    # `str(true)` filed the answer under "True", which the question with that id then took as its own.
    from tracejudge.core.records import Case
    from tracejudge.core.registry import format_for
    from tracejudge.stages.extract.bfcl_answers import read_answers
    from tracejudge.stages.extract import extract_record

    name = "BFCL_v4_simple_python.json"
    (tmp_path / "possible_answer").mkdir()
    answers = [{"id": True, "ground_truth": [{"book": {"to": ["Oslo"]}}]}, {"id": None, "ground_truth": []},
               {"ground_truth": [], "id": 1.5}, {"id": "simple_python_1", "ground_truth": [{"book": {"to": ["Lima"]}}]}]
    (tmp_path / "possible_answer" / name).write_text("".join(json.dumps(a) + "\n" for a in answers))
    read = read_answers(tmp_path / "possible_answer" / name)
    where = tmp_path / "possible_answer" / name
    assert (list(read.answers), read.bad) == (["simple_python_1"], {})
    assert read.unplaced == [f"{where}:1: id: an answer's id is text or an integer, got true/false",
                             f"{where}:2: id: an answer's id is text or an integer, got null",
                             f"{where}:3: id: an answer's id is text or an integer, got float"]
    questions = [_question("True", [{"role": "user", "content": "To Oslo"}]), _question("simple_python_1", [{"role": "user", "content": "To Lima"}])]
    (tmp_path / name).write_text("".join(json.dumps(q) + "\n" for q in questions))

    class Dataset:
        path, tasks, limit, options = tmp_path / name, None, None, {}

    fmt = format_for("bfcl")
    ctx = fmt.prepare(Dataset())
    lost, found = (extract_record(raw, fmt, ctx) for raw in fmt.read(Dataset()))
    assert isinstance(found, Case) and found.expected_tool_calls[0].arguments == {"to": {"$loose": "Lima"}}
    assert (lost[0], lost[1].field) == ("True", "ground_truth")
    assert lost[1].message == (f"ground_truth: question 'True' is not in the answer file; 3 answer line(s) have no readable id, "
                               f"the first {where}:1: id: an answer's id is text or an integer, got true/false")
