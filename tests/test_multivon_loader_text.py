"""multivon JSONL read as multivon-eval's own loader reads it (`dataset.load_jsonl`, `case_manifest.case_from_dict`).

Each file is written, then loaded by multivon-eval itself (when installed) and by the `multivon` format: a line its
loader skips as blank (only a no-break space, U+2028) is no case here either; a line starting with a byte-order mark,
which it refuses, is that line's error; text it loads that no case can hold as it is (an empty tool name, half a
UTF-16 pair) is read as a name no tool has and U+FFFD, so `ToolCallAccuracy` gives multivon's own verdict on it.
A case id of only white space or holding half a pair, which it loads too, stays refused (README's differences).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core.records import Case
from tracejudge.core.registry import build_metric, format_for
from tracejudge.stages.extract import extract_record

TRACE = [{"thought": "t", "tool_calls": [{"name": "", "arguments": {}}, {"name": "search", "arguments": {}}], "output": "o"}]


def _ours(path: Path) -> list[tuple[int, Case | str]]:
    fmt = format_for("multivon")
    dataset = type("D", (), {"path": path, "tasks": None, "limit": None, "options": {}})()
    out: list[tuple[int, Case | str]] = []
    for raw in fmt.read(dataset):
        got = extract_record(raw, fmt, fmt.prepare(dataset))
        out.append((raw.line, got if isinstance(got, Case) else got[1].message))
    return out


def _upstream(path: Path) -> list[Any] | str:
    loader = pytest.importorskip("multivon_eval.dataset", reason="multivon-eval (the peers extra) is not installed")
    try:
        return loader.load_jsonl(str(path))
    except ValueError as exc:
        return str(exc)


def test_lines_of_only_unicode_white_space_are_blank_as_multivon_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"input": "a", "case_id": "a"}\n\u00a0\n\u2028\n \u3000\t\n{"input": "b", "case_id": "b"}\n'
                    '\u00a0{"input": "c", "case_id": "c"}\u2028 \n', encoding="utf-8")  # (space around an object: stripped too)
    assert [c.case_id for c in _upstream(path)] == ["a", "b", "c"]
    assert [(line, c.id) for line, c in _ours(path)] == [(1, "a"), (5, "b"), (6, "c")]


def test_a_line_starting_with_a_byte_order_mark_is_its_error_where_multivon_refuses_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"input": "a", "case_id": "a"}\n{"input": "b", "case_id": "b"}\n\xef\xbb\xbf{"input": "c"}\n')
    assert "Unexpected UTF-8 BOM" in _upstream(path)
    got = _ours(path)
    assert [line for line, _ in got] == [1, 2, 3] and isinstance(got[1][1], Case)
    assert all(isinstance(why, str) and why.startswith("line starts with a UTF-8 byte-order mark") for _, why in (got[0], got[2]))
    path.write_bytes(b'{"input": "a", "case_id": "a"}\n\xef\xbb\xbf\n')  # (a mark on a line otherwise blank: refused there too)
    assert isinstance(_upstream(path), str)
    assert [(line, isinstance(c, Case)) for line, c in _ours(path)] == [(1, True), (2, False)]


def test_text_multivon_loads_gives_its_verdicts(tmp_path: Path) -> None:
    records = [
        {"input": "x", "case_id": "blank", "agent_trace": TRACE, "expected_tool_calls": ["", "search"]},
        {"input": "x", "case_id": "blank-missed", "agent_trace": TRACE, "expected_tool_calls": [" ", "search"]},
        {"input": "a\ud800b", "case_id": "half", "agent_trace": [{"tool_calls": [{"name": "s\udc00", "arguments": {"q": "\ud800"}}]}],
         "expected_tool_calls": ["s\udc00"]},
    ]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")  # (json.dumps escapes each half)
    loaded = _upstream(path)
    assert not isinstance(loaded, str), loaded
    from multivon_eval.evaluators.agent import ToolCallAccuracy as Upstream

    ours = {c.id: c for _, c in _ours(path)}
    metric = build_metric({"type": "ToolCallAccuracy"})
    for case in loaded:
        mine = metric.evaluate(ours[case.case_id])
        theirs = Upstream().evaluate(case, "o")
        assert (mine.value, mine.passed) == (theirs.score, theirs.passed), case.case_id
    assert [c.name for c in ours["blank"].trace.steps[0].tool_calls] == ['(blank tool name "")', "search"]
    assert ours["half"].input == "a\ufffdb" and ours["half"].trace.steps[0].tool_calls[0].arguments == {"q": "\ufffd"}


def test_a_case_id_multivon_loads_but_no_result_can_be_filed_under_stays_refused(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"input": "x", "case_id": "  "}) + "\n", encoding="utf-8")
    assert [c.case_id for c in _upstream(path)] == ["  "]
    ((_, why),) = _ours(path)
    assert isinstance(why, str) and "only whitespace" in why
