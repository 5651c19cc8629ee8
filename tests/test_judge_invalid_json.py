"""A verdict that is JavaScript-style JSON, over real HTTP on 127.0.0.1: a trailing comma or a `// comment` ended in
"missing answers for TC1, TC2, TC3, TC4" of a reply answering all four (only the objects nested in it were read). It
is read leniently now, as deepeval reads a trailing comma and promptfoo a comment, and the reason says so; JSON that
cannot be read so (an unescaped quote) says it is invalid and where, in json's words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, completion, verdict
from test_judge_servers import cases, config, results, run
from tracejudge.stages.judge.lenient_json import invalid_json, relaxed

ONE = [{"type": "TaskCompletion"}]


def _spoil(how: str, text: str) -> str:
    if how == "trailing comma":
        return text[:-1] + ",\n}"
    if how == "comment":
        return "{\n  // my answers\n" + text[1:]
    return text.replace('"reason": "fine"', '"reason": "the "refund" worked"', 1)


@pytest.mark.parametrize("how", ["trailing comma", "comment", "unescaped quote"])
def test_invalid_json_is_read_leniently_or_named_with_its_line_and_column(tmp_path: Path, how: str) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, completion(_spoil(how, json.dumps(verdict(body))))

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=ONE))
    scores = [r["scores"]["TaskCompletion"] for r in results(tmp_path)]
    if how == "unescaped quote":
        assert summary["status"] == {"judge_error": 2}, summary["status"]
        assert all("the reply is not valid JSON (Expecting ',' delimiter: line 1 column" in s["reason"] for s in scores), scores
        assert "missing answers" not in scores[0]["reason"].partition("so its verdict could not be read")[0]
        return
    assert summary["status"] == {"ok": 2}, summary["status"]
    line = 2  # (the comment opens the second line; the closing brace after the comma is alone on it)
    assert all(s["value"] is not None and s["details"]["answers"]["q1"]["answer"] == "yes" for s in scores), scores
    assert all(a["read_leniently"].startswith("the verdict was read leniently") for s in scores for a in s["details"]["answers"].values())
    assert all(f"the verdict was read leniently: the reply is not valid JSON (Expecting property name enclosed in double quotes: "
               f"line {line} column" in s["reason"] and f"a {how} dropped" in s["reason"] for s in scores), scores


def test_what_is_relaxed_stands_outside_strings() -> None:
    text = '{"q1": {"answer": "yes", "reason": "a, } and // or /* kept */"}, /* x */ "q2": [1, 2,],}'
    assert relaxed(text) == ('{"q1": {"answer": "yes", "reason": "a, } and // or /* kept */"},  "q2": [1, 2]}', ["a comment", "a trailing comma"])
    assert relaxed('{"a": 1, // note\n}') == ('{"a": 1 \n}', ["a comment", "a trailing comma"])
    assert relaxed('{"a": "\\" // not a comment"}') is None
    assert invalid_json('Here is {my} verdict: {"a": 1}') == ""  # a `{` in prose is no invalid object
    assert invalid_json('{"a": 1,}').startswith("Expecting property name enclosed in double quotes: line 1 column 9")


def _contradicted(body: dict[str, Any]) -> str:
    # The schema's verdict, then a second one that says otherwise and is valid JSON only when read leniently.
    first = verdict(body)
    if "score" in first:
        return json.dumps({"score": 4, "reason": "fine"}) + ' {"score": 2, "reason": "bad",}'
    second = {q: {"answer": "no", "reason": "bad"} for q in first} if "answers" not in first else \
        {"answers": [{**a, "answer": "no"} for a in first["answers"]]}
    return json.dumps(first) + " " + json.dumps(second)[:-1] + ",}"


@pytest.mark.parametrize("metric", [{"type": "Rubric", "name": "grade", "criteria": "How helpful?", "scale": [1, 5]},
                                    {"type": "TaskCompletion"}])
def test_a_second_verdict_read_only_leniently_still_contradicts_the_first(tmp_path: Path, metric: dict[str, Any]) -> None:
    # It scored 4 (TC1 yes) with no note: the strict reading skipped the object with the trailing comma, while the same
    # object without the comma was refused as answering twice.
    with Loopback(lambda headers, body: (200, completion(_contradicted(body)))) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=[metric]))
    assert summary["status"] == {"judge_error": 2}, [r["scores"] for r in results(tmp_path)]
    said = "the grade is given twice, 4 and 2" if metric["type"] == "Rubric" else "is answered both yes and no"
    reasons = [s["reason"] for r in results(tmp_path) for s in r["scores"].values()]
    assert reasons and all(said in x and "read leniently" in x for x in reasons), reasons
