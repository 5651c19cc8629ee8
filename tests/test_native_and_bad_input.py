"""Bad input never stops a run: each malformed record is one `invalid_input` result naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from tracejudge.core.config import validate_config
from tracejudge.engine.runner import run
import _forkserver


def good(i: int) -> dict:
    return {
        "id": f"c{i}",
        "expected_tool_calls": [{"name": "get_order", "arguments": {"order_id": i}}],
        "trace": {"steps": [{"tool_calls": [{"name": "get_order", "arguments": json.dumps({"order_id": i})}]}], "output": "done"},
    }


def run_cases(tmp_path: Path, lines: list[bytes], metrics=None, run_section=None) -> tuple[dict, list[dict]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "cases.jsonl"
    data.write_bytes(b"".join(line + b"\n" for line in lines))
    config = validate_config(
        {
            "dataset": {"path": str(data), "format": "native"},
            "metrics": metrics or [{"type": "ToolCalls", "arguments": "exact"}],
            "run": {"dir": str(tmp_path / "run"), **(run_section or {})},
        }
    )
    outcome = anyio.run(run, config)
    results = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    return outcome.summary, results


def test_malformed_lines_among_good_ones(tmp_path):
    lines = [
        json.dumps(good(0)).encode(),
        b'{"id": "broken", "trace": {"steps": [}',  # invalid JSON
        json.dumps({"id": "no-name", "trace": {"steps": [{"tool_calls": [{"arguments": {}}]}]}}).encode(),  # missing field
        b"\xff\xfe not utf-8",
        b"[1, 2, 3]",  # not an object
        json.dumps(good(1)).encode(),
        json.dumps({**good(2), "expected_tool_call": []}).encode(),  # typo'd key
    ]
    summary, results = run_cases(tmp_path, lines)
    by_id = {r["case_id"]: r for r in results}
    assert len(results) == 7
    assert summary["status"] == {"invalid_input": 5, "ok": 2}
    assert [by_id[c]["scores"]["ToolCalls"]["value"] for c in ("c0", "c1")] == [1.0, 1.0]

    data = str(tmp_path / "cases.jsonl")
    broken = by_id[f"{data}:2"]
    assert broken["status"] == "invalid_input"
    assert broken["error"]["file"] == data and broken["error"]["line"] == 2 and "invalid JSON" in broken["error"]["message"]
    missing = by_id["no-name"]  # the user's id is kept even though the record is invalid
    assert missing["error"]["line"] == 3 and missing["error"]["field"] == "trace.steps[0].tool_calls[0].name"
    assert "not valid UTF-8" in by_id[f"{data}:4"]["error"]["message"]
    assert by_id[f"{data}:5"]["error"]["message"] == "expected a JSON object per line, got an array"  # (not Python's "list")
    assert by_id["c2"]["error"]["field"] == "expected_tool_call" and "Extra inputs" in by_id["c2"]["error"]["message"]
    m = summary["metrics"]["ToolCalls"]
    assert (m["scored"], m["excluded"], m["results"]) == (2, {"invalid_input": 5}, 7)


def test_a_case_without_trace_names_its_file_and_line(tmp_path):
    # Found after extraction (when scoring is decided), unlike the errors above, yet it points at the record all the same.
    lines = [json.dumps(good(0)).encode(), json.dumps({"id": "bare", "input": "Book a flight"}).encode()]
    for executor in ("inprocess", "processes"):
        summary, results = run_cases(tmp_path / executor, lines, run_section={"executor": executor, "processes": 2})
        bare = {r["case_id"]: r for r in results}["bare"]
        assert bare["status"] == "invalid_input" and "no trace" in bare["error"]["message"]
        assert (bare["error"]["file"], bare["error"]["line"], bare["error"]["field"]) == (str(tmp_path / executor / "cases.jsonl"), 2, "trace")


def test_undecodable_arguments_are_kept_raw_flagged_and_never_match(tmp_path):
    case = good(0)
    case["trace"]["steps"][0]["tool_calls"][0]["arguments"] = '{"order_id": 0'  # truncated JSON
    summary, (result,) = run_cases(tmp_path, [json.dumps(case).encode()])
    score = result["scores"]["ToolCalls"]
    assert result["status"] == "ok" and score["value"] == 0.0
    assert "arguments are not a JSON object" in score["reason"]

    from tracejudge.core.records import ToolCall

    call = ToolCall(name="x", arguments='{"order_id": 0')
    assert call.arguments_invalid and call.arguments == '{"order_id": 0'
    assert ToolCall(name="x", arguments='{"n": 1.0}').arguments == {"n": 1.0}


def test_arguments_that_are_a_json_list_show_as_that_list_in_every_reason(tmp_path):
    metrics = [{"type": "ToolCalls", "arguments": "exact"},
               {"type": "ArgumentCorrectness", "tool_name": "get_order", "expected_arguments": {"order_id": 0}},
               {"type": "trajectory:tool-args-match", "value": {"name": "get_order", "args": {"order_id": 0}}}]
    lines = []
    for cid, args in (("list", ["#W1", 2]), ("text", '["#W1", 2]'), ("object", {"order_id": 5})):
        case = good(0)
        case["id"] = cid
        case["trace"]["steps"][0]["tool_calls"][0]["arguments"] = args
        lines.append(json.dumps(case).encode())
    _, results = run_cases(tmp_path, lines, metrics=metrics)
    reasons = {r["case_id"]: {k: s["reason"] for k, s in r["scores"].items()} for r in results}
    for cid in ("list", "text"):  # a list value and the JSON text of one read alike, and show as the JSON list
        got = reasons[cid]
        assert "unexpected: #0 (step 0) get_order([\"#W1\",2])" in got["ToolCalls"]
        assert "arguments are not a JSON object: [\"#W1\",2]" in got["ToolCalls"] and "'" not in got["ToolCalls"].split("; in order")[0]
        assert got["ArgumentCorrectness"] == 'call #0 (step 0) get_order(["#W1",2]): arguments are not a JSON object'
        assert got["trajectory:tool-args-match"].endswith('Observed args: ["#W1",2]')
    # An object's arguments show as they did.
    assert "unexpected: #0 (step 0) get_order({\"order_id\":5})" in reasons["object"]["ToolCalls"]
    assert reasons["object"]["ArgumentCorrectness"].startswith('call #0 (step 0) get_order({"order_id":5}): argument mismatch')


def test_duplicate_ids_are_reported_not_overwritten(tmp_path):
    summary, results = run_cases(tmp_path, [json.dumps(good(0)).encode(), json.dumps(good(0)).encode()])
    assert [r["status"] for r in results] == ["ok", "invalid_input"]
    assert "duplicate case id 'c0'" in results[1]["error"]["message"] and results[1]["case_id"] == f"c0@{tmp_path / 'cases.jsonl'}:2"


def test_case_without_trace_or_expectation(tmp_path):
    no_trace = {"id": "t"}
    no_expect = {"id": "e", "trace": {"steps": []}}
    summary, results = run_cases(tmp_path, [json.dumps(no_trace).encode(), json.dumps(no_expect).encode()])
    by_id = {r["case_id"]: r for r in results}
    assert by_id["t"]["status"] == "invalid_input" and by_id["t"]["error"]["field"] == "trace"
    assert by_id["e"]["scores"]["ToolCalls"] == {
        "value": None, "passed": None, "reason": "not computed: the case has no expected_tool_calls", "details": None, "judge": None,
    }
    assert summary["metrics"]["ToolCalls"]["not_computed"] == 1


def test_bad_case_level_metric_costs_that_metric_only(tmp_path):
    bad = {**good(0), "metrics": [{"type": "ToolCalls", "arguments": "nope"}, {"type": "TrajectoryMatch", "order": "exact"}]}
    ok = {**good(1), "metrics": [{"type": "TrajectoryMatch", "order": "exact"}]}
    summary, results = run_cases(tmp_path, [json.dumps(bad).encode(), json.dumps(ok).encode()])
    assert results[0]["status"] == "ok" and results[0]["error"] is None
    assert results[0]["scores"]["ToolCalls"]["value"] is None
    assert results[0]["scores"]["ToolCalls"]["reason"].startswith("not computed: case metric spec metrics.0.arguments does not validate")
    assert results[0]["scores"]["TrajectoryMatch"]["value"] is not None
    assert set(results[1]["scores"]) == {"ToolCalls", "TrajectoryMatch"}


def test_text_json_cannot_carry_is_one_invalid_case_and_resume_skips_it(tmp_path):
    # json.loads accepts a lone surrogate; writing it back out cannot. The result must say
    # so, and a resume must not try (and fail) again.
    import json as _json

    def record(cid: str, tag: str) -> dict:
        return {"id": cid, "tags": [tag], "messages": [{"role": "user", "content": "hi"}], "expected_tool_calls": []}

    data = tmp_path / "chats.jsonl"
    data.write_text("\n".join(_json.dumps(r) for r in [record("a", "fine"), record("b", "bad\ud83d"), record("c", "fine")]) + "\n")
    config = validate_config({"dataset": {"path": str(data), "format": "openai-messages"},
                              "metrics": [{"type": "ToolCalls"}], "run": {"dir": str(tmp_path / "run")}})
    first = anyio.run(run, config)
    rows = [_json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [(r["case_id"], r["status"]) for r in rows] == [("a", "ok"), ("b", "invalid_input"), ("c", "ok")]
    assert "cannot encode" in rows[1]["error"]["message"]
    # Named as every bad record is: its file, its line and the field (before: none of the three).
    assert (rows[1]["error"]["file"], rows[1]["error"]["line"], rows[1]["error"]["field"]) == (str(data), 2, "tags.0")
    assert rows[1]["error"]["message"].startswith("tags.0 holds text that UTF-8 cannot encode")
    again = anyio.run(run, config)
    assert (first.new_results, again.new_results, again.skipped_finished) == (3, 0, 3)


def test_a_truncated_line_is_reported_at_its_own_end(tmp_path):
    # Cut short after a non-ASCII value: the column counts characters of this line, and the
    # line's end is its last column + 1 (not "column 1" of a line after the newline).
    cut = '{"id": "cut", "input": "héllo wörld", "trace": {"steps": ['
    _, results = run_cases(tmp_path, [json.dumps(good(0)).encode(), cut.encode(), cut.encode() + b"\r"])
    errors = [r["error"]["message"] for r in results if r["status"] == "invalid_input"]
    assert errors == [f"invalid JSON: Expecting value at column {len(cut) + 1}; the line ends early (it looks truncated)"] * 2


def test_a_truncated_line_of_another_format_is_reported_at_its_own_end(tmp_path):
    from tracejudge.stages.extract.common import decode_line
    from tracejudge.stages.extract.errors import AdapterError
    from tracejudge.stages.load import read_jsonl

    cut = '{"messages": [{"role": "user", "content": "ça"}'
    (tmp_path / "m.jsonl").write_bytes(cut.encode() + b"\n")
    raw = next(read_jsonl(tmp_path / "m.jsonl"))
    try:
        decode_line(raw.payload)
    except AdapterError as exc:
        assert f"at column {len(cut) + 1}" in str(exc)
    else:
        raise AssertionError("a truncated line decoded")


def test_what_a_strict_reader_refuses_is_one_invalid_case_each_naming_line_and_field(tmp_path):
    # pydantic's lax mode took `true` as 1, an empty id, an id holding NUL, and 1e400 (infinity) in metadata,
    # which results.jsonl then carried as null and summary.json as `Infinity`.
    lines = [
        json.dumps(good(0)).encode(),
        json.dumps({**good(1), "trace": {**good(1)["trace"], "user_messages": [{"step": True, "content": "hi"}]}}).encode(),
        json.dumps({**good(2), "id": ""}).encode(),
        json.dumps({**good(3), "id": "a\u0000b"}).encode(),
        json.dumps(good(4))[:-1].encode() + b', "metadata": {"region": {"max": 1e400}}}',
        json.dumps({**good(5), "trace": {**good(5)["trace"], "usage": {"requests": False}}}).encode(),
        json.dumps(good(6)).encode(),
    ]
    expected = {
        2: ("trace.user_messages[0].step", "trace.user_messages[0].step: Input should be an integer, not a boolean (got true)"),
        3: ("id", "id: the case id is empty or only whitespace: give every case a distinct, non-empty id"),
        4: ("id", "id: the case id holds a NUL character (\\u0000), which file names and XML cannot carry"),
        5: ("metadata.region", "metadata.region: inf at max is not a finite number (a JSON number beyond ±1.8e308, or NaN/Infinity); "
                               "write it as a string to keep it"),
        6: ("trace.usage.requests", "trace.usage.requests: Input should be an integer, not a boolean (got false)"),
    }
    for processes in (1, 2):  # decoded in this process, and in worker processes
        summary, results = run_cases(tmp_path / str(processes), lines, run_section={"processes": processes})
        assert summary["status"] == {"invalid_input": 5, "ok": 2}
        data = str(tmp_path / str(processes) / "cases.jsonl")
        bad = {r["error"]["line"]: r for r in results if r["status"] == "invalid_input"}
        assert {line: (r["error"]["field"], r["error"]["message"]) for line, r in bad.items()} == expected
        assert all(r["error"]["file"] == data for r in bad.values())
        # An id the reader refused does not name the result: its place does.
        assert [bad[line]["case_id"] for line in (2, 3, 4, 5, 6)] == ["c1", f"{data}:3", f"{data}:4", "c4", "c5"]
        assert "Infinity" not in (tmp_path / str(processes) / "run" / "summary.json").read_text()
        config = validate_config({"dataset": {"path": data, "format": "native"}, "metrics": [{"type": "ToolCalls", "arguments": "exact"}],
                                  "run": {"dir": str(tmp_path / str(processes) / "run"), "processes": processes}})
        again = anyio.run(run, config)
        assert (again.new_results, again.skipped_finished) == (0, 7)  # a resume redoes none of them


def test_a_blank_id_a_blank_tool_name_and_a_negative_spend_are_each_one_invalid_case(tmp_path):
    # All three were accepted: a "   " id keyed results, a call named "" matched nothing and named nothing,
    # and `cost_usd: -3` scored 1.0 on Cost. Arguments are mappings, so the msgspec fast path reads these lines too.
    def case(i: int, name: str = "get_order", **usage: float) -> dict:
        trace = {"steps": [{"tool_calls": [{"name": name, "arguments": {"order_id": i}}]}], "usage": {"cost_usd": 0.01, **usage}}
        return {"id": f"c{i}", "expected_tool_calls": [{"name": "get_order", "arguments": {"order_id": i}}], "trace": trace}

    lines = [json.dumps(x).encode() for x in (
        case(0), {**case(1), "id": " \t "}, case(2, name=""), case(3, name="  "), case(4, cost_usd=-3),
        case(5, input_tokens=-1), {**case(6), "expected_tool_calls": [{"name": ""}]}, case(7))]
    expected = {
        2: ("id", "id: the case id is empty or only whitespace: give every case a distinct, non-empty id"),
        3: ("trace.steps[0].tool_calls[0].name", "trace.steps[0].tool_calls[0].name: the tool name is empty or only whitespace"),
        4: ("trace.steps[0].tool_calls[0].name", "trace.steps[0].tool_calls[0].name: the tool name is empty or only whitespace"),
        5: ("trace.usage.cost_usd", "trace.usage.cost_usd: Input should be greater than or equal to 0"),
        6: ("trace.usage.input_tokens", "trace.usage.input_tokens: Input should be greater than or equal to 0"),
        7: ("expected_tool_calls[0].name", "expected_tool_calls[0].name: the tool name is empty or only whitespace"),
    }
    for processes in (1, 2):  # decoded in this process, and in worker processes
        summary, results = run_cases(tmp_path / str(processes), lines, run_section={"processes": processes},
                                     metrics=[{"type": "ToolCalls"}, {"type": "Cost", "max_usd": 1.0}])
        assert summary["status"] == {"invalid_input": 6, "ok": 2}
        bad = {r["error"]["line"]: r for r in results if r["status"] == "invalid_input"}
        assert {line: (r["error"]["field"], r["error"]["message"]) for line, r in bad.items()} == expected


def test_a_typo_of_a_required_key_names_the_typo_and_the_key_it_meant(tmp_path):
    # `{"nam": …}` in a tool call was reported as `name: Field required`, which never showed the typo.
    lines = [json.dumps({"id": "c0", "trace": {"steps": [{"tool_calls": [{"nam": "get_order"}]}]}}).encode(),
             json.dumps({"id": "c1", "expected_tool_calls": [{"nmae": "get_order"}], "trace": {"steps": []}}).encode()]
    _, results = run_cases(tmp_path, lines)
    got = {r["case_id"]: (r["error"]["field"], r["error"]["message"]) for r in results}
    assert got["c0"][0] == "trace.steps[0].tool_calls[0].nam"
    assert got["c0"][1].startswith("trace.steps[0].tool_calls[0].nam: unknown key `nam`; did you mean name? (required key `name` is missing)")
    assert got["c1"][1].startswith("expected_tool_calls[0].nmae: unknown key `nmae`; did you mean name? (required key `name` is missing)")


def test_an_id_another_format_gives_empty_or_with_nul_is_one_invalid_case(tmp_path):
    def record(cid: str) -> dict:
        return {"id": cid, "messages": [{"role": "user", "content": "hi"}], "expected_tool_calls": []}

    data = tmp_path / "chats.jsonl"
    data.write_text("".join(json.dumps(record(c)) + "\n" for c in ["a", "", "b\u0000", "c"]))
    config = validate_config({"dataset": {"path": str(data), "format": "openai-messages"},
                              "metrics": [{"type": "ToolCalls"}], "run": {"dir": str(tmp_path / "run")}})
    anyio.run(run, config)
    rows = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [(r["case_id"], r["status"], (r["error"] or {}).get("field")) for r in rows] == [
        ("a", "ok", None), (f"{data}:2", "invalid_input", "id"), (f"{data}:3", "invalid_input", "id"), ("c", "ok", None)]


def test_a_user_message_without_content_is_one_invalid_case_naming_the_field(tmp_path):
    # A user message holds only `step` and `content`: one without content said nothing, yet scored as a turn the judge saw
    # empty (`User 2: `). `null` stays accepted: what `tracejudge extract` writes for a format that recorded a turn without text.
    trace = good(1)["trace"]
    lines = [
        json.dumps(good(0)).encode(),
        json.dumps({**good(1), "trace": {**trace, "user_messages": [{"step": 0, "content": "hi"}, {"step": 1}]}}).encode(),
        json.dumps({**good(2), "trace": {**trace, "user_messages": [{"step": 0, "content": None}]}}).encode(),
    ]
    for processes in (1, 2):  # decoded in this process, and in worker processes
        summary, results = run_cases(tmp_path / str(processes), lines, run_section={"processes": processes})
        assert summary["status"] == {"invalid_input": 1, "ok": 2}
        bad = [r for r in results if r["status"] == "invalid_input"]
        assert [(r["case_id"], r["error"]["file"], r["error"]["line"], r["error"]["field"], r["error"]["message"]) for r in bad] == [
            ("c1", str(tmp_path / str(processes) / "cases.jsonl"), 2, "trace.user_messages[1].content",
             "trace.user_messages[1].content: Field required")]


def test_a_tool_name_holding_nul_is_refused_naming_file_line_and_field(tmp_path):
    # Every reader builds its calls through the same record types, and the fast decoder hands such a name to them.
    called = {**good(1), "id": "called", "trace": {"steps": [{"tool_calls": [{"name": "a\u0000b"}]}]}}
    expected = {**good(2), "id": "expected", "expected_tool_calls": [{"name": "get\u0000order"}]}
    lines = [json.dumps(good(0)).encode(), json.dumps(called).encode(), json.dumps(expected).encode()]
    nul = "the tool name holds a NUL character (\\u0000), which XML and terminals cannot carry"
    _, results = run_cases(tmp_path, lines)
    assert [r["status"] for r in results] == ["ok", "invalid_input", "invalid_input"]
    assert [(r["error"]["line"], r["error"]["field"], r["error"]["message"]) for r in results[1:]] == [
        (2, "trace.steps[0].tool_calls[0].name", f"trace.steps[0].tool_calls[0].name: {nul}"),
        (3, "expected_tool_calls[0].name", f"expected_tool_calls[0].name: {nul}")]
    assert all(r["error"]["file"] == str(tmp_path / "cases.jsonl") for r in results[1:])


def test_an_id_with_a_lone_surrogate_is_not_the_id_spelled_with_a_backslash(tmp_path):
    # `"\udc80"` (an escape: a lone surrogate, refused) and `"\\udc80"` (a backslash and five characters: a fine id) are
    # two cases. The refused one's result was filed under its escaped id, the other's very text: whichever came second
    # was called a duplicate of the first, and a valid case went unscored.
    lone = b'{"id": "\\udc80", "trace": {"steps": []}}'
    literal = json.dumps({**good(1), "id": "\\udc80"}).encode()
    assert json.loads(literal)["id"] == "\\udc80" and json.loads(lone)["id"] == "\udc80"
    for name, lines in (("lone-first", [lone, literal]), ("literal-first", [literal, lone])):
        _, results = run_cases(tmp_path / name, lines)
        by_line = {r["error"]["line"] if r["error"] else lines.index(literal) + 1: r for r in results}
        refused, scored = by_line[lines.index(lone) + 1], by_line[lines.index(literal) + 1]
        assert scored["case_id"] == "\\udc80" and scored["status"] == "ok", results
        assert refused["status"] == "invalid_input" and "lone surrogate escape \\udc80" in refused["error"]["message"], results
        assert refused["case_id"] == f"{tmp_path / name / 'cases.jsonl'}:{lines.index(lone) + 1}", results
        assert "duplicate" not in refused["error"]["message"]


def test_an_escaped_lone_surrogate_names_its_line_field_and_column(tmp_path, monkeypatch):
    # `json` decodes `"\ud800"` (half of a UTF-16 pair) where pydantic refuses it: the line was "invalid JSON" and no more.
    from tracejudge.engine.executors import processes as processes_mod

    monkeypatch.setattr(processes_mod, "INLINE_RECORDS", 0)  # with `processes: 2`, every record goes to the worker processes
    monkeypatch.setattr(processes_mod, "INLINE_BYTES", 0)
    lines = [json.dumps(good(i)).encode() for i in range(200)]
    lines[5] = b'{"id": "s1", "trace": {"output": "\\ud800"}}'
    lines[150] = b'{"id": "s2", "trace": {"steps": [{"thought": "a \\\\ud800 \\ud83d\\ude00"}, {"thought": "x\\udc00"}]}}'
    half = "(half of a UTF-16 pair, no character on its own)"
    first, second = lines[5].index(b"\\ud800") + 1, lines[150].index(b"x\\udc00") + 2  # 1-based columns of the escapes
    want = [("s1", 6, "trace.output", f"invalid JSON: trace.output: lone surrogate escape \\ud800 {half} at column {first}"),
            ("s2", 151, "trace.steps[1].thought",
             f"invalid JSON: trace.steps[1].thought: lone surrogate escape \\udc00 {half} at column {second}")]
    for processes in (1, 2):
        summary, results = run_cases(tmp_path / str(processes), lines, run_section={"processes": processes})
        bad = [r for r in results if r["status"] == "invalid_input"]
        assert [(r["case_id"], r["error"]["line"], r["error"]["field"], r["error"]["message"]) for r in bad] == want
        assert all(r["error"]["file"] == str(tmp_path / str(processes) / "cases.jsonl") for r in bad)


def test_the_field_holding_unwritable_text_is_found_where_it_sits() -> None:
    from tracejudge.core.records import Score
    from tracejudge.core.utf8 import unencodable_at

    assert unencodable_at({"tags": ["a", "b"], "metadata": {"k": [1, {"x": "fine"}]}}) is None
    assert unencodable_at({"tags": ["a", "b\udc80"]}) == "tags.1"
    assert unencodable_at({"metadata": {"k": [1, {"x": "\ud800"}]}}) == "metadata.k.1.x"
    assert unencodable_at({"metadata": {"bad\ud800key": 1}}) == "metadata.bad\\ud800key"  # (escaped: the path is written too)
    scores = {"Contains": Score(value=1.0, reason="ok"), "m": Score(value=0.0, reason="fine", details={"why": "\udfff"})}
    assert unencodable_at({"scores": scores}) == "scores.m.details.why"
    assert unencodable_at("\ud800") == "(text)" and unencodable_at(5) is None


def test_extract_names_the_field_holding_text_it_cannot_write(tmp_path):
    import json as _json
    import subprocess
    import sys

    # (a tag: text of a message is read as U+FFFD, `test_lone_surrogate_formats`; a label of the result is refused)
    rows = [{"id": "a", "tags": ["fine"], "messages": [{"role": "user", "content": "hi"}]},
            {"id": "b", "tags": ["bad\ud83d"], "messages": [{"role": "user", "content": "hi"}]}]
    (tmp_path / "chats.jsonl").write_text("\n".join(_json.dumps(r) for r in rows) + "\n")
    (tmp_path / "c.yaml").write_text("dataset: {path: chats.jsonl, format: openai-messages}\nmetrics: [{type: ToolCalls}]\n")
    out = _forkserver.run([sys.executable, "-m", "tracejudge", "extract", "c.yaml", "-o", "out.jsonl"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    line = next(x for x in out.stderr.splitlines() if x.startswith("invalid input"))
    assert line.startswith(f"invalid input {tmp_path / 'chats.jsonl'}:2: ") and "holds text that UTF-8 cannot encode" in line, line
    assert line.split(":2: ", 1)[1].split(" (b)")[0] == "tags.0", line
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 1


def test_extract_names_an_unreadable_record_by_its_place_once(tmp_path):
    import subprocess
    import sys

    (tmp_path / "e.jsonl").write_text('{"id":"a","trace":{"steps":[]}}\n{bad\n')
    (tmp_path / "c.yaml").write_text("dataset: {path: e.jsonl}\n")
    out = _forkserver.run([sys.executable, "-m", "tracejudge", "extract", "c.yaml", "-o", "out.jsonl"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    line = next(x for x in out.stderr.splitlines() if x.startswith("invalid input"))
    # Its id is its place (it has no readable one): "invalid input F:2 (F:2): …" said it twice.
    assert line == f"invalid input {tmp_path / 'e.jsonl'}:2: invalid JSON: Expecting property name enclosed in double quotes at column 2", line
    # A message-list format names such a record by its file's name: that is its place too, named once.
    (tmp_path / "om.jsonl").write_text('{"id":"a","messages":[{"role":"user","content":"hi"}]}\n{bad\n')
    (tmp_path / "om.yaml").write_text("dataset: {path: om.jsonl, format: openai-messages}\n")
    out = _forkserver.run([sys.executable, "-m", "tracejudge", "extract", "om.yaml", "-o", "om.out.jsonl"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    line = next(x for x in out.stderr.splitlines() if x.startswith("invalid input"))
    assert "(om.jsonl:2)" not in line and line.startswith(f"invalid input {tmp_path / 'om.jsonl'}:2: "), line

